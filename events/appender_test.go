package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/test/natstest"
)

// startJetStream runs a real embedded NATS server with JetStream and lore's
// streams, shut down when the test ends.
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Start(t).ClientURL())
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	return js
}

func outcomes(t *testing.T, n int) []*events.Event {
	t.Helper()
	evs := make([]*events.Event, n)
	for i := range evs {
		bead := fmt.Sprintf("bd-%d.%d", i%3, i%2) // few aggregates: many events each
		ev, err := events.New("outcome.recorded/v1", "web", "test", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
			&events.OutcomeRecorded{BeadID: bead, DurationMs: int64(i), RetryCount: i % 3, Success: i%4 != 0})
		if err != nil {
			t.Fatal(err)
		}
		evs[i] = ev
	}
	return evs
}

// logState returns the log stream and its current info.
func logState(t *testing.T, js jetstream.JetStream) (jetstream.Stream, *jetstream.StreamInfo) {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st, info
}

// TestAppendBatchWindowKeepsOrderAndResults: with a window much smaller than
// the batch, every event is stored once, in the batch's order (so in order
// per aggregate), and its result names its own id and sequence; re-sending
// the batch stores nothing and reports the same sequences as duplicates.
func TestAppendBatchWindowKeepsOrderAndResults(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	for _, window := range []int{1, 7, 0} {
		a := events.NewAppender(js)
		a.MaxInFlight = window
		evs := outcomes(t, 600)
		st, info := logState(t, js)
		first := info.State.LastSeq + 1
		res, err := a.AppendBatch(ctx, evs)
		if err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		for i, r := range res {
			if r.ID != evs[i].ID || r.Seq != first+uint64(i) || r.Duplicate || r.Subject != events.AggregateSubject("web", "bead", evs[i].Subject) {
				t.Fatalf("window %d: result %d = %+v, want id %s at seq %d", window, i, r, evs[i].ID, first+uint64(i))
			}
			m, err := st.GetMsg(ctx, r.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Header.Get(jetstream.MsgIDHeader); got != evs[i].ID {
				t.Fatalf("window %d: seq %d holds %s, want %s", window, r.Seq, got, evs[i].ID)
			}
		}
		again, err := a.AppendBatch(ctx, evs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range again {
			if !r.Duplicate || r.Seq != res[i].Seq {
				t.Fatalf("window %d: re-sent %d = %+v, first %+v", window, i, r, res[i])
			}
		}
	}
}

// TestAppendBatchRefusesTheWholeBatch: one invalid event refuses the batch,
// the error names its index and field, and nothing reaches the log.
func TestAppendBatchRefusesTheWholeBatch(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	evs := outcomes(t, 50)
	evs[31].Data = []byte(`{"bead_id":"b","duration_ms":-5,"retry_count":0,"success":true}`)
	_, err := events.NewAppender(js).AppendBatch(ctx, evs)
	if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), "event 31") ||
		!strings.Contains(err.Error(), `field "data.duration_ms": minimum`) {
		t.Fatalf("err = %v, want event 31 refused naming data.duration_ms", err)
	}
	if _, info := logState(t, js); info.State.Msgs != 0 {
		t.Fatalf("the log holds %d events after a refused batch", info.State.Msgs)
	}
}
