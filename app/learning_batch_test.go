package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// observations is a mixed workload of pattern observations: two patterns
// (one by content, one by id), successes and failures, beads, tags, and
// explicit times, some backfilled.
func observations(n int) []map[string]any {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]map[string]any, n)
	for i := range out {
		o := map[string]any{"success": i%3 != 0, "time": t0.Add(time.Duration((i*7)%n) * time.Hour).Format(time.RFC3339)}
		if (i/5)%2 == 0 { // runs of five observations of one pattern
			o["content"] = "Split by file type"
		} else {
			o["pattern_id"] = "one-file-per-subtask"
		}
		if i%5 == 0 {
			o["bead_id"] = fmt.Sprintf("bd-%d.1", i)
		}
		if i%4 == 1 {
			o["tags"] = []string{"ui"}
		}
		out[i] = o
	}
	return out
}

// untimed is obs without their times: all made at the request's time.
func untimed(obs []map[string]any) []map[string]any {
	out := make([]map[string]any, len(obs))
	for i, o := range obs {
		out[i] = map[string]any{}
		for k, v := range o {
			if k != "time" {
				out[i][k] = v
			}
		}
	}
	return out
}

// TestObservePatternsFoldsAsSingleObservations: a batch folds into the same
// patterns as the same observations sent one by one to observe_pattern,
// and its reply reads back each pattern's counts and maturity. The
// observations go out as one pattern.observations/v1 per run of
// observations made at the same time.
func TestObservePatternsFoldsAsSingleObservations(t *testing.T) {
	for name, c := range map[string]struct {
		obs    []map[string]any
		events int
	}{
		"each at its own time": {observations(40), 40},
		"all at the same time": {untimed(observations(40)), 8},
		"a thousand, untimed":  {untimed(observations(app.MaxObservationsPerRequest)), 200},
		"two runs of one time": {append(untimed(observations(20)), observations(20)[:1]...), 5},
	} {
		t.Run(name, func(t *testing.T) {
			obs := c.obs
			now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			one := app.NewPipeline(newMemBackend(t, app.LearningModel()))
			for _, o := range obs {
				if _, _, err := do[app.LearningRecorded](t, one, "learning", "observe_pattern", app.Call{Now: &now, Source: "t", Args: args(t, o)}); err != nil {
					t.Fatal(err)
				}
			}
			b := newMemBackend(t, app.LearningModel())
			many := app.NewPipeline(b)
			res, reply, err := do[app.LearningObservedBatch](t, many, "learning", "observe_patterns",
				app.Call{Now: &now, Source: "t", Args: args(t, map[string]any{"observations": obs})})
			if err != nil {
				t.Fatal(err)
			}
			if len(reply.Appended) != c.events || len(b.log) != c.events || !reply.Projected || res.Observed != len(obs) || len(res.Patterns) != 2 {
				t.Fatalf("%d events, reply %+v, result %+v", len(b.log), reply, res)
			}
			for _, ev := range b.log {
				if ev.Type != "pattern.observations/v1" {
					t.Fatalf("event of type %s", ev.Type)
				}
			}
			total := 0
			for _, p := range res.Patterns {
				want, _, err := do[learning.PatternView](t, one, "learning", "pattern", app.Call{Now: &now, Args: args(t, map[string]any{"pattern_id": p.PatternID})})
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := do[learning.PatternView](t, many, "learning", "pattern", app.Call{Now: &now, Args: args(t, map[string]any{"pattern_id": p.PatternID})})
				if err != nil {
					t.Fatal(err)
				}
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				if string(w) != string(g) {
					t.Errorf("pattern %s after the batch:\n%s\none by one:\n%s", p.PatternID, g, w)
				}
				if p.Successes != got.SuccessCount || p.Failures != got.FailureCount || p.Maturity == "" {
					t.Errorf("reply for %s: %+v, folded %d/%d", p.PatternID, p, got.SuccessCount, got.FailureCount)
				}
				total += p.Successes + p.Failures
			}
			if total != len(obs) {
				t.Errorf("reply counts %d observations of %d", total, len(obs))
			}
		})
	}
}

