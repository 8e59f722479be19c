package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

// PoolBase is the pool size every `lore bench --pool N` figure is compared
// with, measured in the same run.
const PoolBase = 100

// PoolMax is the largest pool: knowledge.swarm_max_entries' upper bound.
const PoolMax = 10_000

// PoolProject is the project holding the pool.
const PoolProject = "pool"

// poolPromoteDays is the pool's auto_promote_days: its upper bound, so no
// seeded lesson (dated from Epoch) is old enough to be promoted by age.
const poolPromoteDays = 3650

// ErrPoolSize is returned by Pool for a size outside [PoolBase, PoolMax].
var ErrPoolSize = errors.New("lore: pool size out of range")

// PoolOptions size `lore bench --pool N`.
type PoolOptions struct {
	// N swarm lessons and N/2 hive lessons in PoolProject (the caps raised
	// to hold them), and N registry patterns.
	N int
	// Queries: calls per operation and size (default 200).
	Queries       int
	Seed          int64
	NoSyncCommits bool
	// Memory: each node's cache budgets (0: the defaults).
	Memory node.MemoryBudgets
	// Dir holds the nodes' data (a temp folder, removed, when empty).
	Dir  string
	Logf func(format string, args ...any)
}

// PoolReport holds the operations measured on one large project pool and
// on a pool of PoolBase in the same run.
type PoolReport struct {
	N    int `json:"n"`
	Base int `json:"base_n"`
	// Sizes describes each node as measured: the pool it held.
	Sizes []PoolSize `json:"sizes"`
	// Ops: one entry per operation, in a fixed order.
	Ops []PoolOp `json:"ops"`
	// PeakRSSBytes is the bench process's peak resident set (both nodes).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// PoolSize is one node of a pool run: its size and what it held once
// seeded (active entries counted by knowledge.stats).
type PoolSize struct {
	N             int     `json:"n"`
	SwarmEntries  int     `json:"swarm_entries"`
	HiveEntries   int     `json:"hive_entries"`
	Patterns      int     `json:"patterns"`
	SeedSeconds   float64 `json:"seed_s"`
	InjectShowing int     `json:"inject_candidates"` // entries a knowledge.inject considered
}

// PoolOp is one operation at N next to the same operation at PoolBase:
// Ratio = figure at N ÷ figure at PoolBase (1: nothing grows with the pool).
type PoolOp struct {
	Op string `json:"op"`
	// Path: "nats" (the API through lore's Go client, as an agent calls
	// it) or "in-process" (the endpoint called on the node's live view).
	Path string `json:"path"`
	Latency
	Base     Latency `json:"base"`
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
	// NotProjected and BaseNotProjected count the calls (at N, at
	// PoolBase) whose reply came before their events were folded: the
	// API's wait for the fold ran out (their time is the wait).
	NotProjected     int `json:"not_projected"`
	BaseNotProjected int `json:"base_not_projected"`
}

// errNotProjected is a command reply that came before its events were
// folded.
var errNotProjected = errors.New("replied before its events were projected (the API's wait for the fold ran out)")

// poolOps are the operations of a pool run, in the order they run on
// each node.
var poolOps = []struct{ op, path string }{
	{"knowledge.inject", "in-process"},
	{"knowledge.inject", "nats"},
	{"patterns.inject", "in-process"},
	{"patterns.inject", "nats"},
	{"phase.complete", "nats"},
	{"knowledge.add", "nats"},
	{"knowledge.add+inject", "nats"},
}

// Pool runs `lore bench --pool N`: on a fresh node per size (PoolBase,
// then N; the hive is shared by every project, so one node holds one
// pool), it configures the caps to hold the pool, seeds N swarm lessons
// and N/2 hive lessons in PoolProject and N registry patterns, then
// times, one call after another: knowledge.inject and patterns.inject
// (in-process and over NATS), phase.complete with nothing to archive,
// knowledge.add acknowledged (replied once folded, a new entry) and
// knowledge.add then the knowledge.inject that shows the new lesson.
func Pool(ctx context.Context, o PoolOptions) (*PoolReport, error) {
	if o.N < PoolBase || o.N > PoolMax {
		return nil, fmt.Errorf("%w: --pool %d: must be in [%d, %d] (knowledge.swarm_max_entries' range)", ErrPoolSize, o.N, PoolBase, PoolMax)
	}
	if o.Queries <= 0 {
		o.Queries = 200
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "lore-bench-pool-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep := &PoolReport{N: o.N, Base: PoolBase}
	var figures []map[string]Latency
	var late []map[string]int
	for _, n := range []int{PoolBase, o.N} {
		size, lat, notProjected, err := poolRun(ctx, o, n, filepath.Join(dir, fmt.Sprintf("pool-%d", n)))
		if err != nil {
			return nil, fmt.Errorf("pool of %d: %w", n, err)
		}
		rep.Sizes = append(rep.Sizes, size)
		figures, late = append(figures, lat), append(late, notProjected)
	}
	for _, p := range poolOps {
		k := p.op + "/" + p.path
		op := PoolOp{Op: p.op, Path: p.path, Latency: figures[1][k], Base: figures[0][k],
			NotProjected: late[1][k], BaseNotProjected: late[0][k]}
		if op.Base.P50us > 0 && op.Base.P99us > 0 {
			op.P50Ratio, op.P99Ratio = op.P50us/op.Base.P50us, op.P99us/op.Base.P99us
		}
		rep.Ops = append(rep.Ops, op)
	}
	rep.PeakRSSBytes = PeakRSS()
	return rep, nil
}

// poolRun measures every operation on a fresh node holding a pool of n.
func poolRun(ctx context.Context, o PoolOptions, n int, dir string) (PoolSize, map[string]Latency, map[string]int, error) {
	size := PoolSize{N: n}
	nd, err := node.Start(ctx, node.Config{DataDir: dir, Embedded: node.EmbeddedOptions{Port: -1},
		TickInterval: -1, NoSyncCommits: o.NoSyncCommits, Memory: o.Memory, NatsOptions: []nats.Option{nats.MaxPingsOutstanding(100)}})
	if err != nil {
		return size, nil, nil, err
	}
	defer func() { nd.Close(); _ = os.RemoveAll(dir) }()
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = nd.Run(rctx) }()
	defer func() { stop(); wg.Wait() }()
	svc, err := nd.Serve(api.Options{})
	if err != nil {
		return size, nil, nil, err
	}
	defer func() { _ = svc.Stop() }()
	nc, err := nats.Connect(nd.ClientURL())
	if err != nil {
		return size, nil, nil, err
	}
	defer nc.Close()
	cl := api.NewClient(nc)
	call := func(group, name, project string, args any, noWait bool) ([]byte, error) {
		raw, err := cl.CallRaw(ctx, group, name, api.Request{Args: marshal(args), Project: project, Source: "bench", NoWait: noWait})
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", group, name, err)
		}
		return raw, nil
	}

	o.Logf("pool of %d: %d swarm and %d hive lessons in project %q, %d registry patterns", n, n, n/2, PoolProject, n)
	start := time.Now()
	// The pool stays as seeded while it is measured: no entry ages out
	// (default_max_phases) and none is old enough to be promoted to the
	// hive by age (auto_promote_days at its maximum: the seeds are dated
	// from Epoch). Without the latter, the first phase.complete promoted
	// every swarm lesson, filling the hive to its cap.
	if _, err := call("knowledge", "configure", "", map[string]any{"config": map[string]any{
		"swarm_max_entries": n, "hive_max_entries": n, "default_max_phases": 1 << 30,
		"auto_promote_days": poolPromoteDays}}, false); err != nil {
		return size, nil, nil, err
	}
	if err := appendSeq(ctx, nd.Appender, PoolSeeds(o.Seed, n), 1000); err != nil {
		return size, nil, nil, fmt.Errorf("seed the pool: %w", err)
	}
	if err := appendSeq(ctx, nd.Appender, PatternSeeds(o.Seed, n), 20); err != nil {
		return size, nil, nil, fmt.Errorf("seed patterns: %w", err)
	}
	if err := caughtUp(ctx, nd); err != nil {
		return size, nil, nil, err
	}
	size.SeedSeconds = time.Since(start).Seconds()
	// counts are the pool's entries by tier and status.
	counts := func() (string, error) {
		raw, err := call("knowledge", "stats", PoolProject, map[string]any{}, false)
		if err != nil {
			return "", err
		}
		var stats struct {
			Swarm map[string]int `json:"swarm"`
			Hive  map[string]int `json:"hive"`
		}
		if err := json.Unmarshal(raw, &stats); err != nil {
			return "", fmt.Errorf("knowledge.stats reply: %w", err)
		}
		size.SwarmEntries, size.HiveEntries = kept(stats.Swarm), kept(stats.Hive)
		return fmt.Sprintf("swarm %v, hive %v", stats.Swarm, stats.Hive), nil
	}
	seeded, err := counts()
	if err != nil {
		return size, nil, nil, err
	}
	size.Patterns = n

	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x706f))
	lat, late := map[string]Latency{}, map[string]int{}
	// tolerate counts a reply that came before its fold (the call is
	// timed all the same) instead of stopping the run.
	tolerate := func(key string, err error) error {
		if errors.Is(err, errNotProjected) {
			late[key]++
			return nil
		}
		return err
	}
	q := o.Queries
	kinject, _ := app.Lookup("knowledge", "inject")
	pinject, _ := app.Lookup("patterns", "inject")
	inProcess := func(ep app.Endpoint, args func() []byte, project string) (Latency, error) {
		ds := make([]time.Duration, 0, q)
		for range q {
			if err := ctx.Err(); err != nil {
				return Latency{}, err
			}
			req := app.Request{Now: time.Now(), Project: project, Source: "bench", Args: args()}
			t0 := time.Now()
			var err error
			if ep.Query != nil {
				_, err = ep.Query(ctx, nd.Live(), req)
			} else {
				_, _, err = ep.Command(ctx, nd.Live(), req)
			}
			ds = append(ds, time.Since(t0))
			if err != nil {
				return Latency{}, fmt.Errorf("%s.%s in-process: %w", ep.Group, ep.Name, err)
			}
		}
		return Summarise(ds), nil
	}
	overNATS := func(fn func(i int) error) (Latency, error) {
		ds := make([]time.Duration, 0, q)
		for i := range q {
			if err := ctx.Err(); err != nil {
				return Latency{}, err
			}
			t0 := time.Now()
			if err := fn(i); err != nil {
				return Latency{}, err
			}
			ds = append(ds, time.Since(t0))
		}
		return Summarise(ds), nil
	}
	ktask := func() []byte { return marshal(map[string]any{"task": KnowledgeTask(rng), "headroom": 0.5}) }
	ptask := func() []byte {
		return marshal(map[string]any{"task": PatternTask(rng), "category": "debugging", "top_k": 5})
	}
	// How many entries an injection considers; the call waits for its
	// injection record to be folded, so the warm-up below sees the pool
	// as the measured calls do.
	var inj struct {
		Result struct {
			Candidates int `json:"candidates"`
		} `json:"result"`
	}
	raw, err := call("knowledge", "inject", PoolProject, map[string]any{"task": KnowledgeTask(rng), "headroom": 1.0}, false)
	if err != nil {
		return size, nil, nil, err
	}
	if err := json.Unmarshal(raw, &inj); err != nil {
		return size, nil, nil, fmt.Errorf("knowledge.inject reply: %w", err)
	}
	size.InjectShowing = inj.Result.Candidates
	// A round of warm-up calls, as a serving node has answered before.
	if _, err := inProcess(kinject, ktask, PoolProject); err != nil {
		return size, nil, nil, err
	}

	steps := []struct {
		key string
		run func() (Latency, error)
	}{
		{"knowledge.inject/in-process", func() (Latency, error) { return inProcess(kinject, ktask, PoolProject) }},
		{"knowledge.inject/nats", func() (Latency, error) {
			return overNATS(func(int) error {
				_, err := call("knowledge", "inject", PoolProject, map[string]any{"task": KnowledgeTask(rng), "headroom": 0.5}, true)
				return err
			})
		}},
		{"patterns.inject/in-process", func() (Latency, error) { return inProcess(pinject, ptask, events.DefaultProject) }},
		{"patterns.inject/nats", func() (Latency, error) {
			return overNATS(func(int) error {
				_, err := call("patterns", "inject", events.DefaultProject, map[string]any{"task": PatternTask(rng), "category": "debugging", "top_k": 5}, true)
				return err
			})
		}},
		{"phase.complete/nats", func() (Latency, error) {
			return overNATS(func(i int) error {
				raw, err := call("phase", "complete", PoolProject, map[string]any{"phase": i + 1}, false)
				if err != nil {
					return err
				}
				return tolerate("phase.complete/nats", projected("phase.complete", raw))
			})
		}},
		{"knowledge.add/nats", func() (Latency, error) {
			return overNATS(func(int) error {
				_, err := addLesson(call, rng)
				return tolerate("knowledge.add/nats", err)
			})
		}},
		{"knowledge.add+inject/nats", func() (Latency, error) {
			return overNATS(func(int) error {
				lesson, err := addLesson(call, rng)
				if err != nil {
					return err
				}
				raw, err := call("knowledge", "inject", PoolProject, map[string]any{"task": lesson.text, "headroom": 1.0}, true)
				if err != nil {
					return err
				}
				var shown struct {
					Result struct {
						Entries []shownEntry `json:"entries"`
					} `json:"result"`
				}
				if err := json.Unmarshal(raw, &shown); err != nil {
					return fmt.Errorf("knowledge.inject reply: %w", err)
				}
				if !slices.ContainsFunc(shown.Result.Entries, func(e shownEntry) bool { return e.ID == lesson.id }) {
					return fmt.Errorf("knowledge.inject right after knowledge.add does not show entry %s: %s", lesson.id, raw)
				}
				return nil
			})
		}},
	}
	for _, s := range steps {
		// Each operation starts on an idle node: what the previous one
		// appended without waiting (injection records) is folded first.
		if err := caughtUp(ctx, nd); err != nil {
			return size, nil, nil, err
		}
		o.Logf("pool of %d: %s (%d calls)", n, s.key, q)
		l, err := s.run()
		if err != nil {
			return size, nil, nil, err
		}
		lat[s.key] = l
		o.Logf("pool of %d: %s: p50 %.0f µs, p99 %.0f µs", n, s.key, l.P50us, l.P99us)
		if s.key == "phase.complete/nats" {
			// What was timed is a sweep with nothing to archive or
			// promote: the pool is as seeded.
			if err := caughtUp(ctx, nd); err != nil {
				return size, nil, nil, err
			}
			after, err := counts()
			if err != nil {
				return size, nil, nil, err
			}
			if after != seeded {
				return size, nil, nil, fmt.Errorf("phase.complete changed the pool (%s, seeded %s): it is measured with nothing to archive or promote", after, seeded)
			}
		}
	}
	return size, lat, late, nil
}

