package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/api"
	loremcp "github.com/loredev/lore/mcp"
)

// pipeReply is a raw API reply: its error code and message, or its body.
type pipeReply struct {
	code, msg string
	body      []byte
}

func pipeReq(t *testing.T, nc *nats.Conn, subject, body string) pipeReply {
	t.Helper()
	m := ifcRequest(t, nc, subject, body)
	return pipeReply{code: m.Header.Get(micro.ErrorCodeHeader), msg: m.Header.Get(micro.ErrorHeader), body: m.Data}
}

// mcpSession connects an MCP client in memory to a lore MCP server calling
// the API over nc.
func mcpSession(t *testing.T, nc *nats.Conn) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv, err := loremcp.NewServer(loremcp.Config{Caller: api.NewClient(nc)})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, tool string, args any) (text string, isErr bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestCommandDataIsRequiredAtEveryDoor sends the same incomplete data to
// record.event and to the command that appends it, over the NATS API and
// MCP: each is refused with record.event's error, and nothing is appended.
func TestCommandDataIsRequiredAtEveryDoor(t *testing.T) {
	_, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	cases := []struct {
		name, typ, subject, tool string
		data                     string
		want                     string
	}{
		{"outcome without duration", "outcome.recorded/v1", "lore.api.learning.record_outcome", "record_outcome",
			`{"bead_id":"bd-x","retry_count":0,"success":true}`, `field "data.duration_ms": is required`},
		{"outcome with null duration", "outcome.recorded/v1", "lore.api.learning.record_outcome", "record_outcome",
			`{"bead_id":"bd-x","duration_ms":null,"retry_count":0,"success":true}`, `field "data.duration_ms"`},
		{"outcome with bead and success only", "outcome.recorded/v1", "lore.api.learning.record_outcome", "record_outcome",
			`{"bead_id":"x","success":true}`, `field "data.duration_ms": is required`},
		{"feedback without value", "feedback.recorded/v1", "lore.api.learning.record_feedback", "learning_record_feedback",
			`{"criterion":"c","type":"helpful"}`, `field "data.raw_value": is required`},
		{"loop completion without iterations", "loop.completed/v1", "lore.api.loop.complete", "loop_complete",
			`{"loop_id":"ralph-x-00000000","outcome":"success"}`, `field "data.iterations": is required`},
		{"knowledge without category", "knowledge.submitted/v1", "lore.api.knowledge.add", "add_knowledge",
			`{"lesson":"Run the schema tests before every release build"}`, `field "data.category": is required`},
		{"phase without number", "phase.completed/v1", "lore.api.phase.complete", "phase_complete",
			`{}`, `field "data.phase": is required`},
	}
	before, _ := ifcStats(t, nc)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := pipeReq(t, nc, "lore.api.record.event", fmt.Sprintf(`{"args":{"type":%q,"data":%s}}`, c.typ, c.data))
			if rec.code != "400" || !strings.Contains(rec.msg, c.want) {
				t.Fatalf("record.event: %s %q", rec.code, rec.msg)
			}
			want := rec.msg
			cmd := pipeReq(t, nc, c.subject, `{"args":`+c.data+`}`)
			if cmd.code != "400" || !strings.HasSuffix(want, cmd.msg) && !strings.HasSuffix(cmd.msg, strings.TrimPrefix(want, "append ")) {
				t.Errorf("%s: %s %q, want record.event's %q", c.subject, cmd.code, cmd.msg, want)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(c.data), &args); err != nil {
				t.Fatal(err)
			}
			text, isErr := mcpCall(t, cs, c.tool, args)
			if !isErr || !strings.Contains(text, c.want) || !strings.Contains(text, "code 400") {
				t.Errorf("MCP %s: error %v, %q", c.tool, isErr, text)
			}
		})
	}
	if after, _ := ifcStats(t, nc); after != before {
		t.Errorf("refused commands appended %d events", after-before)
	}
}

// TestUnknownArgumentsAndRequestKeysAreRefused: a misplaced argument of a
// command (patterns.prune's dry_run) or of a query, and an unknown key of
// the request itself, are refused with 400 naming the key; nothing runs.
func TestUnknownArgumentsAndRequestKeysAreRefused(t *testing.T) {
	_, nc := ifcServe(t)
	before, _ := ifcStats(t, nc)
	for _, c := range []struct{ subject, body, key string }{
		{"lore.api.patterns.prune", `{"args":{"dryrun":true}}`, "dryrun"},
		{"lore.api.patterns.prune", `{"args":{"DRY_RUN":true}}`, "DRY_RUN"},
		{"lore.api.patterns.prune", `{"dry_run":true}`, "dry_run"},
		{"lore.api.learning.weights", `{"args":{"criteria":"x"}}`, "criteria"},
		{"lore.api.learning.anti_patterns", `{"args":{"limit":3}}`, "limit"},
		{"lore.api.knowledge.list", `{"arg":{}}`, "arg"},
		{"lore.api.learning.record_outcome", `{"args":{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true,"sucess":false}}`, "sucess"},
	} {
		r := pipeReq(t, nc, c.subject, c.body)
		if r.code != "400" || !strings.Contains(r.msg, c.key+`"`) {
			t.Errorf("%s %s: %s %q, want 400 naming %q", c.subject, c.body, r.code, r.msg, c.key)
		}
	}
	if after, _ := ifcStats(t, nc); after != before {
		t.Errorf("refused requests appended %d events", after-before)
	}
}

