package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
)

// TestLearningStorageViews records through the CLI what the seed's storage
// interfaces hold, then asks each view from the three doors — the CLI, the
// NATS API and MCP — and gets the same answers: feedback by criterion and
// by bead (implicit from outcomes and explicit), a bead's raw errors (all,
// unresolved), patterns by tag, and the standalone strategy extraction,
// which records nothing.
func TestLearningStorageViews(t *testing.T) {
	t.Parallel()
	url := cliNode(t)
	bg := context.Background()
	run := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, bg, stdin, append([]string{"--nats", url}, args...)...)
		if code != 0 {
			t.Fatalf("lore %v: exit %d, out %q, err %q", args, code, out, errs)
		}
		return out
	}
	run("", "outcome", "bd-1", "--success", "--duration", "3m", "--retries", "0", "--errors", "0", "--criteria", "type_safe,no_bugs,type_safe")
	run("", "outcome", "bd-2", "--failed", "--duration", "40m", "--retries", "2", "--errors", "3", "--criteria", "type_safe")
	run("", "learning", "feedback", "type_safe", "--type", "harmful", "--value", "0.5", "--bead", "bd-1", "--context", "broke the build")
	run("", "learning", "feedback", "no_bugs", "--type", "helpful", "--value", "0.9")
	var first struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(run("", "--json", "errors", "record", "bd-1", "--type", "validation", "--message", "first")), &first); err != nil || first.EventID == "" {
		t.Fatalf("errors record: %v %+v", err, first)
	}
	run("", "errors", "record", "bd-1", "--type", "timeout", "--message", "second")
	run("", "errors", "record", "bd-9", "--type", "timeout", "--message", "other bead")
	run("", "errors", "resolve", first.EventID)
	run("", "maturity", "observe", "--content", "Split by file type", "--success", "--tag", "auth", "--tag", "ui")
	run("", "maturity", "observe", "--content", "Split by feature", "--success", "--tag", "ui")
	run("", "maturity", "observe", "--content", "One file per subtask", "--failed")

	// The three doors: the CLI (--json), the API, MCP. Each answers
	// (group, name, args) with the endpoint's JSON.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	viaAPI := func(name string, args any) string {
		req, err := api.NewRequest(args)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		raw, err := api.NewClient(nc).CallRaw(ctx, "learning", name, req)
		if err != nil {
			t.Fatalf("API learning.%s %v: %v", name, args, err)
		}
		return string(raw)
	}
	type view struct {
		name string
		args map[string]any
		cli  []string
	}
	views := []view{
		{"feedback_by_criterion", map[string]any{"criterion": "type_safe"}, []string{"learning", "feedback-list", "--criterion", "type_safe"}},
		{"feedback_by_bead", map[string]any{"bead_id": "bd-1"}, []string{"learning", "feedback-list", "--bead", "bd-1"}},
		{"errors", map[string]any{"bead_id": "bd-1"}, []string{"errors", "list", "bd-1"}},
		{"errors", map[string]any{"bead_id": "bd-1", "unresolved": true}, []string{"errors", "list", "bd-1", "--unresolved"}},
		{"patterns", map[string]any{"tag": "ui"}, []string{"maturity", "list", "--tag", "ui"}},
		{"patterns", map[string]any{"offset": 1, "limit": 1}, []string{"maturity", "list", "--offset", "1", "--limit", "1"}},
		{"feedback_by_criterion", map[string]any{"criterion": "type_safe", "offset": 1, "limit": 1},
			[]string{"learning", "feedback-list", "--criterion", "type_safe", "--offset", "1", "--limit", "1"}},
		{"extract", map[string]any{"text": "We'll split by file type, one file per subtask"},
			[]string{"learning", "extract", "We'll split by file type, one file per subtask"}},
	}
	var mcpIn []string
	mcpIn = append(mcpIn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, v := range views {
		args, _ := json.Marshal(v.args)
		mcpIn = append(mcpIn, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"learning_%s","arguments":%s}}`, i+1, v.name, args))
	}
	code, mcpOut, errs := cli(t, bg, strings.Join(mcpIn, "\n")+"\n", "--nats", url, "mcp")
	if code != 0 {
		t.Fatalf("lore mcp: exit %d: %s", code, errs)
	}
	viaMCP := map[int]string{}
	for _, ln := range strings.Split(strings.TrimSpace(mcpOut), "\n") {
		var r struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Structured json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatalf("mcp line %q: %v", ln, err)
		}
		if r.Result.IsError {
			t.Fatalf("mcp tool call %d failed: %s", r.ID, ln)
		}
		if len(r.Result.Content) > 0 {
			viaMCP[r.ID] = r.Result.Content[0].Text
		}
	}

	answers := map[string]any{}
	for i, v := range views {
		cliOut := run("", append([]string{"--json"}, v.cli...)...)
		apiOut := viaAPI(v.name, v.args)
		var a, b, c any
		if err := json.Unmarshal([]byte(cliOut), &a); err != nil {
			t.Fatalf("%s CLI: %v: %q", v.name, err, cliOut)
		}
		if err := json.Unmarshal([]byte(apiOut), &b); err != nil {
			t.Fatalf("%s API: %v", v.name, err)
		}
		if err := json.Unmarshal([]byte(viaMCP[i+1]), &c); err != nil {
			t.Fatalf("%s MCP: %v: %q", v.name, err, viaMCP[i+1])
		}
		a, b, c = undecayed(a), undecayed(b), undecayed(c)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		jc, _ := json.Marshal(c)
		if string(ja) != string(jb) || string(jb) != string(jc) {
			t.Errorf("%s %v: the doors differ:\nCLI %s\nAPI %s\nMCP %s", v.name, v.args, ja, jb, jc)
		}
		answers[fmt.Sprintf("%s %v", v.name, v.args)] = b
	}

	type fe struct {
		ID, Criterion, Type, Context, From string
		BeadID                             string  `json:"bead_id"`
		RawValue                           float64 `json:"raw_value"`
		EventID                            string  `json:"event_id"`
	}
	var byCrit, byBead []fe
	json.Unmarshal([]byte(viaAPI("feedback_by_criterion", map[string]any{"criterion": "type_safe"})), &byCrit)
	json.Unmarshal([]byte(viaAPI("feedback_by_bead", map[string]any{"bead_id": "bd-1"})), &byBead)
	// type_safe: bd-1's outcome (helpful, named twice, fed once), bd-2's
	// (harmful), the explicit harmful 0.5, in log order.
	if len(byCrit) != 3 || byCrit[0].From != "outcome" || byCrit[0].Type != "helpful" || byCrit[0].BeadID != "bd-1" ||
		byCrit[0].ID != byCrit[0].EventID+":type_safe" || byCrit[0].Context == "" ||
		byCrit[1].Type != "harmful" || byCrit[1].BeadID != "bd-2" ||
		byCrit[2].From != "feedback" || byCrit[2].Type != "harmful" || byCrit[2].RawValue != 0.5 || byCrit[2].Context != "broke the build" {
		t.Errorf("feedback by criterion type_safe: %+v", byCrit)
	}
	// bd-1: its outcome on type_safe and no_bugs, then the explicit one;
	// no_bugs' explicit feedback names no bead.
	if len(byBead) != 3 || byBead[0].Criterion != "type_safe" || byBead[1].Criterion != "no_bugs" || byBead[2].From != "feedback" {
		t.Errorf("feedback by bead bd-1: %+v", byBead)
	}
	type ee struct {
		ID, Message string
		Resolved    bool
	}
	var all, open []ee
	json.Unmarshal([]byte(viaAPI("errors", map[string]any{"bead_id": "bd-1"})), &all)
	json.Unmarshal([]byte(viaAPI("errors", map[string]any{"bead_id": "bd-1", "unresolved": true})), &open)
	if len(all) != 2 || all[0].ID != first.EventID || !all[0].Resolved || all[1].Message != "second" || all[1].ID == "" {
		t.Errorf("errors of bd-1: %+v", all)
	}
	if len(open) != 1 || open[0].Message != "second" {
		t.Errorf("unresolved errors of bd-1: %+v", open)
	}
	var tagged []struct{ Content string }
	json.Unmarshal([]byte(viaAPI("patterns", map[string]any{"tag": "ui"})), &tagged)
	if len(tagged) != 2 {
		t.Errorf("patterns tagged ui: %+v", tagged)
	}
	json.Unmarshal([]byte(viaAPI("patterns", map[string]any{"tag": "auth"})), &tagged)
	if len(tagged) != 1 || tagged[0].Content != "Split by file type" {
		t.Errorf("patterns tagged auth: %+v", tagged)
	}
	// Pages of the feedback, joined, are the whole feedback in log order;
	// a criterion's listing takes no bead.
	var fbWhole, fbJoined []fe
	json.Unmarshal([]byte(viaAPI("feedback_by_criterion", map[string]any{"criterion": "type_safe"})), &fbWhole)
	for off := 0; off < 4; off += 2 {
		var page []fe
		json.Unmarshal([]byte(viaAPI("feedback_by_criterion", map[string]any{"criterion": "type_safe", "offset": off, "limit": 2})), &page)
		fbJoined = append(fbJoined, page...)
	}
	if len(fbWhole) != 3 || fmt.Sprint(fbJoined) != fmt.Sprint(fbWhole) {
		t.Errorf("feedback in pages of 2: %+v, whole: %+v", fbJoined, fbWhole)
	}
	if req, _ := api.NewRequest(map[string]any{"criterion": "type_safe", "bead_id": "bd-1"}); true {
		if _, err := api.NewClient(nc).CallRaw(bg, "learning", "feedback_by_criterion", req); err == nil || !strings.Contains(err.Error(), "bead_id") {
			t.Errorf("feedback_by_criterion with a bead_id: %v, want the key named", err)
		}
	}
	// Pages of the listing, joined, are the whole listing in its order.
	var whole, joined []struct{ ID string }
	json.Unmarshal([]byte(viaAPI("patterns", map[string]any{})), &whole)
	for off := 0; off < 5; off += 2 {
		var page []struct{ ID string }
		json.Unmarshal([]byte(viaAPI("patterns", map[string]any{"offset": off, "limit": 2})), &page)
		joined = append(joined, page...)
	}
	if len(whole) != 3 || fmt.Sprint(joined) != fmt.Sprint(whole) {
		t.Errorf("patterns in pages of 2: %+v, whole: %+v", joined, whole)
	}
	var ex struct {
		Patterns   []string `json:"patterns"`
		PatternIDs []string `json:"pattern_ids"`
	}
	json.Unmarshal([]byte(viaAPI("extract", map[string]any{"text": "We'll split by file type, one file per subtask"})), &ex)
	if strings.Join(ex.Patterns, "|") != "Split by file type|One file per subtask" || len(ex.PatternIDs) != 2 {
		t.Errorf("extract: %+v", ex)
	}

	// Extraction records nothing; bad input is refused naming the field.
	before := run("", "--json", "stats")
	run("", "learning", "extract", "split by layer")
	if after := run("", "--json", "stats"); !sameTotal(before, after) {
		t.Errorf("extract appended events: %s -> %s", before, after)
	}
	for _, c := range [][]string{
		{"learning", "extract", "  "},
		{"learning", "feedback-list"},
		{"learning", "feedback-list", "--criterion", "a", "--bead", "b"},
		{"errors", "list", ""},
		{"maturity", "list", "--limit", "-1"},
	} {
		if code, _, errs := cli(t, bg, "", append([]string{"--nats", url}, c...)...); code != exitBadInput {
			t.Errorf("lore %v: exit %d (%s), want 2", c, code, errs)
		}
	}
	if code, _, errs := cli(t, bg, "", "--nats", url, "learning", "extract", "  "); !strings.Contains(errs, `"text"`) {
		t.Errorf("blank extract text: exit %d, err %q, want the field named", code, errs)
	}
	// The API names the field as the CLI does.
	req, _ := api.NewRequest(map[string]any{"offset": -2})
	if _, err := api.NewClient(nc).CallRaw(bg, "learning", "patterns", req); err == nil || !strings.Contains(err.Error(), `"offset"`) {
		t.Errorf("learning.patterns offset -2: %v, want the field named", err)
	}
}

// undecayed drops the decayed_* fields of pattern views (evaluated at each
// call's own now).
func undecayed(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = undecayed(x[i])
		}
	case map[string]any:
		for k := range x {
			// Decayed figures and the evidence (decayed counts) are
			// evaluated at each call's clock: they differ between doors
			// called one after another.
			if strings.HasPrefix(k, "decayed_") || strings.HasSuffix(k, "evidence") {
				delete(x, k)
			} else {
				x[k] = undecayed(x[k])
			}
		}
	}
	return v
}

func sameTotal(a, b string) bool {
	var x, y struct {
		Total uint64 `json:"total"`
	}
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && x.Total == y.Total
}

// TestInjectTypesAndScope: lore inject --types narrows cross-loop patterns
// (patterns.inject's types), --scope the knowledge scopes (knowledge.inject's
// scopes); a bad value or a flag of the other kind is refused (exit 2).
func TestInjectTypesAndScope(t *testing.T) {
	t.Parallel()
	url := cliNode(t)
	bg := context.Background()
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"inject", "--task", "fix the retry", "--types", "error,anti"}, 0},
		{[]string{"inject", "--task", "fix the retry", "--category", "debugging", "--types", "template"}, 0},
		{[]string{"inject", "--task", "add oauth login", "--scope", "global", "--scope", "stack:go"}, 0},
		{[]string{"inject", "--task", "fix the retry", "--types", "nonsense"}, exitBadInput},
		{[]string{"inject", "--task", "add oauth login", "--scope", "stack:two words"}, exitBadInput},
		{[]string{"inject", "--task", "x", "--types", "error", "--scope", "global"}, exitBadInput},
		{[]string{"inject", "--task", "x", "--top-k", "3"}, exitBadInput},
	} {
		code, out, errs := cli(t, bg, "", append([]string{"--nats", url, "--json"}, c.args...)...)
		if code != c.want {
			t.Errorf("lore %v: exit %d, want %d (out %q, err %q)", c.args, code, c.want, out, errs)
		}
	}
	// What each door was asked: the cross-loop reply has patterns, the
	// knowledge one a regime.
	_, out, _ := cli(t, bg, "", "--nats", url, "--json", "inject", "--task", "fix the retry", "--types", "error")
	if !strings.Contains(out, `"patterns"`) {
		t.Errorf("inject --types did not ask the cross-loop registry: %s", out)
	}
	_, out, _ = cli(t, bg, "", "--nats", url, "--json", "inject", "--task", "add oauth", "--scope", "global")
	if !strings.Contains(out, `"regime"`) {
		t.Errorf("inject --scope did not ask knowledge: %s", out)
	}
}
