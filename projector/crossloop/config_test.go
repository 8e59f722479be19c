package crossloop_test

import (
	"errors"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestParseConfigDoors: the block, cross_loop_learning and the seed's
// aiwg.yml (YAML, other settings ignored) read alike; an unknown key or an
// out-of-range value is refused naming it.
func TestParseConfigDoors(t *testing.T) {
	yml := "ralph:\n  max_iterations: 10\n  cross_loop_learning:\n    injection:\n      top_k_patterns: 7\n"
	for _, doc := range []string{
		`{"injection":{"top_k_patterns":7}}`,
		`{"cross_loop_learning":{"injection":{"top_k_patterns":7}}}`,
		`{"ralph":{"other":1,"cross_loop_learning":{"injection":{"top_k_patterns":7}}}}`,
	} {
		c, err := crossloop.ParseConfig([]byte(doc))
		if err != nil || c.TopK != 7 || c.MaxInjected != 10 || c.SimilarityThreshold != 0.8 {
			t.Errorf("%s: %+v %v", doc, c, err)
		}
	}
	conv, err := crossloop.ConfigJSON([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := crossloop.ParseConfig(conv); err != nil || c.TopK != 7 {
		t.Errorf("yaml: %+v %v", c, err)
	}
	quoted, _ := json.Marshal(yml) // a file's text as a string (API, MCP)
	if c, err := crossloop.ParseConfig(quoted); err != nil || c.TopK != 7 {
		t.Errorf("yaml text: %+v %v", c, err)
	}
	for doc, name := range map[string]string{
		`{"injection":{"top_k":7}}`:                           `"injection.top_k"`,
		`{"injections":{}}`:                                   `"injections"`,
		`{"extraction":{"similarity_threshold":0}}`:           `"extraction.similarity_threshold"`,
		`{"injection":{"min_success_rate":-0.1}}`:             `"injection.min_success_rate"`,
		`{"extraction":{"min_usage_count_for_evaluation":0}}`: `"extraction.min_usage_count_for_evaluation"`,
		`{"pruning":{"max_age_days":-1}}`:                     `"pruning.max_age_days"`,
		`{"ralph":{"max_iterations":3}}`:                      `cross_loop_learning`,
	} {
		_, err := crossloop.ParseConfig([]byte(doc))
		if !errors.Is(err, crossloop.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want a refusal naming %s", doc, err, name)
		}
	}
}

func configured(b *builder, doc string) {
	b.add("crossloop.configured/v1", &events.CrossloopConfigured{Config: json.RawMessage(doc)})
}

// TestConfigIsFolded: the configuration in force at each event decides:
// no extraction while extraction is disabled, no templates when
// extract_code_templates is false, and the stored configuration is the
// one the log set (every replica and replay folds with it).
func TestConfigIsFolded(t *testing.T) {
	b := &builder{t: t, at: t0}
	configured(b, `{"extraction":{"enabled":false}}`)
	off := nullLoop(b, 1, "", false)
	configured(b, `{"extraction":{"extract_code_templates":false},"injection":{"top_k_patterns":2}}`)
	on := nullLoop(b, 2, "", false)
	_, r := fold(t, b.evs)
	l, _, err := crossloop.LoadLoop(r, off)
	if err != nil || len(l.Extracted) != 0 {
		t.Errorf("extraction disabled: loop extracted %+v (%v)", l.Extracted, err)
	}
	l, _, err = crossloop.LoadLoop(r, on)
	if err != nil || len(l.Extracted) == 0 {
		t.Fatalf("extraction enabled: nothing extracted (%v)", err)
	}
	ps, err := crossloop.List(r, crossloop.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Type == crossloop.TypeTemplate {
			t.Errorf("template %s extracted with extract_code_templates false", p.ID)
		}
	}
	c, err := crossloop.New(crossloop.Config{}).ConfigAt(r)
	if err != nil || c.TopK != 2 || !*c.ExtractionEnabled || *c.ExtractTemplates {
		t.Errorf("config in force: %+v %v", c, err)
	}
}

// TestSimilarityThresholdChangeRelists: a lower threshold set by an event
// re-lists the registry's signatures, so a candidate similar enough under
// the new threshold merges into the pattern listed under the old one.
func TestSimilarityThresholdChangeRelists(t *testing.T) {
	loop := func(b *builder, i int, msg string) string {
		id := crossloop.LoopIDWith("threshold loop", [4]byte{byte(i), 7, 7, 7})
		b.add("loop.started/v1", &events.LoopStarted{LoopID: id, Task: "Fix the parser", Category: "debugging"})
		b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 1, ErrorType: "ParseError", ErrorMessage: msg, TestsPassed: ip(1), TestsFailed: ip(1)})
		b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 2, FixDescription: "Escaped the delimiter before splitting the line", TestsPassed: ip(2), TestsFailed: ip(0)})
		b.add("loop.completed/v1", &events.LoopCompleted{LoopID: id, Outcome: "success", Iterations: 2})
		return id
	}
	count := func(evs []*events.Event) int {
		_, r := fold(t, evs)
		ps, err := crossloop.List(r, crossloop.ListFilter{Type: crossloop.TypeError})
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}
	b := &builder{t: t, at: t0}
	loop(b, 1, "unexpected token in the header line of the input file")
	configured(b, `{"extraction":{"similarity_threshold":0.3}}`)
	loop(b, 2, "unexpected token in the header line of the config file")
	if n := count(b.evs); n != 1 {
		t.Errorf("threshold 0.3 set after the first pattern: %d error patterns, want 1 (merged)", n)
	}
	b2 := &builder{t: t, at: t0}
	loop(b2, 1, "unexpected token in the header line of the input file")
	loop(b2, 2, "unexpected token in the header line of the config file")
	if n := count(b2.evs); n != 2 {
		t.Errorf("default threshold: %d error patterns, want 2 (too different to merge)", n)
	}
}

// TestBadConfigEventIsPoison: a configuration event the check refuses
// (the raw door) is poison naming the key; the configuration is unchanged.
func TestBadConfigEventIsPoison(t *testing.T) {
	b := &builder{t: t, at: t0}
	configured(b, `{"injection":{"top_k_patterns":3}}`)
	configured(b, `{"injection":{"top_k":9}}`)
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	poison, err := projector.FoldEvents(st, []projector.Model{crossloop.New(crossloop.Config{})}, b.evs)
	if err != nil || len(poison) != 1 || !strings.Contains(poison[0].Error(), `"injection.top_k"`) {
		t.Fatalf("poison %v, err %v", poison, err)
	}
	c, err := crossloop.New(crossloop.Config{}).ConfigAt(st.Model(crossloop.ModelName))
	if err != nil || c.TopK != 3 {
		t.Errorf("config after a refused event: %+v %v", c, err)
	}
}