// TestIdempotencyKeyAppendsOnceAndRepliesTheSame re-sends commands with the
// same idempotency key (a retry after a lost reply): one event each, and
// the same decision in both replies.
func TestIdempotencyKeyAppendsOnceAndRepliesTheSame(t *testing.T) {
	_, nc := ifcServe(t)
	before, _ := ifcStats(t, nc)
	for _, c := range []struct{ subject, args string }{
		{"lore.api.learning.record_outcome", `{"bead_id":"bd-retry","duration_ms":60000,"retry_count":0,"success":true}`},
		{"lore.api.knowledge.add", `{"lesson":"Pin the docker base image digest in CI builds","category":"tooling"}`},
	} {
		body := `{"args":` + c.args + `,"idempotency_key":"retry-` + c.subject[9:] + `"}`
		var replies [2]api.CommandReply
		for i := range replies {
			r := pipeReq(t, nc, c.subject, body)
			if r.code != "" {
				t.Fatalf("%s: %s %s", c.subject, r.code, r.msg)
			}
			if err := json.Unmarshal(r.body, &replies[i]); err != nil {
				t.Fatal(err)
			}
		}
		a, b := replies[0], replies[1]
		if a.Appended[0].ID != "retry-"+c.subject[9:] || b.Appended[0].ID != a.Appended[0].ID || !b.Appended[0].Duplicate {
			t.Errorf("%s: appended %+v then %+v", c.subject, a.Appended, b.Appended)
		}
		if string(a.Result) != string(b.Result) {
			t.Errorf("%s: replies differ:\n%s\n%s", c.subject, a.Result, b.Result)
		}
	}
	if after, _ := ifcStats(t, nc); after != before+2 {
		t.Errorf("%d events appended, want 2", after-before)
	}
	if r := pipeReq(t, nc, "lore.api.learning.weights", `{"idempotency_key":"k"}`); r.code != "400" {
		t.Errorf("a key on a query: %s %q", r.code, r.msg)
	}
	if r := pipeReq(t, nc, "lore.api.phase.complete", `{"args":{"phase":1},"idempotency_key":"has space"}`); r.code != "400" || !strings.Contains(r.msg, "idempotency_key") {
		t.Errorf("a key with a space: %s %q", r.code, r.msg)
	}
}

// TestIdempotencyKeyOfAnotherRequest: a key re-sent with the same request
// (its arguments in another key order and spacing) is a retry, answered
// as stored; re-sent with other arguments, another project or to another
// endpoint it is refused (422, naming the key) and nothing is appended:
// the second request is never answered with the first one's decision.
func TestIdempotencyKeyOfAnotherRequest(t *testing.T) {
	_, nc := ifcServe(t)
	first := pipeReq(t, nc, "lore.api.knowledge.add", `{"args":{"lesson":"Pin the docker base image digest in CI builds","category":"tooling"},"idempotency_key":"k-1"}`)
	if first.code != "" {
		t.Fatalf("add: %s %s", first.code, first.msg)
	}
	before, _ := ifcStats(t, nc)
	retry := pipeReq(t, nc, "lore.api.knowledge.add", `{"idempotency_key":"k-1","args":{ "category" : "tooling", "lesson":"Pin the docker base image digest in CI builds"}}`)
	var a, b api.CommandReply
	if retry.code != "" || json.Unmarshal(first.body, &a) != nil || json.Unmarshal(retry.body, &b) != nil ||
		string(a.Result) != string(b.Result) || !b.Appended[0].Duplicate {
		t.Fatalf("retry: %s %s %s, first %s", retry.code, retry.msg, retry.body, first.body)
	}
	for _, c := range []struct{ subject, body string }{
		{"lore.api.knowledge.add", `{"args":{"lesson":"Run the race detector on every pull request","category":"testing"},"idempotency_key":"k-1"}`},
		{"lore.api.knowledge.add", `{"args":{"lesson":"Pin the docker base image digest in CI builds","category":"tooling"},"project":"other","idempotency_key":"k-1"}`},
		{"lore.api.learning.record_outcome", `{"args":{"bead_id":"bd-1","duration_ms":1,"retry_count":0,"success":true},"idempotency_key":"k-1"}`},
	} {
		r := pipeReq(t, nc, c.subject, c.body)
		if r.code != "422" || !strings.Contains(r.msg, `"idempotency_key"`) || !strings.Contains(r.msg, "k-1") {
			t.Errorf("%s %s: %s %q %s; want 422 naming the key", c.subject, c.body, r.code, r.msg, r.body)
		}
	}
	if after, _ := ifcStats(t, nc); after != before {
		t.Errorf("%d events appended by the retry and the refused requests, want 0", after-before)
	}
	// A key changes nothing of how bad arguments are refused.
	for _, args := range []string{`[1,2]`, `{"lesson":7}`, `{"bogus":1}`} {
		plain := pipeReq(t, nc, "lore.api.knowledge.add", `{"args":`+args+`}`)
		keyed := pipeReq(t, nc, "lore.api.knowledge.add", `{"args":`+args+`,"idempotency_key":"k-bad"}`)
		if plain.code == "" || keyed.code != plain.code || keyed.msg != plain.msg {
			t.Errorf("args %s: %s %q without a key, %s %q with one", args, plain.code, plain.msg, keyed.code, keyed.msg)
		}
	}
	if r := pipeReq(t, nc, "lore.api.knowledge.list", `{"args":{"text":"race detector"}}`); r.code != "" || strings.Contains(string(r.body), "race detector") {
		t.Errorf("the refused lesson is listed: %s %s", r.code, r.body)
	}
}

