package test

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
)

type regPattern struct {
	ID          string  `json:"pattern_id"`
	Type        string  `json:"type"`
	Title       string  `json:"title"`
	SuccessRate float64 `json:"success_rate"`
	UsageCount  int     `json:"usage_count"`
	Archived    bool    `json:"archived"`
}

// ralph drives one loop through the API: start, iterations, optional
// injection and application, completion. It returns the loop id and the ids
// of the patterns injected.
type ralphStep map[string]any

func ralph(t *testing.T, a apiClient, when time.Time, task string, iters []ralphStep, outcome string, inject bool, apply map[string]bool) (string, []string) {
	t.Helper()
	var started struct {
		Result struct {
			LoopID string `json:"loop_id"`
		} `json:"result"`
	}
	if err := a.call("loop", "start", map[string]any{"task": task, "category": "debugging"}, &started, at(when)); err != nil {
		t.Errorf("loop start: %v", err)
		return "", nil
	}
	id := started.Result.LoopID
	var injected []string
	if inject {
		var reply api.CommandReply
		if err := a.call("patterns", "inject", map[string]any{"loop_id": id}, &reply, at(when)); err != nil {
			t.Errorf("inject: %v", err)
			return id, nil
		}
		var res struct {
			Patterns []struct {
				Pattern regPattern `json:"pattern"`
			} `json:"patterns"`
		}
		_ = json.Unmarshal(reply.Result, &res)
		for _, p := range res.Patterns {
			injected = append(injected, p.Pattern.ID)
		}
	}
	for i, it := range iters {
		it["loop_id"], it["iteration"] = id, i+1
		if err := a.call("loop", "iterate", it, nil, at(when.Add(time.Duration(i+1)*time.Minute))); err != nil {
			t.Errorf("iterate: %v", err)
		}
	}
	for pid, ok := range apply {
		if err := a.call("loop", "apply", map[string]any{"loop_id": id, "pattern_id": pid, "success": ok, "iteration": 1}, nil, at(when)); err != nil {
			t.Errorf("apply %s: %v", pid, err)
		}
	}
	if err := a.call("loop", "complete", map[string]any{"loop_id": id, "outcome": outcome, "iterations": len(iters)}, nil,
		at(when.Add(time.Hour))); err != nil {
		t.Errorf("complete: %v", err)
	}
	return id, injected
}

func nullFix() []ralphStep {
	return []ralphStep{
		{"error_type": "TypeError", "error_message": "Cannot read property 'email' of null", "location": "src/auth/validate.ts:42", "tests_passed": 10, "tests_failed": 2},
		{"fix_description": "Added null check for user object", "fix_diff": "+ if (user == null) {\n+   throw new ValidationError(\"User is required\");\n+ }", "tests_passed": 12, "tests_failed": 0},
	}
}