// TestObservePatternsRefusesAsObservePattern: a bad observation anywhere in
// a batch refuses the whole request with observe_pattern's own error for
// it, prefixed by its index, and nothing is appended.
func TestObservePatternsRefusesAsObservePattern(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for name, bad := range map[string]any{
		"no pattern":        map[string]any{"success": true},
		"no success":        map[string]any{"content": "Split by file type"},
		"unknown key":       map[string]any{"content": "Split by file type", "success": true, "sucess": true},
		"success as string": map[string]any{"content": "Split by file type", "success": "yes"},
		"empty tag":         map[string]any{"content": "Split by file type", "success": true, "tags": []string{""}},
		"bad time":          map[string]any{"content": "Split by file type", "success": true, "time": "yesterday"},
		"pattern id space":  map[string]any{"pattern_id": "a b", "success": true},
		"not an object":     []int{1},
	} {
		t.Run(name, func(t *testing.T) {
			b := newMemBackend(t, app.LearningModel())
			p := app.NewPipeline(b)
			_, _, single := do[app.LearningRecorded](t, p, "learning", "observe_pattern", app.Call{Now: &now, Args: args(t, bad)})
			obs := []any{map[string]any{"content": "ok", "success": true}, map[string]any{"content": "ok", "success": false}, bad}
			_, _, err := do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", app.Call{Now: &now, Args: args(t, map[string]any{"observations": obs})})
			if err == nil || !(errors.Is(err, app.ErrBadRequest) || errors.Is(err, events.ErrInvalidEvent)) {
				t.Fatalf("batch: %v", err)
			}
			if !strings.Contains(err.Error(), "observations[2]: ") {
				t.Errorf("batch error does not name the index: %v", err)
			}
			if single != nil {
				why := single.Error()
				if _, after, ok := strings.Cut(why, "lore: bad request: "); ok {
					why = strings.TrimPrefix(after, "arguments: ")
				}
				if !strings.Contains(err.Error(), why) {
					t.Errorf("batch error %q does not say what observe_pattern says: %q", err, single)
				}
			}
			if len(b.log) != 0 {
				t.Errorf("%d events appended", len(b.log))
			}
		})
	}
	b := newMemBackend(t, app.LearningModel())
	p := app.NewPipeline(b)
	for name, a := range map[string]any{
		"none":     map[string]any{"observations": []any{}},
		"missing":  map[string]any{},
		"too many": map[string]any{"observations": observations(app.MaxObservationsPerRequest + 1)},
		"not list": map[string]any{"observations": map[string]any{"content": "x", "success": true}},
	} {
		_, _, err := do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", app.Call{Now: &now, Args: args(t, a)})
		if !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), "observations") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(b.log) != 0 {
		t.Errorf("%d events appended", len(b.log))
	}
}

// TestObservePatternsIdempotencyKey: a request re-sent with the same
// idempotency key appends nothing and replies as the first time.
func TestObservePatternsIdempotencyKey(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	b := newMemBackend(t, app.LearningModel())
	p := app.NewPipeline(b)
	c := app.Call{Now: &now, IdempotencyKey: "obs-1", Args: args(t, map[string]any{"observations": observations(10)})}
	first, _, err := do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", c)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	c.Now = &later
	again, reply, err := do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", c)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := json.Marshal(first)
	a, _ := json.Marshal(again)
	if len(b.log) != 10 || string(f) != string(a) || len(reply.Appended) != 10 || !reply.Appended[9].Duplicate {
		t.Errorf("%d events; first %s, again %s, appended %+v", len(b.log), f, a, reply.Appended)
	}
	// Observations made at one time: one event per run of one pattern, the
	// first's id is the key.
	c = app.Call{Now: &now, IdempotencyKey: "obs-2", Args: args(t, map[string]any{"observations": untimed(observations(10))})}
	first, _, err = do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", c)
	if err != nil {
		t.Fatal(err)
	}
	c.Now = &later
	again, reply, err = do[app.LearningObservedBatch](t, p, "learning", "observe_patterns", c)
	if err != nil {
		t.Fatal(err)
	}
	f, _ = json.Marshal(first)
	a, _ = json.Marshal(again)
	if len(b.log) != 12 || b.log[10].ID != "obs-2" || b.log[11].ID != "obs-2.2" || string(f) != string(a) || first.Observed != 10 || len(reply.Appended) != 2 || !reply.Appended[0].Duplicate || !reply.Appended[1].Duplicate {
		t.Errorf("%d events (last %s); first %s, again %s, appended %+v", len(b.log), b.log[len(b.log)-1].ID, f, a, reply.Appended)
	}
}
