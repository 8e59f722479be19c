package learning_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/learning"
)

func configured(t *testing.T, doc string) *events.LearningConfigured {
	t.Helper()
	return &events.LearningConfigured{Config: json.RawMessage(doc)}
}

func observe(s *sim, content string, at float64, ok ...bool) {
	s.t.Helper()
	for i, o := range ok {
		s.must("pattern.observed/v1", day(at+float64(i)*0.001), &events.PatternObserved{Content: content, Success: o})
	}
}

// TestParseConfigNamesTheKey: an unknown key or a value out of range is
// refused naming it, by the one rule (the event's Check at append uses it).
func TestParseConfigNamesTheKey(t *testing.T) {
	for doc, want := range map[string]string{
		`{"maturity": {"minHelpfull": 3}}`:                    "minHelpfull",
		`{"maturity": {"minHelpful": -1}}`:                    "maturity.minHelpful",
		`{"learning": {"halfLifeDays": 0}}`:                   "learning.halfLifeDays",
		`{"antiPatternConfig": {"failureRatioThreshold": 2}}`: "anti_pattern.failureRatioThreshold",
		`{"criterion_half_life_days": {"x": -3}}`:             "criterion_half_life_days.x",
		`{"evidence": {"policy": "bayes"}}`:                   "evidence.policy",
		`{"evidence": {"exploration_share": 0.9}}`:            "evidence.exploration_share",
		`{"bogus": 1}`: "bogus",
	} {
		_, err := learning.ParseConfig([]byte(doc))
		if !errors.Is(err, learning.ErrBadInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a bad input naming %s", doc, err, want)
		}
		err = events.ValidateData("learning.configured/v1", []byte(`{"config":`+doc+`}`))
		if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), want) {
			t.Errorf("append of %s: %v, want refused naming %s", doc, err, want)
		}
	}
	c, err := learning.ParseConfig([]byte(`{"maturityConfig": {"minHelpful": 3}, "antiPatternConfig": {"minObservations": 5}}`))
	if err != nil || c.Maturity.MinHelpful != 3 || c.AntiPattern.MinObservations != 5 || c.Maturity.MinFeedback != 3 ||
		c.Evidence.Policy != learning.PolicySeed {
		t.Fatalf("seed section names: %+v %v", c, err)
	}
}

// TestConfigurationFoldsAndReevaluates: a configuration change is folded
// (queries and later folds use it), re-evaluates the patterns under it and
// announces the transitions it causes once; a store that folded the log
// before the change answers with the configuration then.
func TestConfigurationFoldsAndReevaluates(t *testing.T) {
	s := newSim(t)
	observe(s, "Split by feature", 1, true, true, true, true)
	observe(s, "Split by file type", 1, true, true, false)
	before := append([]*events.Event(nil), s.evs...)
	s.tx.emits = nil
	s.must("learning.configured/v1", day(2), configured(t, `{"maturityConfig": {"minHelpful": 3}, "anti_pattern": {"failureRatioThreshold": 0.3}}`))
	var proven, inverted int
	for _, e := range s.tx.emits {
		switch {
		case e.Type == "pattern.maturity_changed/v1" && strings.HasSuffix(e.Key, ":proven"):
			proven++
			if d := e.Data.(*events.PatternMaturityChanged); !strings.HasPrefix(d.Reason, "configuration changed") {
				t.Errorf("reason %q", d.Reason)
			}
		case e.Type == "pattern.inverted/v1":
			inverted++
		}
	}
	if proven != 1 || inverted != 1 {
		t.Fatalf("emits %+v: want one proven (Split by feature), one inversion (Split by file type)", s.tx.emits)
	}
	// Folding an unrelated event later announces nothing again.
	s.tx.emits = nil
	s.must("clock.ticked/v1", day(2.5), &events.ClockTicked{})
	if len(s.emitted("pattern.maturity_changed/v1"))+len(s.emitted("pattern.inverted/v1")) != 0 {
		t.Errorf("announced again: %+v", s.tx.emits)
	}
	r := s.store()
	cfg, err := s.m.ConfigAt(r)
	if err != nil || cfg.Maturity.MinHelpful != 3 || cfg.AntiPattern.FailureRatioThreshold != 0.3 {
		t.Fatalf("config in force %+v %v", cfg, err)
	}
	p, ok, err := s.m.Pattern(r, events.DefaultProject, "Split by feature", day(3))
	if err != nil || !ok || p.State != learning.Proven {
		t.Fatalf("pattern after the change: %+v %v", p, err)
	}
	// The log up to the change: the defaults.
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := projector.FoldEvents(st, []projector.Model{s.m}, before); err != nil {
		t.Fatal(err)
	}
	old := st.Model(learning.ModelName)
	if cfg, _ := s.m.ConfigAt(old); cfg.Maturity.MinHelpful != 5 {
		t.Errorf("config before the change: %+v", cfg.Maturity)
	}
	if p, _, _ := s.m.Pattern(old, events.DefaultProject, "Split by feature", day(3)); p.State != learning.Established {
		t.Errorf("before the change: %s", p.State)
	}
}

