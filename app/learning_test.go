package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// TestLearningCommands runs commands through the pipeline over a store
// and checks the refusals: bad input and a promote of a deprecated pattern
// (ErrConflict), with nothing appended.
func TestLearningCommands(t *testing.T) {
	b := newMemBackend(t, app.LearningModel())
	p := app.NewPipeline(b)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func(name string, a any) ([]events.Result, any, error) {
		ep, ok := app.Lookup("learning", name)
		if !ok {
			t.Fatalf("no endpoint learning.%s", name)
		}
		out, err := p.Do(context.Background(), ep, app.Call{Now: &now, Source: "test", Args: args(t, a)})
		if r, ok := out.(app.CommandReply); ok {
			return r.Appended, r, err
		}
		return nil, out, err
	}
	for name, c := range map[string]struct {
		ep    string
		args  any
		field string
	}{
		"negative duration":  {"record_outcome", map[string]any{"bead_id": "b", "duration_ms": -5, "retry_count": 0, "success": true}, "duration_ms"},
		"unknown error type": {"record_error", map[string]any{"bead_id": "b", "error_type": "segfault", "message": "x"}, "error_type"},
		"bad feedback type":  {"record_feedback", map[string]any{"criterion": "c", "type": "great", "raw_value": 1}, "type"},
		"deprecate, no why":  {"deprecate", map[string]any{"pattern_id": "p"}, "reason"},
	} {
		evs, _, err := call(c.ep, c.args)
		bad := errors.Is(err, app.ErrBadRequest) || errors.Is(err, events.ErrInvalidEvent)
		if !bad || !strings.Contains(err.Error(), c.field) || len(evs) != 0 {
			t.Errorf("%s: %v, %d events", name, err, len(evs))
		}
	}
	if _, _, err := call("promote", map[string]any{"pattern_id": "nope"}); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("promote unknown: %v", err)
	}
	if _, _, err := call("observe_pattern", map[string]any{"content": "Split by file type", "success": false}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := call("deprecate", map[string]any{"content": "Split by file type", "reason": "conflicts"}); err != nil {
		t.Fatal(err)
	}
	evs, _, err := call("promote", map[string]any{"content": "Split by file type"})
	if !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "Cannot promote a deprecated pattern") || len(evs) != 0 {
		t.Fatalf("promote deprecated: %v, %d events", err, len(evs))
	}
	_, out, err := call("pattern", map[string]any{"content": "Split by file type"})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(learning.PatternView); p.State != learning.Deprecated || p.Manual.Reason != "conflicts" {
		t.Errorf("pattern %+v", p)
	}
	// Errors: record, resolve, context.
	evs, _, err = call("record_error", map[string]any{"bead_id": "bd-1.1", "error_type": "timeout", "message": "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := call("resolve_error", map[string]any{"error_id": evs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := call("resolve_error", map[string]any{"error_id": evs[0].ID}); !errors.Is(err, app.ErrConflict) {
		t.Errorf("second resolve: %v", err)
	}
	_, out, _ = call("error_stats", map[string]any{"bead_id": "bd-1.1"})
	if s := out.(learning.ErrorStats); s.Total != 1 || s.Unresolved != 0 {
		t.Errorf("stats %+v", s)
	}
}
