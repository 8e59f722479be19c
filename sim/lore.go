package sim

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
)

// Project is the project the simulation records into.
const Project = "sim"

// APILore is Lore over lore's NATS API (group "learning").
type APILore struct {
	C       *api.Client
	Project string
}

func (a APILore) call(ctx context.Context, name string, now time.Time, args, out any) error {
	req, err := api.NewRequest(args)
	if err != nil {
		return err
	}
	req.Project, req.Source, req.Now = a.Project, "sim", &now
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return a.C.Call(cctx, "learning", name, req, out)
}

// Record calls learning.record_outcome: a success takes 3 minutes without
// errors (scored helpful); a failure takes 35 minutes with one error
// (scored harmful). The strategy is named only in the decomposition text.
func (a APILore) Record(ctx context.Context, o Outcome) error {
	dur, errs := 180_000, 0
	if !o.Success {
		dur, errs = 35*60_000, 1
	}
	return a.call(ctx, "record_outcome", o.Time, map[string]any{
		"bead_id": o.BeadID, "duration_ms": dur, "error_count": errs, "retry_count": o.Attempt - 1,
		"success": o.Success, "decomposition": o.Decomposition, "time": o.Time.Format(time.RFC3339Nano)}, nil)
}

// State reads learning.patterns (maturity of every pattern, and which are
// anti-patterns) and learning.decomposition_prompt (what a loop is injected
// with: proven and excluded patterns) at now.
func (a APILore) State(ctx context.Context, now time.Time) (State, error) {
	var ps []struct {
		Content string `json:"content"`
		PatternState
	}
	if err := a.call(ctx, "patterns", now, nil, &ps); err != nil {
		return State{}, err
	}
	var dp struct {
		Proven           []string `json:"proven"`
		Excluded         []string `json:"excluded"`
		Tentative        []string `json:"tentative"`
		ExplorationShare float64  `json:"exploration_share"`
	}
	if err := a.call(ctx, "decomposition_prompt", now, nil, &dp); err != nil {
		return State{}, err
	}
	st := State{Patterns: map[string]PatternState{}, Guidance: Guidance{Proven: set(dp.Proven), Excluded: set(dp.Excluded),
		Anti: map[string]bool{}, Tentative: set(dp.Tentative), ExploreShare: dp.ExplorationShare}}
	for _, p := range ps {
		st.Patterns[p.Content] = p.PatternState
		if p.Inverted {
			st.Guidance.Anti[p.Content] = true
		}
	}
	return st, nil
}

// Configure sets lore's learning configuration (learning.configure) at a
// time: the evidence policy and, when set, the half-lives.
func (a APILore) Configure(ctx context.Context, c LoreConfig, at time.Time) error {
	ev := map[string]any{"policy": c.Policy}
	if c.ExplorationShare != nil {
		ev["exploration_share"] = *c.ExplorationShare
	}
	cfg := map[string]any{"evidence": ev}
	if c.HalfLifeDays > 0 {
		cfg["learning"] = map[string]any{"halfLifeDays": c.HalfLifeDays}
		cfg["maturity"] = map[string]any{"halfLifeDays": c.HalfLifeDays}
	}
	return a.call(ctx, "configure", at, map[string]any{"config": cfg}, nil)
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Local is a lore node embedded in this process on a temporary folder.
type Local struct {
	Lore APILore
	stop func()
}

// StartLocal starts an embedded lore (NATS, JetStream, Pebble, the API) on
// a fresh temporary folder under dir ("" for the system's); version is
// the API service's (SemVer, "" for the default).
func StartLocal(ctx context.Context, dir, version string) (*Local, error) {
	tmp, err := os.MkdirTemp(dir, "lore-sim-")
	if err != nil {
		return nil, err
	}
	fail := func(err error, undo ...func()) (*Local, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		os.RemoveAll(tmp)
		return nil, err
	}
	// no fsync: the folder is thrown away, and the simulation is about what
	// lore learns, not about durability
	n, err := node.Start(ctx, node.Config{DataDir: tmp, Embedded: node.EmbeddedOptions{Port: -1}, TickInterval: -1, NoSyncCommits: true})
	if err != nil {
		return fail(fmt.Errorf("start lore: %w", err))
	}
	svc, err := n.Serve(api.Options{Version: version})
	if err != nil {
		return fail(fmt.Errorf("serve: %w", err), n.Close)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	nc, err := nats.Connect(n.ClientURL(), nats.Name("lore-sim"))
	if err != nil {
		return fail(err, n.Close, func() { _ = svc.Stop() }, func() { cancel(); <-done })
	}
	stop := func() {
		nc.Close()
		cancel()
		<-done
		_ = svc.Stop()
		n.Close()
		os.RemoveAll(tmp)
	}
	return &Local{Lore: APILore{C: api.NewClient(nc), Project: Project}, stop: stop}, nil
}

// Close stops the node and removes its folder.
func (l *Local) Close() { l.stop() }