// TestKnowledgeAddRepliesTheFoldsDecision: the reply of knowledge.add is
// what the knowledge fold decided (added, reinforced with the entry,
// rejected with layer and reason), equal to knowledge.submission's answer.
func TestKnowledgeAddRepliesTheFoldsDecision(t *testing.T) {
	_, nc := ifcServe(t)
	add := func(lesson string) map[string]any {
		t.Helper()
		r := pipeReq(t, nc, "lore.api.knowledge.add", fmt.Sprintf(`{"args":{"lesson":%q,"category":"testing"}}`, lesson))
		if r.code != "" {
			t.Fatalf("add: %s %s", r.code, r.msg)
		}
		var reply struct {
			Projected bool           `json:"projected"`
			Result    map[string]any `json:"result"`
		}
		if err := json.Unmarshal(r.body, &reply); err != nil || !reply.Projected {
			t.Fatalf("add reply %s: %v", r.body, err)
		}
		q := pipeReq(t, nc, "lore.api.knowledge.submission", fmt.Sprintf(`{"args":{"event_id":%q}}`, reply.Result["event_id"]))
		var folded map[string]any
		if err := json.Unmarshal(q.body, &folded); err != nil || fmt.Sprint(folded) != fmt.Sprint(reply.Result) {
			t.Errorf("reply %v, the fold decided %v (%s)", reply.Result, folded, q.msg)
		}
		return reply.Result
	}
	first := add("Run the api schema tests before every release build")
	if first["outcome"] != "added" {
		t.Fatalf("first: %v", first)
	}
	again := add("Run the api schema tests before every release build!")
	if again["outcome"] != "reinforced" || again["duplicate_of"] != first["id"] {
		t.Errorf("near-duplicate: %v", again)
	}
	bad := add("Use rm -rf to clean the build folder quickly")
	if bad["outcome"] != "rejected" || bad["reason"] == "" || bad["layer"] == nil {
		t.Errorf("dangerous: %v", bad)
	}
	r := pipeReq(t, nc, "lore.api.knowledge.add", `{"args":{"lesson":"Keep fixtures next to the tests that read them","category":"testing"},"no_wait":true}`)
	if !strings.Contains(string(r.body), `"outcome":"pending"`) || !strings.Contains(string(r.body), `"pending":true`) {
		t.Errorf("no_wait reply: %s", r.body)
	}
}

// TestPromoteDeprecatedPatternIsRefusedAtTheDoor: 409 before anything is
// appended, with the fold's own rule and message.
func TestPromoteDeprecatedPatternIsRefusedAtTheDoor(t *testing.T) {
	_, nc := ifcServe(t)
	for _, body := range []string{
		`{"args":{"content":"Split by file type","success":false}}`,
	} {
		if r := pipeReq(t, nc, "lore.api.learning.observe_pattern", body); r.code != "" {
			t.Fatalf("observe: %s %s", r.code, r.msg)
		}
	}
	if r := pipeReq(t, nc, "lore.api.learning.deprecate", `{"args":{"content":"Split by file type","reason":"conflicts"}}`); r.code != "" ||
		!strings.Contains(string(r.body), `"maturity":"deprecated"`) {
		t.Fatalf("deprecate: %s %s %s", r.code, r.msg, r.body)
	}
	before, _ := ifcStats(t, nc)
	r := pipeReq(t, nc, "lore.api.learning.promote", `{"args":{"content":"Split by file type","reason":"try"}}`)
	if r.code != "409" || !strings.Contains(r.msg, "Cannot promote a deprecated pattern") {
		t.Errorf("promote deprecated: %s %q", r.code, r.msg)
	}
	if after, _ := ifcStats(t, nc); after != before {
		t.Errorf("refused promote appended %d events", after-before)
	}
}

