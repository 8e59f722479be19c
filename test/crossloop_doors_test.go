package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// TestEventsOfALoopNeverStartedAreRefused: an iteration, a pattern
// applied, an injection recorded on and the completion of a loop never
// started (a mistyped id) are refused: 404 naming the loop over the API
// and MCP, and, published raw, dead-lettered with that reason; nothing is
// recorded on the ghost (no loop runs forever without a task) and only
// started loops count in the metrics.
func TestEventsOfALoopNeverStartedAreRefused(t *testing.T) {
	n, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	ghost := "ralph-ghost-0000abcd"
	doc, err := json.Marshal(json.RawMessage(registryDoc(1)))
	if err != nil {
		t.Fatal(err)
	}
	if r := pipeReq(t, nc, "lore.api.patterns.import", `{"args":{"document":`+string(doc)+`}}`); r.code != "" {
		t.Fatalf("import a pattern: %s %s", r.code, r.msg)
	}
	const pat = "pat-error-imp0-000"
	for _, c := range []struct{ endpoint, tool, args string }{
		{"loop.complete", "loop_complete", fmt.Sprintf(`{"loop_id":%q,"outcome":"success","iterations":9}`, ghost)},
		{"loop.iterate", "loop_iterate", fmt.Sprintf(`{"loop_id":%q,"iteration":1,"tests_passed":3}`, ghost)},
		{"loop.apply", "loop_apply", fmt.Sprintf(`{"loop_id":%q,"pattern_id":%q,"success":true}`, ghost, pat)},
		{"patterns.inject", "patterns_inject", fmt.Sprintf(`{"loop_id":%q}`, ghost)},
	} {
		r := pipeReq(t, nc, "lore.api."+c.endpoint, `{"args":`+c.args+`}`)
		if r.code != "404" || !strings.Contains(r.msg, ghost) {
			t.Errorf("API %s: %s %q, want 404 naming %s", c.endpoint, r.code, r.msg, ghost)
		}
		var args map[string]any
		_ = json.Unmarshal([]byte(c.args), &args)
		text, isErr := mcpCall(t, cs, c.tool, args)
		if !isErr || !strings.Contains(text, "code 404") || !strings.Contains(text, ghost) {
			t.Errorf("MCP %s: %v %q", c.tool, isErr, text)
		}
	}
	// A started loop completes; the raw door's events of the ghost are
	// dead-lettered.
	if r := pipeReq(t, nc, "lore.api.loop.start", `{"args":{"loop_id":"ralph-real-00000001","task":"Fix the build","category":"debugging"}}`); r.code != "" {
		t.Fatalf("start: %s %s", r.code, r.msg)
	}
	if r := pipeReq(t, nc, "lore.api.loop.complete", `{"args":{"loop_id":"ralph-real-00000001","outcome":"success","iterations":3}}`); r.code != "" {
		t.Fatalf("complete: %s %s", r.code, r.msg)
	}
	var seqs []uint64
	for i, c := range []struct{ typ, data string }{
		{"loop.completed/v1", fmt.Sprintf(`{"loop_id":%q,"outcome":"success","iterations":9}`, ghost)},
		{"loop.iteration/v1", fmt.Sprintf(`{"loop_id":%q,"iteration":1}`, ghost)},
		{"pattern.applied/v1", fmt.Sprintf(`{"loop_id":%q,"pattern_id":%q,"success":true}`, ghost, pat)},
		{"loop.injected/v1", fmt.Sprintf(`{"loop_id":%q,"pattern_ids":[%q]}`, ghost, pat)},
	} {
		id := fmt.Sprintf("raw-ghost-%d", i)
		s, err := events.SubjectFor(&events.Event{Type: c.typ, Project: "default", Subject: ghost})
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"id":%q,"type":%q,"source":"raw","subject":%q,"time":"2026-01-02T10:00:00Z","project":"default","data":%s}`, id, c.typ, ghost, c.data)
		seqs = append(seqs, rawAppend(t, nc, s, id, body).Seq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, seqs[len(seqs)-1]); err != nil {
		t.Fatal(err)
	}
	st, err := n.JS.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		dl, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, seq))
		if err != nil {
			t.Errorf("no dead letter of the raw event at seq %d: %v", seq, err)
			continue
		}
		if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, ghost) || !strings.Contains(reason, "never started") {
			t.Errorf("seq %d: dead-letter reason %q does not name the loop", seq, reason)
		}
	}
	if r := pipeReq(t, nc, "lore.api.loop.show", fmt.Sprintf(`{"args":{"id":%q}}`, ghost)); r.code != "404" {
		t.Errorf("the ghost loop is recorded: %s %s", r.code, r.body)
	}
	m := pipeReq(t, nc, "lore.api.patterns.metrics", `{}`)
	var res struct {
		Metrics struct {
			Benefit struct {
				Without int `json:"loops_without_pattern_injection"`
			} `json:"cross_loop_benefit"`
		} `json:"effectiveness_metrics"`
	}
	if err := json.Unmarshal(m.body, &res); err != nil {
		t.Fatalf("metrics %s: %v", m.body, err)
	}
	if res.Metrics.Benefit.Without != 1 {
		t.Errorf("loops without injection = %d, want 1 (the started loop only): %s", res.Metrics.Benefit.Without, m.body)
	}
}

// TestCrossLoopConfigAtEveryDoor: patterns.configure refuses an unknown
// key with 400 naming it over the API and MCP, a raw crossloop.configured
// with it is dead-lettered naming it, and a configuration set through the
// API decides injection (injection.include_*, injection.enabled).
func TestCrossLoopConfigAtEveryDoor(t *testing.T) {
	n, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	bad := `{"injection":{"top_k":4}}`
	if r := pipeReq(t, nc, "lore.api.patterns.configure", `{"args":{"config":`+bad+`}}`); r.code != "400" || !strings.Contains(r.msg, `"injection.top_k"`) {
		t.Errorf("API: %s %q", r.code, r.msg)
	}
	var badArgs map[string]any
	_ = json.Unmarshal([]byte(`{"config":`+bad+`}`), &badArgs)
	if text, isErr := mcpCall(t, cs, "patterns_configure", badArgs); !isErr || !strings.Contains(text, "code 400") || !strings.Contains(text, `injection.top_k`) {
		t.Errorf("MCP: %v %q", isErr, text)
	}
	subj := events.AggregateSubject("default", "crossloop-config", events.ConfigAggregate)
	ack := rawAppend(t, nc, subj, "raw-config-1", `{"id":"raw-config-1","type":"crossloop.configured/v1","source":"raw","subject":"config","time":"2026-01-02T10:00:00Z","project":"default","data":{"config":`+bad+`}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}
	st, err := n.JS.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, ack.Seq))
	if err != nil {
		t.Fatalf("no dead letter of the raw configuration: %v", err)
	}
	if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, "injection.top_k") {
		t.Errorf("dead-letter reason %q does not name the key", reason)
	}

	// A loop teaches the null-check fix; injection follows the configuration.
	for _, c := range []struct{ subject, body string }{
		{"lore.api.loop.start", `{"args":{"loop_id":"ralph-cfg-00000001","task":"Fix TypeError null user in validation","category":"debugging"}}`},
		{"lore.api.loop.iterate", `{"args":{"loop_id":"ralph-cfg-00000001","iteration":1,"error_type":"TypeError","error_message":"Cannot read property 'email' of null","tests_passed":1,"tests_failed":1}}`},
		{"lore.api.loop.iterate", `{"args":{"loop_id":"ralph-cfg-00000001","iteration":2,"fix_description":"Added null check for user object","tests_passed":2,"tests_failed":0}}`},
		{"lore.api.loop.complete", `{"args":{"loop_id":"ralph-cfg-00000001","outcome":"success","iterations":2}}`},
	} {
		if r := pipeReq(t, nc, c.subject, c.body); r.code != "" {
			t.Fatalf("%s: %s %s", c.subject, r.code, r.msg)
		}
	}
	inject := func() []string {
		t.Helper()
		r := pipeReq(t, nc, "lore.api.patterns.inject", `{"args":{"task":"Fix TypeError null user in validation","category":"debugging"}}`)
		var res struct {
			Result struct {
				Patterns []struct {
					Pattern struct {
						Type string `json:"type"`
					} `json:"pattern"`
				} `json:"patterns"`
			} `json:"result"`
		}
		if err := json.Unmarshal(r.body, &res); err != nil || r.code != "" {
			t.Fatalf("inject: %s %s %v", r.code, r.body, err)
		}
		var types []string
		for _, p := range res.Result.Patterns {
			types = append(types, p.Pattern.Type)
		}
		return types
	}
	if got := inject(); !contains(got, "error") {
		t.Fatalf("default configuration injects %v, want an error pattern", got)
	}
	configure := func(doc string) {
		t.Helper()
		if r := pipeReq(t, nc, "lore.api.patterns.configure", `{"args":{"config":`+doc+`}}`); r.code != "" {
			t.Fatalf("configure %s: %s %s", doc, r.code, r.msg)
		}
	}
	configure(`{"injection":{"include_error_patterns":false}}`)
	if got := inject(); contains(got, "error") || len(got) == 0 {
		t.Errorf("include_error_patterns false: injected %v", got)
	}
	configure(`"ralph:\n  cross_loop_learning:\n    injection:\n      enabled: false\n"`) // a YAML file's text
	if got := inject(); len(got) != 0 {
		t.Errorf("injection disabled: injected %v", got)
	}
	r := pipeReq(t, nc, "lore.api.patterns.config", `{}`)
	if !strings.Contains(string(r.body), `"enabled":false`) || !strings.Contains(string(r.body), `"include_error_patterns":true`) {
		t.Errorf("config after the YAML text (keys over the defaults): %s", r.body)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestLoopShowAndImportTypeOverAPIAndMCP: loop.show and patterns.import
// with a type answer alike over the NATS API and MCP.
func TestLoopShowAndImportTypeOverAPIAndMCP(t *testing.T) {
	_, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	doc := `{"version":"1.0.0","pattern_registry":{
	  "error_patterns":[{"pattern_id":"pat-error-null-user-001","error_signature":{"error_type":"TypeError","error_pattern":"Cannot read property '.*' of null"},
	    "fix_approach":{"description":"Add a null check before reading the user","fix_category":"add_null_check"},"success_rate":0.9,"usage_count":10}],
	  "anti_patterns":[{"pattern_id":"pat-anti-sleep-001","approach_description":"Sleep before the assertion","failure_mode":"incorrect_fix","failure_rate":0.9,"occurrence_count":6}]}}`
	r := pipeReq(t, nc, "lore.api.patterns.import", `{"args":{"document":`+doc+`,"type":"anti"}}`)
	var res struct {
		Result struct {
			Patterns int `json:"patterns"`
			Existing int `json:"existing"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || r.code != "" || res.Result.Patterns != 1 {
		t.Fatalf("API import type anti: %s %s %v", r.code, r.body, err)
	}
	var docArgs map[string]any
	_ = json.Unmarshal([]byte(`{"document":`+doc+`}`), &docArgs)
	text, isErr := mcpCall(t, cs, "patterns_import", docArgs)
	if isErr || !strings.Contains(text, `"patterns":1`) || !strings.Contains(text, `"existing":1`) {
		t.Errorf("MCP import of the whole document after the anti-pattern: %v %s", isErr, text)
	}
	text, isErr = mcpCall(t, cs, "patterns_import", docArgs)
	if isErr || !strings.Contains(text, `"patterns":0`) || !strings.Contains(text, `"existing":2`) {
		t.Errorf("MCP re-import: %v %s", isErr, text)
	}
	if r := pipeReq(t, nc, "lore.api.patterns.import", `{"args":{"document":`+doc+`,"type":"bogus"}}`); r.code != "400" || !strings.Contains(r.msg, `"type"`) {
		t.Errorf("type bogus: %s %q", r.code, r.msg)
	}
	// A pattern merged into another at import is known by its content: a
	// re-import appends nothing.
	twin := `{"version":"1.0.0","pattern_registry":{"error_patterns":[{"pattern_id":"pat-error-null-user-009","error_signature":{"error_type":"TypeError","error_pattern":"Cannot read property '.*' of null"},
	    "fix_approach":{"description":"Guard the user against null before reading it","fix_category":"add_null_check"},"success_rate":0.5,"usage_count":4}]}}`
	for i, want := range []string{`"patterns":1`, `"patterns":0`} {
		before, _ := ifcStats(t, nc)
		r := pipeReq(t, nc, "lore.api.patterns.import", `{"args":{"document":`+twin+`}}`)
		after, _ := ifcStats(t, nc)
		if r.code != "" || !strings.Contains(string(r.body), want) || (i == 1 && after != before) {
			t.Errorf("import %d of a merged twin: %s %s, %d events appended", i+1, r.code, r.body, after-before)
		}
	}
	if r := pipeReq(t, nc, "lore.api.patterns.show", `{"args":{"id":"pat-error-null-user-001"}}`); !strings.Contains(string(r.body), `"usage_count":14`) {
		t.Errorf("the twin merged once: %s", r.body)
	}

	for _, c := range []struct{ subject, body string }{
		{"lore.api.loop.start", `{"args":{"loop_id":"ralph-show-00000001","task":"Fix the null user","category":"debugging"}}`},
		{"lore.api.patterns.inject", `{"args":{"loop_id":"ralph-show-00000001"}}`},
		{"lore.api.loop.apply", `{"args":{"loop_id":"ralph-show-00000001","pattern_id":"pat-error-null-user-001","success":true,"iteration":3}}`},
	} {
		if r := pipeReq(t, nc, c.subject, c.body); r.code != "" {
			t.Fatalf("%s: %s %s", c.subject, r.code, r.msg)
		}
	}
	r = pipeReq(t, nc, "lore.api.loop.show", `{"args":{"id":"ralph-show-00000001"}}`)
	if r.code != "" || !strings.Contains(string(r.body), `"pattern_id":"pat-error-null-user-001"`) || !strings.Contains(string(r.body), `"iteration_used":3`) {
		t.Errorf("API loop.show: %s %s", r.code, r.body)
	}
	text, isErr = mcpCall(t, cs, "loop_show", map[string]any{"id": "ralph-show-00000001"})
	if isErr || !strings.Contains(text, `"iteration_used":3`) || !strings.Contains(text, `"successful":true`) {
		t.Errorf("MCP loop_show: %v %s", isErr, text)
	}
	if r := pipeReq(t, nc, "lore.api.loop.show", `{"args":{"id":"ralph-none-00000000"}}`); r.code != "404" || !strings.Contains(r.msg, "ralph-none-00000000") {
		t.Errorf("unknown loop: %s %q", r.code, r.msg)
	}
}
