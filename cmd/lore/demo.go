package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/eventlog"
)

type demoOptions struct {
	loops, tasks int
	seed         uint64
	keep         bool
}

func init() { addCommand(newCmdDemo) }

func newCmdDemo(f *Factory) *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start an embedded lore, run concurrent simulated agent loops, print what lore learned",
		Long: `Start lore in this process (embedded NATS with JetStream, Pebble, the API) on a
temporary data folder, run several simulated agent loops at once that report
outcomes, errors, lessons and Ralph-loop iterations over four simulated months
(ending today, or at --now), then ask lore what it learned: what was recorded,
criterion weights, decomposition patterns by maturity and anti-patterns, the
knowledge block for a new task, the cross-loop context for a new loop and
whether that context made loops shorter. Every answer goes through the same
NATS API the CLI and other clients use, and is printed by the command named in
its heading (run it against your own "lore serve"). The output is the same for
the same seed and day; --json prints the raw results as one JSON object.`,
		Example: `  lore demo
  lore demo --json | jq .results.weights
  lore demo --loops 12 --tasks 60 --seed 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.loops < 1 || o.tasks < 1 {
				return fmt.Errorf("%w: --loops and --tasks must be >= 1", errBadInput)
			}
			return runDemo(cmd.Context(), f, o)
		},
	}
	cmd.Flags().IntVar(&o.loops, "loops", 6, "concurrent simulated loops")
	cmd.Flags().IntVar(&o.tasks, "tasks", 30, "tasks per loop")
	cmd.Flags().Uint64Var(&o.seed, "seed", 7, "random seed")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the data folder (printed) instead of removing it")
	declare(cmd.Flags(), rules{"loops": atLeast(1), "tasks": atLeast(1), "seed": atLeast(0)})
	return cmd
}

// demoStrategies have true success rates lore does not see; an outcome
// scores the criteria its strategy aims at.
var demoStrategies = []struct {
	text     string
	rate     float64
	criteria []string
}{
	{"Split by feature and keep tests alongside implementation", 0.92, []string{"type_safe", "tests_pass"}},
	{"We'll split by file type, one file per subtask", 0.2, []string{"small_diff"}},
	{"Split by layer (UI/logic/data) with maximize parallelization", 0.6, []string{"type_safe", "small_diff"}},
}

var demoLessons = []string{
	"Run tsc --noEmit before committing TypeScript changes to catch type errors early",
	"Add a null check before reading properties of user objects returned by the session API",
	"Use table-driven tests for validation functions so every edge case is listed",
	"Prefer stream.Readable.from(generator) over async iterators for backpressure",
	"Always run the database migrations in a transaction so a failure leaves no partial schema",
}

const (
	demoProject      = "web"
	demoRalphTask    = "Fix TypeScript type errors in user validation"
	demoRalphCat     = "debugging"
	demoKnowledgeFor = "fix type errors in the user validation module"
)

// demoQuery is one question asked of lore after the simulation: the
// endpoint (for --json) and the CLI command that prints it for people.
type demoQuery struct {
	key, title  string
	group, name string
	args        any
	cli         []string
}

var demoQueries = []demoQuery{
	{"stats", "What was recorded", "audit", "stats", nil, []string{"stats"}},
	{"weights", "Criterion weights (decayed implicit feedback)", "learning", "weights", nil, []string{"weights"}},
	{"decomposition_prompt", "Decomposition patterns by maturity, and anti-patterns", "learning", "decomposition_prompt", nil,
		[]string{"learning", "prompt"}},
	{"anti_patterns", "", "learning", "anti_patterns", nil, nil}, // in the prompt above; --json only
	{"knowledge_inject", "Knowledge an agent gets for a new task", "knowledge", "inject",
		map[string]any{"task": demoKnowledgeFor, "headroom": 0.7},
		[]string{"inject", "--task", demoKnowledgeFor, "--headroom", "0.7"}},
	{"patterns_inject", "Cross-loop context for a new Ralph loop", "patterns", "inject",
		map[string]any{"task": demoRalphTask, "category": demoRalphCat},
		[]string{"inject", "--task", demoRalphTask, "--category", demoRalphCat}},
	{"patterns_metrics", "Cross-loop effectiveness", "patterns", "metrics", nil, []string{"patterns", "metrics"}},
}

func runDemo(ctx context.Context, f *Factory, o demoOptions) error {
	end := time.Now().UTC().Truncate(24 * time.Hour)
	if f.NowFlag != "" {
		t, err := parseTime(f.NowFlag)
		if err != nil {
			return fmt.Errorf("%w: --now: %v", errBadInput, err)
		}
		end = t
	}
	start := end.AddDate(0, -4, 0)

	dir, err := os.MkdirTemp("", "lore-demo-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(f.Err, "data folder: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	n, err := node.Start(ctx, node.Config{DataDir: dir, Embedded: node.EmbeddedOptions{Port: -1}, TickInterval: -1})
	if err != nil {
		return err
	}
	defer n.Close()
	svc, err := n.Serve(api.Options{Version: version})
	if err != nil {
		return err
	}
	defer svc.Stop()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	defer func() { stop(); <-done }()

	nc, err := nats.Connect(n.ClientURL(), nats.Name("lore-demo"))
	if err != nil {
		return err
	}
	defer nc.Close()
	c := api.NewClient(nc)
	call := func(at time.Time, group, name string, args any) (json.RawMessage, error) {
		req, err := api.NewRequest(args)
		if err != nil {
			return nil, err
		}
		req.Project, req.Source, req.Now = demoProject, "demo", &at
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return c.CallRaw(cctx, group, name, req)
	}
	if err := demoSimulate(call, o, start, end); err != nil {
		return err
	}

	// The questions go through the CLI's own code, as a user's would.
	q := NewFactory(strings.NewReader(""), io.Discard, f.Err)
	defer q.Close()
	url, now := n.ClientURL(), end.Format(time.RFC3339)
	bind := func() { // what the flags below set, for q.Call
		q.NatsURL, q.Project, q.Source, q.NowFlag, q.AsOf, q.AtSeq, q.Timeout = url, demoProject, "demo", now, "", 0, 30*time.Second
	}
	flags := []string{"--nats", url, "--project", demoProject, "--source", "demo", "--now", now}
	if f.JSON {
		bind()
		return demoJSON(ctx, f, q, o, start, end)
	}
	fmt.Fprintf(f.Out, "lore demo: %d concurrent agent loops × %d tasks, %s → %s (seed %d)\n", o.loops, o.tasks,
		start.Format("2006-01-02"), end.Format("2006-01-02"), o.seed)
	fmt.Fprintf(f.Out, "Embedded NATS + JetStream + Pebble in a temporary folder; each answer below is what\n"+
		"the command in its heading prints (against your own lore: `lore serve`, then that command).\n")
	for _, dq := range demoQueries {
		if dq.cli == nil {
			continue
		}
		var out bytes.Buffer
		var err error
		if dq.key == "stats" {
			bind()
			err = demoStats(ctx, q, &out)
		} else {
			err = demoCLI(ctx, q, &out, append(append([]string{}, dq.cli...), flags...))
		}
		fmt.Fprintf(f.Out, "\n── %s  (lore %s)\n", dq.title, demoShellArgs(dq.cli))
		switch {
		case err != nil && isMissingEndpoint(err):
			fmt.Fprintln(f.Out, "(not available in this build)")
		case err != nil:
			fmt.Fprintf(f.Out, "error: %v\n", err)
		case strings.TrimSpace(out.String()) == "":
			fmt.Fprintln(f.Out, "(nothing yet)")
		default:
			fmt.Fprintln(f.Out, strings.TrimRight(out.String(), "\n"))
		}
	}
	fmt.Fprintln(f.Out, "\nRaw results: lore demo --json")
	return nil
}

// demoCLI runs a lore command in this process with q's streams and w as
// its output, and returns its error.
func demoCLI(ctx context.Context, q *Factory, w io.Writer, args []string) error {
	q.Out = w
	root := newRootCmd(q)
	root.SetArgs(args)
	root.SetIn(q.In)
	root.SetOut(w)
	root.SetErr(q.Err)
	return root.ExecuteContext(ctx)
}

// demoStats prints what `lore stats` prints without what depends on how the
// concurrent loops' appends interleaved (the hash chain, the last event's
// time), so the demo's output depends only on its seed and day.
func demoStats(ctx context.Context, q *Factory, w io.Writer) error {
	var raw json.RawMessage
	if err := q.Call(ctx, "audit", "stats", nil, &raw); err != nil {
		return err
	}
	var s eventlog.Stats
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	s.LastTime = ""
	for _, line := range strings.SplitAfter(eventlog.Format(s), "\n") {
		if !strings.HasPrefix(line, "chain:") {
			io.WriteString(w, line)
		}
	}
	return nil
}

// demoJSON prints every query's raw result as one JSON object.
func demoJSON(ctx context.Context, f, q *Factory, o demoOptions, start, end time.Time) error {
	results := map[string]json.RawMessage{}
	unavailable := map[string]string{}
	for _, dq := range demoQueries {
		var raw json.RawMessage
		if err := q.Call(ctx, dq.group, dq.name, dq.args, &raw); err != nil {
			if !isMissingEndpoint(err) {
				return fmt.Errorf("%s.%s: %w", dq.group, dq.name, err)
			}
			unavailable[dq.key] = err.Error()
			continue
		}
		results[dq.key] = raw
	}
	return f.PrintJSON(map[string]any{"loops": o.loops, "tasks": o.tasks, "seed": o.seed, "project": demoProject,
		"from": start, "to": end, "results": results, "unavailable": unavailable})
}

// demoShellArgs joins a command's arguments, quoting those with spaces.
func demoShellArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " '\"") {
			out[i] = `"` + a + `"`
		}
	}
	return strings.Join(out, " ")
}

type demoCall func(at time.Time, group, name string, args any) (json.RawMessage, error)

// demoSimulate runs the loops concurrently in lockstep: in each round every
// loop does one task (and maybe starts a Ralph loop and asks for its
// cross-loop context), then every Ralph loop of the round iterates and
// completes. The rounds keep what a loop can have learned from the others
// independent of goroutine scheduling, so a seed always gives the same
// result.
func demoSimulate(call demoCall, o demoOptions, start, end time.Time) error {
	step := (end.Sub(start) / time.Duration(o.tasks*o.loops+1)).Truncate(time.Minute)
	rngs := make([]*rand.Rand, o.loops)
	for l := range rngs {
		rngs[l] = rand.New(rand.NewPCG(o.seed, uint64(l)))
	}
	ralph := make([]*demoRalphRun, o.loops)
	for t := range o.tasks {
		err := demoParallel(o.loops, func(l int) (err error) {
			at := start.Add(time.Duration(t*o.loops+l) * step)
			ralph[l], err = demoTask(call, rngs[l], l, t, o, at)
			return err
		})
		if err == nil {
			err = demoParallel(o.loops, func(l int) error {
				if ralph[l] == nil {
					return nil
				}
				return ralph[l].finish(call)
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// demoParallel runs fn(0..n-1) at once and returns the first error.
func demoParallel(n int, fn func(int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(i); err != nil {
				errs[i] = fmt.Errorf("loop %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// demoTask is one task of simulated loop l: a decomposition outcome with
// its errors, sometimes a lesson, sometimes the start of a Ralph loop that
// fixes a type error.
func demoTask(call demoCall, rng *rand.Rand, l, t int, o demoOptions, at time.Time) (*demoRalphRun, error) {
	s := demoStrategies[rng.IntN(len(demoStrategies))]
	ok := rng.Float64() < s.rate
	bead := fmt.Sprintf("bd-%d.%d", l, t)
	dur, errsN, retries := 3*60_000+rng.IntN(60_000), 0, 0
	if !ok {
		dur, errsN, retries = 35*60_000, 1+rng.IntN(3), 1+rng.IntN(2)
		for e := range errsN {
			if _, err := call(at, "learning", "record_error", map[string]any{
				"bead_id": bead, "error_type": []string{"validation", "timeout", "tool_failure"}[e%3],
				"message": "type check failed in src/user/validate.ts", "tool_name": "tsc"}); err != nil {
				return nil, err
			}
		}
	}
	if _, err := call(at, "learning", "record_outcome", map[string]any{
		"bead_id": bead, "duration_ms": dur, "error_count": errsN, "retry_count": retries, "success": ok,
		"criteria": s.criteria, "decomposition": s.text}); err != nil {
		return nil, err
	}
	// One loop a round reports a lesson, so duplicates arrive in a fixed order.
	if t%6 == l%6 {
		lesson := demoLessons[(l+t/6)%len(demoLessons)]
		_, err := call(at, "knowledge", "add", map[string]any{"lesson": lesson, "category": "testing",
			"tags": []string{"typescript"}, "confidence": 0.8, "phase": t/6 + 1})
		if err != nil && !isMissingEndpoint(err) {
			return nil, err
		}
	}
	if t%5 != 0 {
		return nil, nil
	}
	return demoStartRalph(call, rng, l, t, o, at, t%15 == 10)
}

// demoRalphRun is a started Ralph loop and what it was told.
type demoRalphRun struct {
	id, agent string
	rng       *rand.Rand
	at        time.Time
	fail      bool
	nullCheck string // id of the injected error pattern with the null check fix
	stopEarly bool   // the anti-pattern about repeated timeouts was injected
}

// demoStartRalph starts a Ralph loop and asks lore for its cross-loop
// context, as an agent does before its first iteration.
func demoStartRalph(call demoCall, rng *rand.Rand, l, t int, o demoOptions, at time.Time, fail bool) (*demoRalphRun, error) {
	r := &demoRalphRun{id: crossloop.LoopIDWith(demoRalphTask, [4]byte{byte(o.seed), byte(l), byte(t >> 8), byte(t)}),
		agent: fmt.Sprintf("agent-%d", l), rng: rng, at: at, fail: fail}
	if _, err := call(at, "loop", "start", map[string]any{"loop_id": r.id, "task": demoRalphTask,
		"category": demoRalphCat, "agent": r.agent}); err != nil {
		return nil, err
	}
	raw, err := call(at, "patterns", "inject", map[string]any{"loop_id": r.id})
	if err != nil {
		if isMissingEndpoint(err) {
			return r, nil
		}
		return nil, err
	}
	var reply struct {
		Result struct {
			Patterns []struct {
				Pattern crossloop.Pattern `json:"pattern"`
			} `json:"patterns"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, fmt.Errorf("patterns.inject: %w", err)
	}
	for _, p := range reply.Result.Patterns {
		switch {
		case p.Pattern.Type == crossloop.TypeError && strings.Contains(p.Pattern.FixDescription, "null check"):
			r.nullCheck = p.Pattern.ID
		case p.Pattern.Type == crossloop.TypeAnti && strings.Contains(p.Pattern.Title, "Repeated TimeoutError"):
			r.stopEarly = true
		}
	}
	return r, nil
}

