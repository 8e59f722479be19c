package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/learning"
)

// TestRawObservationsFoldedOrDeadLettered: a raw publisher's
// pattern.observations/v1 is folded item by item; one with a bad item is
// dead-lettered with a reason naming the item's index, and nothing of it
// is folded.
func TestRawObservationsFoldedOrDeadLettered(t *testing.T) {
	n, nc := ifcServe(t)
	pid := events.PatternIDFor("Split by feature")
	subj := events.AggregateSubject("default", "pattern", pid)
	body := func(id, items string) string {
		return fmt.Sprintf(`{"id":%q,"type":"pattern.observations/v1","source":"raw","time":"2026-01-02T10:00:00Z","project":"default","data":{"observations":[%s]}}`, id, items)
	}
	ok := `{"content":"Split by feature","success":true}`
	bad := map[string]struct{ items, reason string }{
		"raw-obs-bad-1": {ok + `,` + ok + `,{"content":"Split by feature"}`, `data.observations.2.success`},
		"raw-obs-bad-2": {ok + `,{"content":"  ","success":false}`, `data.observations.1.pattern_id`},
		"raw-obs-bad-3": {ok + `,{"content":"Split by feature","success":true,"weight":2}`, `data.observations.1.weight`},
	}
	seqs := map[string]uint64{}
	for id, c := range bad {
		seqs[id] = rawAppend(t, nc, subj, id, body(id, c.items)).Seq
	}
	items := strings.TrimSuffix(strings.Repeat(ok+",", 5)+strings.Repeat(`{"content":"Split by feature","success":false},`, 2), ",")
	good := rawAppend(t, nc, subj, "raw-obs-good-1", body("raw-obs-good-1", items))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, good.Seq); err != nil {
		t.Fatal(err)
	}
	m, err := learning.New(learning.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, found, err := m.Pattern(n.Store.Model(learning.ModelName), "default", pid, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	if err != nil || !found || p.SuccessCount != 5 || p.FailureCount != 2 {
		t.Fatalf("pattern after the raw events: %+v %v %v; want the good event's 5 successes and 2 failures only", p, found, err)
	}
	st, err := n.JS.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range bad {
		dl, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, seqs[id]))
		if err != nil {
			t.Errorf("%s: no dead letter of seq %d: %v", id, seqs[id], err)
			continue
		}
		if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, c.reason) {
			t.Errorf("%s: dead-letter reason %q does not name %s", id, reason, c.reason)
		}
	}
}
