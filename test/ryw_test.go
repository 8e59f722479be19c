package test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/test/natstest"
)

// TestRepliesReadTheirWritesUnderLoad: while another writer appends a
// backlog the projector batches, every command's reply says its events are
// projected and has the fold's decision (nothing pending), a query right
// after it sees the write, and the live read model equals a rebuild from
// the log once the load ends (committing whenever the pipeline runs dry
// changes batch boundaries, never the result).
func TestRepliesReadTheirWritesUnderLoad(t *testing.T) {
	n, nc := ifcServe(t)
	_, js := natstest.Connect(t, n.ClientURL())
	ctx := context.Background()

	// The backlog: observations of other patterns, appended in batches.
	var wg sync.WaitGroup
	wg.Add(1)
	loadErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		for b := range 20 {
			evs := make([]*events.Event, 0, 250)
			for i := range 250 {
				ev, err := events.New("pattern.observed/v1", "", "load", time.Now(),
					&events.PatternObserved{Content: fmt.Sprintf("load pattern %d", i%17), Success: (b+i)%3 != 0})
				if err != nil {
					loadErr <- err
					return
				}
				evs = append(evs, ev)
			}
			if _, err := n.Appender.AppendBatch(ctx, evs); err != nil {
				loadErr <- err
				return
			}
		}
	}()

	const content = "split the work by file type"
	for i := range 30 {
		body := fmt.Sprintf(`{"args":{"content":%q,"success":true}}`, content)
		r := pipeReq(t, nc, "lore.api.learning.observe_pattern", body)
		if r.code != "" {
			t.Fatalf("observe %d: %s %s", i, r.code, r.msg)
		}
		var reply struct {
			Projected bool `json:"projected"`
			Pending   bool `json:"pending"`
		}
		if err := json.Unmarshal(r.body, &reply); err != nil || !reply.Projected || reply.Pending {
			t.Fatalf("observe %d: reply %s (%v): want projected, not pending", i, r.body, err)
		}
		q := pipeReq(t, nc, "lore.api.learning.pattern", fmt.Sprintf(`{"args":{"content":%q}}`, content))
		var p struct {
			Success int `json:"success_count"`
		}
		if err := json.Unmarshal(q.body, &p); err != nil || q.code != "" {
			t.Fatalf("pattern query %d: %s %s %s", i, q.code, q.msg, q.body)
		}
		if p.Success != i+1 {
			t.Fatalf("after %d observations replied as projected, the query right after sees %d", i+1, p.Success)
		}
	}
	wg.Wait()
	select {
	case err := <-loadErr:
		t.Fatal(err)
	default:
	}

	last, _ := lastSeq(t, js, events.LogStream)
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	live, err := n.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt, _ := rebuildDigest(t, js); rebuilt != live {
		t.Fatal("the live read model differs from a rebuild of the same log")
	}
}
