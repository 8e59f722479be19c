package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// TestLearningConfigureAPI: learning.configure appends one
// learning.configured/v1 with the full configuration and replies it;
// learning.config answers the configuration in force; a bad document is a
// bad request naming the key, with nothing appended; a raw publisher of
// the event is refused by the same rule.
func TestLearningConfigureAPI(t *testing.T) {
	b := newMemBackend(t, app.LearningModel())
	p := app.NewPipeline(b)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func(name string, a any) (app.Call, error) {
		c := app.Call{Now: &now, Source: "test", Args: args(t, a)}
		ep, _ := app.Lookup("learning", name)
		_, err := p.Do(context.Background(), ep, c)
		return c, err
	}
	for doc, name := range map[string]string{
		`{"maturity": {"minFeedback": -1}}`: "maturity.minFeedback",
		`{"anti_pattern": {"nope": 1}}`:     "nope",
		`{}`:                                "",
	} {
		_, err := call("configure", map[string]json.RawMessage{"config": json.RawMessage(doc)})
		if name == "" {
			if err != nil {
				t.Errorf("%s: %v", doc, err)
			}
			continue
		}
		if !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want a bad request naming %s", doc, err, name)
		}
	}
	if _, err := call("configure", map[string]any{}); !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), "config") {
		t.Errorf("no config: %v", err)
	}
	if len(b.log) != 1 {
		t.Fatalf("appended %d events, want the one valid configuration", len(b.log))
	}
	cfg, _, err := do[learning.Config](t, p, "learning", "configure", app.Call{Now: &now, Source: "test",
		Args: args(t, map[string]any{"config": map[string]any{"learning": map[string]any{"maxHarmfulRatio": 0.5}, "evidence": map[string]any{"policy": "evidence"}}})})
	if err != nil || cfg.Learning.MaxHarmfulRatio != 0.5 || cfg.Learning.HalfLifeDays != 90 {
		t.Fatalf("configure reply %+v %v", cfg, err)
	}
	got, _, err := do[learning.Config](t, p, "learning", "config", app.Call{Now: &now})
	if err != nil || got.Learning.MaxHarmfulRatio != 0.5 || got.Evidence.Policy != learning.PolicyEvidence {
		t.Fatalf("config %+v %v", got, err)
	}
	last := b.log[len(b.log)-1]
	if last.Type != "learning.configured/v1" || !strings.Contains(string(last.Data), `"minHelpful":5`) {
		t.Errorf("stored event %s %s: want the full configuration", last.Type, last.Data)
	}
	err = events.ValidateData("learning.configured/v1", []byte(`{"config":{"maturity":{"deprecationThreshold":3}}}`))
	if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), "maturity.deprecationThreshold") {
		t.Errorf("raw publisher: %v", err)
	}
}