// caughtUp waits until the node's projector has folded its whole log.
func caughtUp(ctx context.Context, nd *node.Node) error {
	last, _, err := logState(ctx, nd)
	if err != nil {
		return err
	}
	return nd.Runtime.WaitFor(ctx, last)
}

// kept counts the entries of a knowledge.stats tier that a pool holds
// (every status but removed, archived and quarantined).
func kept(byStatus map[string]int) int {
	n := 0
	for s, c := range byStatus {
		if s != "removed" && s != "archived" && s != "quarantined" {
			n += c
		}
	}
	return n
}

// shownEntry is an entry of a knowledge.inject reply.
type shownEntry struct {
	ID string `json:"id"`
}

// addedLesson is a lesson knowledge.add stored as a new entry.
type addedLesson struct{ id, text string }

// addLesson submits a new lesson to PoolProject and checks the reply: folded
// (projected) and a new entry.
func addLesson(call func(group, name, project string, args any, noWait bool) ([]byte, error), rng *rand.Rand) (addedLesson, error) {
	text := Lesson(rng)
	raw, err := call("knowledge", "add", PoolProject, map[string]any{"lesson": text, "category": "tooling",
		"phase": 1, "confidence": 0.8}, false)
	if err != nil {
		return addedLesson{}, err
	}
	if err := projected("knowledge.add", raw); err != nil {
		return addedLesson{}, err
	}
	var reply struct {
		Result app.KnowledgeAddResult `json:"result"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return addedLesson{}, fmt.Errorf("knowledge.add reply: %w", err)
	}
	if reply.Result.Outcome != "added" {
		return addedLesson{}, fmt.Errorf("knowledge.add of %q: %s %s, want a new entry", text, reply.Result.Outcome, reply.Result.Reason)
	}
	return addedLesson{id: reply.Result.ID, text: text}, nil
}

// projected checks that a command's reply says its events are folded.
func projected(what string, raw []byte) error {
	var r api.CommandReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s reply: %w", what, err)
	}
	if !r.Projected {
		return fmt.Errorf("%s %w", what, errNotProjected)
	}
	return nil
}

// PoolSeeds streams the lessons of a pool of n: n swarm lessons, then n/2
// hive lessons, all submitted in PoolProject.
func PoolSeeds(seed int64, n int) iter.Seq2[*events.Event, error] {
	return func(yield func(*events.Event, error) bool) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x706c))
		for i := range n + n/2 {
			tier := ""
			if i >= n {
				tier = "hive"
			}
			conf := float64(5+rng.IntN(5)) / 10
			at := Epoch.Add(-time.Duration(n+n/2-i) * time.Second)
			ev, err := events.New("knowledge.submitted/v1", PoolProject, "bench", at,
				&events.KnowledgeSubmitted{Lesson: Lesson(rng), Category: categoriesK[rng.IntN(len(categoriesK))],
					Confidence: &conf, Source: "agent", Tier: tier, Tags: []string{word(rng)}})
			if err != nil {
				yield(nil, fmt.Errorf("pool lesson %d: %w", i, err))
				return
			}
			ev.ID = fmt.Sprintf("pool-%d-%d-%08d", seed, n, i)
			if !yield(ev, nil) {
				return
			}
		}
	}
}
