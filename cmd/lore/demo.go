package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/node"
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
outcomes, errors, lessons and Ralph-loop iterations over four simulated months,
then ask lore what it learned: criterion weights, proven and deprecated
decomposition patterns, anti-patterns, the knowledge block for a task and the
cross-loop patterns for a new loop. Everything goes through the same NATS API
the CLI and other clients use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), f, o) },
	}
	cmd.Flags().IntVar(&o.loops, "loops", 6, "concurrent simulated loops")
	cmd.Flags().IntVar(&o.tasks, "tasks", 30, "tasks per loop")
	cmd.Flags().Uint64Var(&o.seed, "seed", 7, "random seed")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the data folder (printed) instead of removing it")
	return cmd
}

// demoStrategies have true success rates lore does not see.
var demoStrategies = []struct {
	text string
	rate float64
}{
	{"Split by feature and keep tests alongside implementation", 0.92},
	{"We'll split by file type, one file per subtask", 0.2},
	{"Split by layer (UI/logic/data) with maximize parallelization", 0.6},
}

var demoLessons = []string{
	"Run tsc --noEmit before committing TypeScript changes to catch type errors early",
	"Add a null check before reading properties of user objects returned by the session API",
	"Use table-driven tests for validation functions so every edge case is listed",
	"Prefer stream.Readable.from(generator) over async iterators for backpressure",
	"Always run the database migrations in a transaction so a failure leaves no partial schema",
}