// TestCrossLoopLearning: ten concurrent loops on overlapping tasks through
// the API: patterns extracted from the first loops are injected into later
// ones, applications update success rates, a repeated failure becomes an
// anti-pattern, prune archives a pattern that keeps failing, and export →
// import into a fresh lore reproduces the registry.
func TestCrossLoopLearning(t *testing.T) {
	n := startNode(t, node.Config{})
	runNode(t, n)
	a := serveAPI(t, n)
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	list := func(client apiClient, args map[string]any) []regPattern {
		t.Helper()
		var ps []regPattern
		if err := client.call("patterns", "list", args, &ps); err != nil {
			t.Fatal(err)
		}
		return ps
	}
	find := func(ps []regPattern, typ string) *regPattern {
		for i := range ps {
			if ps[i].Type == typ {
				return &ps[i]
			}
		}
		return nil
	}
	// Wave 1: three loops discover the null-check fix; one fixes a
	// ReferenceError with a global variable; two retry a timeout three times.
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ralph(t, a, t0.Add(time.Duration(i)*time.Minute), "Fix TypeScript null errors in the auth module", nullFix(), "success", false, nil)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ralph(t, a, t0, "Fix the undefined config variable in the build script", []ralphStep{
			{"error_type": "ReferenceError", "error_message": "config is not defined", "location": "scripts/build.js:7", "tests_passed": 1, "tests_failed": 1},
			{"fix_description": "Declared config as a global variable at the top of the script", "tests_passed": 2, "tests_failed": 0},
		}, "success", false, nil)
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var its []ralphStep
			for range 3 {
				its = append(its, ralphStep{"error_type": "TimeoutError", "error_message": "Test timed out after 5000ms",
					"fix_description": "Increase the test timeout", "tests_passed": 3, "tests_failed": 2})
			}
			ralph(t, a, t0, "Fix the flaky integration tests of the payment service", its, "failure", false, nil)
		}()
	}
	wg.Wait()
	errs := list(a, map[string]any{"type": "error"})
	var nullID, globalID string
	for _, p := range errs {
		switch {
		case p.UsageCount == 3:
			nullID = p.ID
		case p.UsageCount == 1:
			globalID = p.ID
		}
	}
	if nullID == "" || globalID == "" {
		t.Fatalf("error patterns after wave 1: %+v", errs)
	}
	if anti := find(list(a, map[string]any{"type": "anti"}), "anti"); anti == nil {
		t.Fatal("the repeated timeout did not become an anti-pattern")
	}

	// Wave 2: four loops on a similar task get the null-check pattern
	// injected and apply it (three succeed); the global-variable fix fails
	// for every loop that applies it.
	t1 := t0.Add(24 * time.Hour)
	injectedNull := 0
	var mu sync.Mutex
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, inj := ralph(t, a, t1.Add(time.Duration(i)*time.Minute), "Fix TypeScript type errors in user validation", nullFix(), "success", true,
				map[string]bool{nullID: i != 3, globalID: false})
			for _, id := range inj {
				if id == nullID {
					mu.Lock()
					injectedNull++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if injectedNull != 4 {
		t.Errorf("the null-check pattern was injected into %d of 4 later loops", injectedNull)
	}
	var show struct {
		Pattern regPattern `json:"pattern"`
	}
	if err := a.call("patterns", "show", map[string]any{"id": nullID}, &show); err != nil {
		t.Fatal(err)
	}
	if p := show.Pattern; p.UsageCount < 7 || p.SuccessRate >= 1 || p.SuccessRate < 0.8 {
		t.Errorf("null-check pattern after applications: %+v, want usage >= 7 and a success rate in [0.8, 1)", p)
	}

	// Prune archives the pattern that keeps failing (success rate < 0.5
	// with 5 uses), not the one that works.
	var reply api.CommandReply
	if err := a.call("patterns", "prune", map[string]any{}, &reply, at(t1.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	active := map[string]bool{}
	for _, p := range list(a, map[string]any{}) {
		active[p.ID] = true
	}
	if active[globalID] {
		t.Errorf("prune kept %s (it failed every application): %s", globalID, reply.Result)
	}
	if !active[nullID] {
		t.Errorf("prune archived the working pattern %s: %s", nullID, reply.Result)
	}

	// Export, import into a fresh lore: the same registry.
	var doc json.RawMessage
	if err := a.call("patterns", "export", nil, &doc); err != nil {
		t.Fatal(err)
	}
	m := startNode(t, node.Config{})
	runNode(t, m)
	b := serveAPI(t, m)
	if err := b.call("patterns", "import", map[string]any{"document": doc}, nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	summary := func(ps []regPattern) []string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s %s %.4f %d", p.ID, p.Type, p.SuccessRate, p.UsageCount))
		}
		sort.Strings(out)
		return out
	}
	want, got := summary(list(a, map[string]any{})), summary(list(b, map[string]any{}))
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("imported registry differs:\n got %v\nwant %v", got, want)
	}
	if len(want) < 4 {
		t.Errorf("registry too small to compare: %v", want)
	}
}