// TestConfigurationHalfLifeRebuildsSums: a changed criterion half-life is
// applied to the feedback already folded (sums rebuilt from the terms):
// the weight equals a fold of the same log configured from the start.
func TestConfigurationHalfLifeRebuildsSums(t *testing.T) {
	a := newSim(t)
	b := newSim(t)
	b.must("learning.configured/v1", day(0), configured(t, `{"criterion_half_life_days": {"type_safe": 10}}`))
	for _, s := range []*sim{a, b} {
		for i, typ := range []string{"helpful", "harmful", "helpful", "harmful", "harmful"} {
			s.must("feedback.recorded/v1", day(float64(i*5)+1), &events.FeedbackRecorded{Criterion: "type_safe", Type: typ, RawValue: 1})
		}
	}
	a.must("learning.configured/v1", day(30), configured(t, `{"criterion_half_life_days": {"type_safe": 10}}`))
	wa, _, err := a.m.Criterion(a.store(), events.DefaultProject, "type_safe", day(40))
	if err != nil {
		t.Fatal(err)
	}
	wb, _, err := b.m.Criterion(b.store(), events.DefaultProject, "type_safe", day(40))
	if err != nil {
		t.Fatal(err)
	}
	if wa.HalfLifeDays != 10 || abs(wa.Weight-wb.Weight) > 1e-9 || abs(wa.DecayedHelpful-wb.DecayedHelpful) > 1e-9 {
		t.Fatalf("reconfigured %+v\nconfigured from the start %+v", wa, wb)
	}
	// The criterion's evidence is on the same decayed sums, with its verdict.
	e := wa.Evidence
	if abs(e.Observations-(wa.DecayedHelpful+wa.DecayedHarmful)) > 1e-9 || !(e.Low <= e.SuccessRate && e.SuccessRate <= e.High) ||
		e.Verdict != "deprecated" || !strings.Contains(strings.Join(wa.Why, "\n"), "verdict deprecated is") {
		t.Errorf("criterion evidence %+v\nwhy %q", e, wa.Why)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestConfigurationSeenByTheNextFold: a model that folded events from a
// store without a configuration folds the event after a
// learning.configured/v1 under the new configuration, whether the change
// comes in the same batch, in a later one, or in a later folder; the store
// equals the one a fresh model folds.
func TestConfigurationSeenByTheNextFold(t *testing.T) {
	var evs []*events.Event
	add := func(typ string, p events.Payload) {
		ev, err := events.New(typ, "", "test", day(float64(len(evs))*0.001), p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
	}
	obs := &events.PatternObserved{Content: "Split by file type", Success: true}
	add("pattern.observed/v1", obs)
	add("pattern.observed/v1", obs)
	add("learning.configured/v1", configured(t, `{"maturityConfig": {"minHelpful": 3}}`))
	add("pattern.observed/v1", obs)
	add("pattern.observed/v1", obs)
	fold := func(m *learning.Model, batches ...[]*events.Event) learning.PatternView {
		t.Helper()
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for _, b := range batches {
			if poison, err := projector.FoldEvents(st, []projector.Model{m}, b); err != nil || len(poison) > 0 {
				t.Fatalf("fold: %v %v", err, poison)
			}
		}
		p, ok, err := m.Pattern(st.Model(learning.ModelName), events.DefaultProject, obs.Content, day(1))
		if err != nil || !ok {
			t.Fatalf("pattern: %v %v", ok, err)
		}
		return p
	}
	fresh := func() *learning.Model {
		m, err := learning.New(learning.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	want := fold(fresh(), evs)
	if want.State != learning.Proven {
		t.Fatalf("under minHelpful 3 after 4 successes: %s", want.State)
	}
	m := fresh()
	for name, batches := range map[string][][]*events.Event{
		"one batch":          {evs},
		"change in batch 2":  {evs[:2], evs[2:]},
		"change ends batch":  {evs[:3], evs[3:]},
		"event after event":  {evs[:1], evs[1:2], evs[2:3], evs[3:4], evs[4:]},
		"again, same model":  {evs[:2], evs[2:]},
		"change starts last": {evs[:2], evs[2:4], evs[4:]},
	} {
		got := fold(m, batches...)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s:\n%s\nwant\n%s", name, g, w)
		}
	}
}