// finish runs the loop's iterations and completes it: a null-property
// TypeError fixed by a null check (at once when lore injected that fix), or,
// when failing, the same timeout three times (twice when lore warned).
func (r *demoRalphRun) finish(call demoCall) error {
	var iters []map[string]any
	outcome := "success"
	fix := "+ if (user == null) {\n+   throw new ValidationError(\"User is required\");\n+ }"
	switch {
	case r.fail:
		outcome = "failure"
		n := 3
		if r.stopEarly {
			n = 2
		}
		for i := 1; i <= n; i++ {
			iters = append(iters, map[string]any{"iteration": i, "error_type": "TimeoutError",
				"error_message": "Test timed out after 5000ms", "fix_description": "Increase the test timeout",
				"tests_passed": 3, "tests_failed": 2})
		}
	case r.nullCheck != "":
		iters = append(iters, map[string]any{"iteration": 1, "error_type": "TypeError",
			"error_message": "Cannot read property 'email' of null", "location": "src/auth/validate.ts:42",
			"fix_description": "Added null check for user object", "fix_diff": fix,
			"tests_passed": 12, "tests_failed": 0, "tools_used": []string{"tsc", "vitest"}})
	default:
		iters = append(iters,
			map[string]any{"iteration": 1, "error_type": "TypeError", "error_message": "Cannot read property 'email' of null",
				"location": "src/auth/validate.ts:42", "tests_passed": 10, "tests_failed": 2, "tools_used": []string{"tsc", "vitest"}},
			map[string]any{"iteration": 2, "fix_description": "Added null check for user object", "fix_diff": fix,
				"tests_passed": 12, "tests_failed": 0, "tools_used": []string{"vitest"}})
	}
	at := r.at
	for _, it := range iters {
		it["loop_id"], it["agent"] = r.id, r.agent
		at = at.Add(time.Duration(5+r.rng.IntN(10)) * time.Minute)
		if _, err := call(at, "loop", "iterate", it); err != nil {
			return err
		}
	}
	if r.nullCheck != "" && !r.fail {
		if _, err := call(at, "loop", "apply", map[string]any{"loop_id": r.id, "pattern_id": r.nullCheck,
			"success": true, "iteration": 1, "agent": r.agent}); err != nil && !isMissingEndpoint(err) {
			return err
		}
	}
	_, err := call(at.Add(time.Minute), "loop", "complete", map[string]any{"loop_id": r.id, "outcome": outcome, "iterations": len(iters)})
	return err
}

func isMissingEndpoint(err error) bool {
	var e *api.Error
	return errors.Is(err, nats.ErrNoResponders) || (errors.As(err, &e) && e.Code == "404")
}
