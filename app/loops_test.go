package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loredev/lore/app"
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
