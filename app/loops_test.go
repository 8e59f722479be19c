package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
)

// TestLoopList: loop.list answers running loops first with their
// iteration counts, filters running ones, bounds the answer, and refuses a
// negative limit with 400 naming it.
func TestLoopList(t *testing.T) {
	p := app.NewPipeline(newMemBackend(t))
	call := func(name, args string) error {
		_, _, err := do[any](t, p, "loop", name, app.Call{Args: []byte(args)})
		return err
	}
	for _, c := range []struct{ name, args string }{
		{"start", `{"loop_id":"ralph-done-00000001","task":"done task"}`},
		{"iterate", `{"loop_id":"ralph-done-00000001","iteration":1,"error_type":"E","tests_failed":1}`},
		{"iterate", `{"loop_id":"ralph-done-00000001","iteration":2,"tests_passed":3,"tests_failed":0}`},
		{"complete", `{"loop_id":"ralph-done-00000001","outcome":"success","iterations":2}`},
		{"start", `{"loop_id":"ralph-live-00000002","task":"live task"}`},
		{"iterate", `{"loop_id":"ralph-live-00000002","iteration":1,"error_type":"E","tests_failed":1}`},
	} {
		if err := call(c.name, c.args); err != nil {
			t.Fatalf("%s %s: %v", c.name, c.args, err)
		}
	}
	ls, _, err := do[[]crossloop.LoopSummary](t, p, "loop", "list", app.Call{Args: []byte(`{}`)})
	if err != nil || len(ls) != 2 {
		t.Fatalf("list: %v, %v", ls, err)
	}
	if ls[0].ID != "ralph-live-00000002" || !ls[0].Running() || ls[0].Iterations != 1 ||
		ls[1].Outcome != "success" || ls[1].Iterations != 2 {
		t.Errorf("list = %+v", ls)
	}
	ls, _, err = do[[]crossloop.LoopSummary](t, p, "loop", "list", app.Call{Args: []byte(`{"running":true}`)})
	if err != nil || len(ls) != 1 || ls[0].ID != "ralph-live-00000002" {
		t.Errorf("running: %+v, %v", ls, err)
	}
	ls, _, err = do[[]crossloop.LoopSummary](t, p, "loop", "list", app.Call{Args: []byte(`{"limit":1}`)})
	if err != nil || len(ls) != 1 {
		t.Errorf("limit 1: %+v, %v", ls, err)
	}
	_, _, err = do[any](t, p, "loop", "list", app.Call{Args: []byte(`{"limit":-1}`)})
	if !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("limit -1: %v", err)
	}
}

// TestLoopStartReplyIsWhatWasRecorded: loop.start's answer is read against
// its stored events: the ranking made now when it is what they record,
// else (a retry whose events an earlier attempt stored) the patterns the
// stored loop.injected names, never a ranking that was not recorded.
func TestLoopStartReplyIsWhatWasRecorded(t *testing.T) {
	b := newMemBackend(t)
	p := app.NewPipeline(b)
	for _, c := range []struct{ name, args string }{
		{"start", `{"loop_id":"ralph-seed-00000001","task":"fix the null user","category":"debugging"}`},
		{"iterate", `{"loop_id":"ralph-seed-00000001","iteration":1,"error_type":"TypeError","error_message":"Cannot read property 'email' of null","tests_failed":1}`},
		{"iterate", `{"loop_id":"ralph-seed-00000001","iteration":2,"fix_description":"Added a null check for the user","tests_passed":3,"tests_failed":0}`},
		{"complete", `{"loop_id":"ralph-seed-00000001","outcome":"success","iterations":2}`},
	} {
		if _, _, err := do[any](t, p, "loop", c.name, app.Call{Args: []byte(c.args)}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	ps, _, err := do[[]*crossloop.Pattern](t, p, "patterns", "list", app.Call{Args: []byte(`{}`)})
	if err != nil || len(ps) == 0 {
		t.Fatalf("no pattern extracted: %v", err)
	}
	var reply func(context.Context, app.View, app.Request, []*events.Event, any) (any, error)
	for _, e := range app.Endpoints() {
		if e.Group == "loop" && e.Name == "start" {
			reply = e.Reply
		}
	}
	const loop = "ralph-retry-00000002"
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	started, err := events.New("loop.started/v1", "default", "test", at, &events.LoopStarted{LoopID: loop, Task: "fix the null user"})
	if err != nil {
		t.Fatal(err)
	}
	injected, err := events.New("loop.injected/v1", "default", "test", at, &events.LoopInjected{LoopID: loop, PatternIDs: []string{ps[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	stored := []*events.Event{started, injected}

	same := app.LoopStartResult{LoopID: loop, Injection: &app.InjectResult{LoopID: loop,
		Patterns: []crossloop.Ranked{{Pattern: &crossloop.Pattern{ID: ps[0].ID}, Score: 0.5}}, Text: "ranked now"}}
	got, err := reply(context.Background(), b.Live(), app.Request{}, stored, same)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(app.LoopStartResult); r.Injection == nil || r.Injection.Text != "ranked now" {
		t.Fatalf("the ranking made now, as recorded, was not answered: %+v", r)
	}

	other := app.LoopStartResult{LoopID: loop, Injection: &app.InjectResult{LoopID: loop, Patterns: []crossloop.Ranked{}}}
	got, err = reply(context.Background(), b.Live(), app.Request{}, stored, other)
	if err != nil {
		t.Fatal(err)
	}
	r := got.(app.LoopStartResult)
	if r.LoopID != loop || r.Injection == nil || len(r.Injection.Patterns) != 1 || r.Injection.Patterns[0].Pattern.ID != ps[0].ID {
		t.Fatalf("a ranking other than the recorded one answered: %+v", r)
	}
}
