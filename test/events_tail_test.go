package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestEventsTailOverAPIAndMCP: events.tail answers the last N events of the
// wanted types (the filter applies before the count), pages forward from a
// sequence with next_seq, names bad input, and MCP answers the same.
func TestEventsTailOverAPIAndMCP(t *testing.T) {
	_, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("ralph-tail-%08d", i)
		if r := pipeReq(t, nc, "lore.api.loop.start", fmt.Sprintf(`{"args":{"loop_id":%q,"task":"Fix the build","category":"debugging"}}`, id)); r.code != "" {
			t.Fatalf("start %s: %s %s", id, r.code, r.msg)
		}
		if i <= 3 {
			if r := pipeReq(t, nc, "lore.api.loop.complete", fmt.Sprintf(`{"args":{"loop_id":%q,"outcome":"success","iterations":%d}}`, id, i)); r.code != "" {
				t.Fatalf("complete %s: %s %s", id, r.code, r.msg)
			}
		}
	}
	type answer struct {
		Events []struct {
			Seq   uint64 `json:"seq"`
			Event struct {
				Type    string `json:"type"`
				Subject string `json:"subject"`
			} `json:"event"`
		} `json:"events"`
		NextSeq uint64 `json:"next_seq"`
	}
	decode := func(b []byte) answer {
		var r answer
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		return r
	}
	// The last two completions, although starts were appended after them.
	r := pipeReq(t, nc, "lore.api.events.tail", `{"args":{"last":2,"types":["loop.completed"]}}`)
	if r.code != "" {
		t.Fatalf("tail: %s %s", r.code, r.msg)
	}
	got := decode(r.body)
	if len(got.Events) != 2 || got.Events[0].Event.Subject != "ralph-tail-00000002" || got.Events[1].Event.Subject != "ralph-tail-00000003" {
		t.Fatalf("last 2 completions: %s", r.body)
	}
	for _, e := range got.Events {
		if e.Event.Type != "loop.completed/v1" {
			t.Errorf("type %q in a completed-only tail", e.Event.Type)
		}
	}
	// Forward pages: 3 events from seq 1, then the next page from next_seq.
	first := decode(pipeReq(t, nc, "lore.api.events.tail", `{"args":{"from_seq":1,"limit":3}}`).body)
	if len(first.Events) != 3 || first.Events[0].Seq != 1 || first.Events[2].Seq != 3 || first.NextSeq != 4 {
		t.Fatalf("first page: %+v", first)
	}
	next := decode(pipeReq(t, nc, "lore.api.events.tail", fmt.Sprintf(`{"args":{"from_seq":%d,"limit":100}}`, first.NextSeq)).body)
	if len(next.Events) != 5 || next.Events[0].Seq != 4 || next.NextSeq != 9 {
		t.Fatalf("second page: %+v", next)
	}
	for _, bad := range []struct{ args, field string }{
		{`{"last":-1}`, `"last"`}, {`{"last":100000}`, `"last"`}, {`{"limit":5}`, `"limit"`},
		{`{"types":["nope.never"]}`, `"types"`}, {`{"bogus":1}`, "bogus"},
	} {
		if r := pipeReq(t, nc, "lore.api.events.tail", `{"args":`+bad.args+`}`); r.code != "400" || !strings.Contains(r.msg, bad.field) {
			t.Errorf("args %s: %s %q, want 400 naming %s", bad.args, r.code, r.msg, bad.field)
		}
	}
	if r := pipeReq(t, nc, "lore.api.events.tail", `{"at_seq":2}`); r.code != "400" {
		t.Errorf("tail at an audit point: %s %q, want 400", r.code, r.msg)
	}
	text, isErr := mcpCall(t, cs, "events_tail", map[string]any{"last": 2, "types": []string{"loop.completed"}})
	if isErr || !strings.Contains(text, "ralph-tail-00000003") || strings.Contains(text, "ralph-tail-00000001") {
		t.Errorf("MCP events_tail: %v %s", isErr, text)
	}
}