func runDemo(ctx context.Context, f *Factory, o demoOptions) error {
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
	call := func(project string, at time.Time, group, name string, args any) (json.RawMessage, error) {
		req, err := api.NewRequest(args)
		if err != nil {
			return nil, err
		}
		req.Project, req.Source = project, "demo"
		if !at.IsZero() {
			req.Now = &at
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return c.CallRaw(cctx, group, name, req)
	}

	start := time.Now().UTC().AddDate(0, -4, 0).Truncate(time.Hour)
	fmt.Fprintf(f.Out, "lore demo: %d loops × %d tasks, simulated from %s (embedded NATS %s)\n\n",
		o.loops, o.tasks, start.Format("2006-01-02"), n.ClientURL())
	var wg sync.WaitGroup
	errs := make(chan error, o.loops)
	for l := range o.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := demoLoop(call, l, o, start); err != nil {
				errs <- fmt.Errorf("loop %d: %w", l, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}

	now := time.Now().UTC()
	section := func(title, group, name, project string, args any) {
		raw, err := call(project, now, group, name, args)
		fmt.Fprintf(f.Out, "── %s (lore.api.%s.%s)\n", title, group, name)
		if err != nil {
			if _, registered := app.Lookup(group, name); !registered {
				fmt.Fprintf(f.Out, "(not available in this build)\n\n")
				return
			}
			fmt.Fprintf(f.Out, "error: %v\n\n", err)
			return
		}
		fmt.Fprintln(f.Out, demoText(raw))
	}
	section("what was recorded", "audit", "stats", "", nil)
	section("criterion weights", "learning", "weights", "web", nil)
	section("decomposition patterns by maturity", "learning", "decomposition_prompt", "web", nil)
	section("anti-patterns", "learning", "anti_patterns", "web", nil)
	section("knowledge for a new task", "knowledge", "inject", "web",
		map[string]any{"task": "fix type errors in the user validation module", "headroom": 0.7})
	section("cross-loop patterns for a new loop", "patterns", "inject", "web",
		map[string]any{"task": "Fix TypeScript type errors in user validation", "category": "debugging"})
	section("cross-loop effectiveness", "patterns", "metrics", "web", nil)
	return nil
}

type demoCall func(project string, at time.Time, group, name string, args any) (json.RawMessage, error)

// demoLoop is one simulated agent loop: decomposition outcomes, errors,
// lessons, and Ralph loops that fix a type error.
func demoLoop(call demoCall, l int, o demoOptions, start time.Time) error {
	rng := rand.New(rand.NewPCG(o.seed, uint64(l)))
	project := "web"
	agent := fmt.Sprintf("agent-%d", l)
	for t := range o.tasks {
		at := start.Add(time.Duration(t*o.loops+l) * 97 * time.Minute)
		s := demoStrategies[rng.IntN(len(demoStrategies))]
		ok := rng.Float64() < s.rate
		bead := fmt.Sprintf("bd-%d.%d", l, t)
		dur, errsN, retries := 3*60_000+rng.IntN(60_000), 0, 0
		if !ok {
			dur, errsN, retries = 35*60_000, 1+rng.IntN(3), 1+rng.IntN(2)
			for e := range errsN {
				if _, err := call(project, at, "learning", "record_error", map[string]any{
					"bead_id": bead, "error_type": []string{"validation", "timeout", "tool_failure"}[e%3],
					"message": "type check failed in src/user/validate.ts", "tool_name": "tsc"}); err != nil {
					return err
				}
			}
		}
		if _, err := call(project, at, "learning", "record_outcome", map[string]any{
			"bead_id": bead, "duration_ms": dur, "error_count": errsN, "retry_count": retries, "success": ok,
			"criteria": []string{"type_safe", "small_diff"}, "decomposition": s.text}); err != nil {
			return err
		}
		if t%6 == 0 {
			lesson := demoLessons[(l+t/6)%len(demoLessons)]
			_, err := call(project, at, "knowledge", "add", map[string]any{"lesson": lesson, "category": "testing",
				"tags": []string{"typescript"}, "confidence": 0.8, "phase": t/6 + 1})
			if err != nil && !isMissingEndpoint(err) {
				return err
			}
		}
		if t%5 == 0 {
			if err := demoRalph(call, rng, project, agent, at, t%15 == 10); err != nil {
				return err
			}
		}
	}
	return nil
}

// demoRalph runs one Ralph loop: a null-property TypeError fixed by a null
// check (or, when failing, the same timeout three times).
func demoRalph(call demoCall, rng *rand.Rand, project, agent string, at time.Time, fail bool) error {
	raw, err := call(project, at, "loop", "start", map[string]any{
		"task": "Fix TypeScript type errors in user validation", "category": "debugging", "agent": agent})
	if err != nil {
		return err
	}
	var started struct {
		Result struct {
			LoopID string `json:"loop_id"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &started); err != nil || started.Result.LoopID == "" {
		return fmt.Errorf("loop start: no loop id in %s", raw)
	}
	id := started.Result.LoopID
	iters := []map[string]any{}
	outcome := "success"
	if fail {
		outcome = "failure"
		for i := 1; i <= 3; i++ {
			iters = append(iters, map[string]any{"iteration": i, "error_type": "TimeoutError",
				"error_message": "Test timed out after 5000ms", "fix_description": "Increase the test timeout",
				"tests_passed": 3, "tests_failed": 2})
		}
	} else {
		iters = append(iters,
			map[string]any{"iteration": 1, "error_type": "TypeError", "error_message": "Cannot read property 'email' of null",
				"location": "src/auth/validate.ts:42", "tests_passed": 10, "tests_failed": 2, "tools_used": []string{"tsc", "vitest"}},
			map[string]any{"iteration": 2, "fix_description": "Added null check for user object",
				"fix_diff":     "+ if (user == null) {\n+   throw new ValidationError(\"User is required\");\n+ }",
				"tests_passed": 12, "tests_failed": 0, "tools_used": []string{"vitest"}})
	}
	for _, it := range iters {
		it["loop_id"], it["agent"] = id, agent
		at = at.Add(time.Duration(5+rng.IntN(10)) * time.Minute)
		if _, err := call(project, at, "loop", "iterate", it); err != nil {
			return err
		}
	}
	_, err = call(project, at.Add(time.Minute), "loop", "complete", map[string]any{"loop_id": id, "outcome": outcome, "iterations": len(iters)})
	return err
}

func isMissingEndpoint(err error) bool {
	var e *api.Error
	return errors.Is(err, nats.ErrNoResponders) || (errors.As(err, &e) && e.Code == "404")
}

// demoText prints a result's "text" when it has one, else indented JSON.
func demoText(raw json.RawMessage) string {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) == nil {
		for _, k := range []string{"text", "prompt", "markdown"} {
			var s string
			if v, ok := probe[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
				return s
			}
		}
		if r, ok := probe["result"]; ok {
			return demoText(r)
		}
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
