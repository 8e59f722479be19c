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

// TestCompletionOfALoopNeverStartedIsRefused: loop.complete of a loop
// without a loop.started is refused with 404 naming the loop over the
// NATS API and MCP, and the same event published raw is dead-lettered
// with that reason; none of them counts as a loop without injection.
func TestCompletionOfALoopNeverStartedIsRefused(t *testing.T) {
	n, nc := ifcServe(t)
	cs := mcpSession(t, nc)
	ghost := "ralph-ghost-0000abcd"
	r := pipeReq(t, nc, "lore.api.loop.complete", fmt.Sprintf(`{"args":{"loop_id":%q,"outcome":"success","iterations":9}}`, ghost))
	if r.code != "404" || !strings.Contains(r.msg, ghost) || !strings.Contains(r.msg, "never started") {
		t.Errorf("API: %s %q, want 404 naming %s", r.code, r.msg, ghost)
	}
	text, isErr := mcpCall(t, cs, "loop_complete", map[string]any{"loop_id": ghost, "outcome": "success", "iterations": 9})
	if !isErr || !strings.Contains(text, "code 404") || !strings.Contains(text, ghost) {
		t.Errorf("MCP: %v %q", isErr, text)
	}
	// A started loop completes; the raw door's completion of the ghost is
	// dead-lettered.
	for _, c := range []string{
		`{"args":{"loop_id":"ralph-real-00000001","task":"Fix the build","category":"debugging"}}`,
	} {
		if r := pipeReq(t, nc, "lore.api.loop.start", c); r.code != "" {
			t.Fatalf("start: %s %s", r.code, r.msg)
		}
	}
	if r := pipeReq(t, nc, "lore.api.loop.complete", `{"args":{"loop_id":"ralph-real-00000001","outcome":"success","iterations":3}}`); r.code != "" {
		t.Fatalf("complete: %s %s", r.code, r.msg)
	}
	subj := events.AggregateSubject("default", "loop", ghost)
	body := fmt.Sprintf(`{"id":"raw-ghost-1","type":"loop.completed/v1","source":"raw","subject":%q,"time":"2026-01-02T10:00:00Z","project":"default",`+
		`"data":{"loop_id":%q,"outcome":"success","iterations":9}}`, ghost, ghost)
	ack := rawAppend(t, nc, subj, "raw-ghost-1", body)
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
		t.Fatalf("no dead letter of the raw completion (seq %d): %v", ack.Seq, err)
	}
	if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, ghost) || !strings.Contains(reason, "never started") {
		t.Errorf("dead-letter reason %q does not name the loop", reason)
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
