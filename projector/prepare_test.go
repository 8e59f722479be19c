package projector

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// preparing is a Preparer recording which beads Prepare saw, and for each
// event folded whether Prepare had seen it first. Prepare panics for the
// beads in panics.
type preparing struct {
	mu       sync.Mutex
	prepared map[string]bool
	before   int // events whose Prepare ran before their fold
	folded   []string
	panics   map[string]bool
}

func (*preparing) Name() string { return "prep" }
func (*preparing) Version() int { return 1 }

func (m *preparing) Prepare(data events.Payload) {
	o := data.(*events.OutcomeRecorded)
	m.mu.Lock()
	m.prepared[o.BeadID] = true
	m.mu.Unlock()
	if m.panics[o.BeadID] {
		panic("prepare " + o.BeadID)
	}
}

func (m *preparing) Fold(tx Tx, ev *events.Event, data events.Payload) error {
	o := data.(*events.OutcomeRecorded)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prepared[o.BeadID] {
		m.before++
	}
	m.folded = append(m.folded, o.BeadID)
	return tx.Set([]byte("bead/"+o.BeadID), []byte(ev.ID))
}

// TestPrepareRunsBeforeTheFoldOfABacklog: the runtime's decoders run a
// Preparer's Prepare on the events of a backlog before handing them to
// the fold, and a Prepare that panics loses no event: every event folds
// once, in the log's order.
func TestPrepareRunsBeforeTheFoldOfABacklog(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	evs := make([]*events.Event, n)
	m := &preparing{prepared: map[string]bool{}, panics: map[string]bool{}}
	for i := range evs {
		bead := fmt.Sprintf("b%d", i)
		if i%7 == 3 {
			m.panics[bead] = true
		}
		ev, err := events.New("outcome.recorded/v1", "default", "test", time.Time{}, &events.OutcomeRecorded{BeadID: bead, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		evs[i] = ev
	}
	if _, err := events.NewAppender(js).AppendBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt := NewRuntime(js, st, []Model{m}, RuntimeOptions{})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(rctx) }()
	if err := rt.WaitFor(ctx, n); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil && rctx.Err() == nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.folded) != n {
		t.Fatalf("%d events folded, %d appended", len(m.folded), n)
	}
	for i, b := range m.folded {
		if b != fmt.Sprintf("b%d", i) {
			t.Fatalf("fold %d was of %s: out of the log's order", i, b)
		}
	}
	// A backlog goes to the decoders, but for the messages the reader
	// waited for (the first, and any a busy machine made it wait for).
	if m.before < n/2 {
		t.Fatalf("Prepare ran before the fold of %d events of a backlog of %d", m.before, n)
	}
}