// TestRetriedCommandIsNotDecidedAgain: once a keyed command's event is
// folded, re-sending it decides nothing again — a quarantine or an error
// resolution would now be refused (409) if decided again — and replies what
// the fold decided, with nothing appended.
func TestRetriedCommandIsNotDecidedAgain(t *testing.T) {
	_, nc := ifcServe(t)
	var added struct {
		Result struct {
			ID string `json:"id"`
		} `json:"result"`
	}
	r := pipeReq(t, nc, "lore.api.knowledge.add", `{"args":{"lesson":"Run the api schema tests before every release build","category":"testing"}}`)
	if err := json.Unmarshal(r.body, &added); err != nil || added.Result.ID == "" {
		t.Fatalf("add: %s %s %v", r.code, r.body, err)
	}
	var rec struct {
		Result struct {
			EventID string `json:"event_id"`
		} `json:"result"`
	}
	r = pipeReq(t, nc, "lore.api.learning.record_error", `{"args":{"bead_id":"bd-7","error_type":"timeout","message":"tests hung"}}`)
	if err := json.Unmarshal(r.body, &rec); err != nil || rec.Result.EventID == "" {
		t.Fatalf("record_error: %s %s %v", r.code, r.body, err)
	}
	before, _ := ifcStats(t, nc)
	for _, c := range []struct{ subject, body string }{
		{"lore.api.knowledge.quarantine", fmt.Sprintf(`{"args":{"id":%q,"reason":"flaky"},"idempotency_key":"q-1"}`, added.Result.ID)},
		{"lore.api.learning.resolve_error", fmt.Sprintf(`{"args":{"error_id":%q},"idempotency_key":"res-1"}`, rec.Result.EventID)},
	} {
		var replies [3]api.CommandReply
		for i := range replies {
			r := pipeReq(t, nc, c.subject, c.body)
			if r.code != "" {
				t.Fatalf("%s try %d: %s %s", c.subject, i+1, r.code, r.msg)
			}
			if err := json.Unmarshal(r.body, &replies[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i, rep := range replies[1:] {
			if string(rep.Result) != string(replies[0].Result) || !rep.Appended[0].Duplicate || rep.Appended[0].Seq != replies[0].Appended[0].Seq {
				t.Errorf("%s try %d: %+v %s, first %+v %s", c.subject, i+2, rep.Appended, rep.Result, replies[0].Appended, replies[0].Result)
			}
		}
	}
	if after, _ := ifcStats(t, nc); after != before+2 {
		t.Errorf("%d events appended, want 2", after-before)
	}
}

// TestMCPPassesProjectAndIdempotencyKey: MCP tools take project (the
// request's scope, not an argument of the endpoint) and idempotency_key;
// a call re-sent with the same key appends once and answers the same.
func TestMCPPassesProjectAndIdempotencyKey(t *testing.T) {
	_, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	text, isErr := mcpCall(t, cs, "record_outcome", map[string]any{"bead_id": "bd-m", "duration_ms": 1000, "retry_count": 0,
		"success": true, "project": "web"})
	if isErr || !strings.Contains(text, `"helpful"`) {
		t.Fatalf("record_outcome with project: %s", text)
	}
	r := pipeReq(t, nc, "lore.api.learning.last_outcome", `{"args":{"bead_id":"bd-m"},"project":"web"}`)
	if r.code != "" {
		t.Fatalf("the outcome is not in project web: %s %s", r.code, r.msg)
	}
	before, _ := ifcStats(t, nc)
	args := map[string]any{"endpoint": "phase.complete", "args": map[string]any{"phase": 2}, "idempotency_key": "mcp-phase-2"}
	first, isErr := mcpCall(t, cs, "call", args)
	second, isErr2 := mcpCall(t, cs, "call", args)
	if isErr || isErr2 || !strings.Contains(first, `"mcp-phase-2"`) {
		t.Fatalf("call with a key: %s / %s", first, second)
	}
	var a, b api.CommandReply
	if json.Unmarshal([]byte(first), &a) != nil || json.Unmarshal([]byte(second), &b) != nil || string(a.Result) != string(b.Result) {
		t.Errorf("replies differ: %s / %s", first, second)
	}
	if after, _ := ifcStats(t, nc); after != before+1 {
		t.Errorf("%d events appended, want 1", after-before)
	}
}
