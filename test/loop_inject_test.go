package test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/node"
)

// TestLoopStartInject: loop.start with inject answers the ranking that
// patterns.inject gives for the same task and category on the same
// registry, records it on the new loop (loop.show lists the patterns as
// injected), answers a retry with the same idempotency key with the same
// loop and patterns, and refuses an inject that is not a boolean, naming
// the field.
func TestLoopStartInject(t *testing.T) {
	t.Parallel()
	n := startNode(t, node.Config{})
	runNode(t, n)
	a := serveAPI(t, n)
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	for i := range 3 {
		ralph(t, a, t0.Add(time.Duration(i)*time.Minute), "Fix TypeScript null errors in the auth module", nullFix(), "success", false, nil)
	}
	const task, category = "Fix TypeScript type errors in user validation", "debugging"

	// A day later, as the loops that use them come.
	t1 := at(t0.Add(24 * time.Hour))
	var rankReply api.CommandReply
	if err := a.call("patterns", "inject", map[string]any{"task": task, "category": category}, &rankReply, t1); err != nil {
		t.Fatal(err)
	}
	var ranked app.InjectResult
	if err := json.Unmarshal(rankReply.Result, &ranked); err != nil {
		t.Fatal(err)
	}
	if len(ranked.Patterns) == 0 {
		t.Fatal("the registry ranks no pattern for the task: the test needs some")
	}
	ids := func(r *app.InjectResult) []string {
		var out []string
		for _, p := range r.Patterns {
			out = append(out, p.Pattern.ID)
		}
		return out
	}

	start := func(mod ...func(*api.Request)) app.LoopStartResult {
		t.Helper()
		var reply api.CommandReply
		if err := a.call("loop", "start", map[string]any{"task": task, "category": category, "inject": true}, &reply, append(mod, t1)...); err != nil {
			t.Fatal(err)
		}
		if !reply.Projected {
			t.Fatal("loop.start replied before its events were folded")
		}
		var res app.LoopStartResult
		if err := json.Unmarshal(reply.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.LoopID == "" || res.Injection == nil {
			t.Fatalf("loop.start with inject: %s", reply.Result)
		}
		return res
	}
	res := start()
	if got, want := ids(res.Injection), ids(&ranked); !reflect.DeepEqual(got, want) {
		t.Fatalf("loop.start injected %v, patterns.inject ranks %v", got, want)
	}
	for i, p := range res.Injection.Patterns {
		if p.Score != ranked.Patterns[i].Score || p.Relevance != ranked.Patterns[i].Relevance {
			t.Errorf("pattern %s scored %v/%v, patterns.inject %v/%v", p.Pattern.ID, p.Score, p.Relevance, ranked.Patterns[i].Score, ranked.Patterns[i].Relevance)
		}
	}
	if res.Injection.Text != ranked.Text || res.Injection.LoopID != res.LoopID {
		t.Errorf("injection text or loop differ: %+v", res.Injection)
	}

	var shown app.LoopShowResult
	if err := a.call("loop", "show", map[string]any{"id": res.LoopID}, &shown); err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, p := range shown.Injected {
		if p.Injected {
			recorded = append(recorded, p.PatternID)
		}
	}
	if want := ids(res.Injection); !sameSet(recorded, want) {
		t.Fatalf("loop.show lists %v injected, loop.start answered %v", recorded, want)
	}

	key := func(r *api.Request) { r.IdempotencyKey = "start-with-inject-1" }
	first, again := start(key), start(key)
	if again.LoopID != first.LoopID || !reflect.DeepEqual(ids(again.Injection), ids(first.Injection)) {
		t.Fatalf("a retry answered loop %s %v, the first %s %v", again.LoopID, ids(again.Injection), first.LoopID, ids(first.Injection))
	}

	err := a.call("loop", "start", map[string]any{"task": task, "inject": "yes"}, nil, t1)
	if !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), "inject") {
		t.Fatalf("inject \"yes\": %v, want a bad request naming inject", err)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		if m[s]--; m[s] < 0 {
			return false
		}
	}
	return true
}
