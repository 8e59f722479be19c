package projector

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/loredev/lore/events"
)

// walGate holds every sync of the store's WAL while it is closed.
type walGate struct {
	mu     sync.Mutex
	open   chan struct{}
	held   atomic.Int64 // syncs waiting at the gate
	closed atomic.Bool
}

func (g *walGate) close() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
	g.closed.Store(true)
}

// release opens a closed gate (once; an open gate stays open).
func (g *walGate) release() {
	if !g.closed.Swap(false) {
		return
	}
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

func (g *walGate) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	if !strings.HasSuffix(op.Path, ".log") || !g.closed.Load() {
		return nil
	}
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	g.held.Add(1)
	<-open
	g.held.Add(-1)
	return nil
}

func (g *walGate) String() string { return "walGate" }

// TestSlowFsyncHoldsNoCommitBack: while the store's WAL syncs are held
// (a disk busy for as long as the test likes), each event appended one
// after another still becomes visible to readers, one commit each, far
// past the few commits a short queue would let wait for their fsync; none
// is acknowledged or reported durable until the syncs go through, and
// then every one is, in order.
func TestSlowFsyncHoldsNoCommitBack(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	gate := &walGate{}
	st, err := OpenStore(t.TempDir(), StoreOptions{Sync: true, FS: errorfs.Wrap(vfs.Default, gate)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var durable atomic.Uint64
	var order sync.Mutex
	var outOfOrder bool
	rt := NewRuntime(js, st, []Model{lister{name: "l"}}, RuntimeOptions{OnDurable: func(seq uint64) {
		order.Lock()
		if seq < durable.Load() {
			outOfOrder = true
		}
		order.Unlock()
		durable.Store(seq)
	}})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(rctx) }()
	defer func() {
		gate.release() // a failure with the gate closed still stops
		stop()
		if err := <-done; err != nil && rctx.Err() == nil {
			t.Error(err)
		}
	}()

	a := events.NewAppender(js)
	appendOne := func(i int) uint64 {
		t.Helper()
		ev, err := events.New("outcome.recorded/v1", "default", "test", time.Time{}, &events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), Success: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := a.Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return r.Seq
	}
	first := appendOne(0)
	if err := rt.WaitFor(ctx, first); err != nil {
		t.Fatal(err)
	}
	for durable.Load() < first {
		time.Sleep(time.Millisecond)
	}

	gate.close()
	const n = 300 // commits waiting for their fsync, far more than 64
	var last uint64
	for i := 1; i <= n; i++ {
		last = appendOne(i)
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		err := rt.WaitFor(wctx, last)
		wcancel()
		if err != nil {
			t.Fatalf("event %d of %d not visible while the WAL's syncs are held: %v", i, n, err)
		}
	}
	if got, ok, err := st.Model("l").Get([]byte(fmt.Sprintf("bead/b%d", n))); err != nil || !ok || len(got) == 0 {
		t.Fatalf("the last event's write is not readable: %q %v %v", got, ok, err)
	}
	if d := durable.Load(); d != first {
		t.Fatalf("commits reported durable up to %d while every sync after %d was held", d, first)
	}
	if gate.held.Load() == 0 {
		t.Fatal("no WAL sync was held: the test held nothing back")
	}
	gate.release()
	for durable.Load() < last {
		select {
		case <-ctx.Done():
			t.Fatalf("durable up to %d, want %d once the syncs went through", durable.Load(), last)
		case <-time.After(time.Millisecond):
		}
	}
	order.Lock()
	defer order.Unlock()
	if outOfOrder {
		t.Fatal("commits reported durable out of order")
	}
}
