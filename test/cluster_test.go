package test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/test/natstest"
)

// streamLeader returns the index of the server leading stream (-1: none).
func streamLeader(nodes []*natstest.ClusterNode, stream string) int {
	for i, cn := range nodes {
		if cn.Server != nil && cn.Server.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// storedIDs returns the event ids the log holds, with how often each.
func storedIDs(t testing.TB, js jetstream.JetStream) map[string]int {
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
	ids := map[string]int{}
	if info.State.Msgs == 0 {
		return ids
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventsFilter}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for n := uint64(0); n < info.State.Msgs; n++ {
		m, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		ids[ev.ID]++
	}
	return ids
}

// TestClusterFailoverAndReplicas: three NATS servers clustered on loopback
// carry lore's R3 streams. Writers append while the log's stream leader is
// stopped and later restarted, retrying with the same ids; two lore
// replicas fold the log. No acknowledged event is lost or stored twice, the
// replicas end with the same read model, announcements are stored once for
// the group, and a third replica started from a snapshot catches up to the
// same read model.
func TestClusterFailoverAndReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	nodes := natstest.Cluster(t, 3)
	url := natstest.URLs(nodes)
	_, js := natstest.Connect(t, url)
	ctx := context.Background()
	streams := events.StreamOptions{Replicas: 3}
	if err := events.EnsureStreams(ctx, js, streams); err != nil {
		t.Fatal(err)
	}
	watches := map[string]*seqWatch{}
	replica := func(name string) *node.Node {
		w := &seqWatch{}
		watches[name] = w
		n := startNode(t, node.Config{NatsURL: url, Streams: streams, Replica: name,
			Models: append(app.Models(), w)})
		runNode(t, n)
		return n
	}
	a, b := replica("lore-a"), replica("lore-b")

	const writers, perWriter = 4, 250
	const total = writers * perWriter
	var (
		mu       sync.Mutex
		acked    = map[string]uint64{} // id → stream seq
		pats     []string
		nAcked   atomic.Int64
		retries  atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := events.NewAppender(js)
			for i := range perWriter {
				at := day0.Add(time.Duration(w*perWriter+i) * time.Second)
				var ev *events.Event
				var pat string
				if i%25 == 24 {
					pat = fmt.Sprintf("w%d-pat-%d", w, i)
					ev = promoted(t, pat, at)
				} else {
					ev = outcome(t, fmt.Sprintf("p%d", w%2), fmt.Sprintf("bd-%d.%d", w, i%20), at, i%4 != 0)
				}
				// The appender retries within a call; a call that gives up is
				// retried here with the same event, so the same id.
				for attempt := 0; ; attempt++ {
					actx, cancel := context.WithTimeout(ctx, 15*time.Second)
					r, err := app.Append(actx, ev)
					cancel()
					if err == nil {
						mu.Lock()
						acked[ev.ID] = r.Seq
						if pat != "" {
							pats = append(pats, pat)
						}
						mu.Unlock()
						nAcked.Add(1)
						break
					}
					retries.Add(1)
					if attempt == 20 {
						failures.Add(1)
						t.Errorf("writer %d: event %d never acknowledged: %v", w, i, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(2 * time.Millisecond) // spread the writes over the failover
			}
		}()
	}

	// Stop the log's stream leader once a third is acked; restart it after
	// another third was acked without it.
	waitAcked := func(n int64) {
		natstest.WaitFor(t, 120*time.Second, func() error {
			if failures.Load() > 0 {
				return nil
			}
			if got := nAcked.Load(); got < n {
				return fmt.Errorf("%d of %d events acked", got, n)
			}
			return nil
		})
	}
	waitAcked(total / 3)
	leader := streamLeader(nodes, events.LogStream)
	if leader < 0 {
		t.Fatal("no leader of the log stream")
	}
	nodes[leader].Stop()
	downAt := nAcked.Load()
	waitAcked(downAt + total/3)
	writtenWhileDown := nAcked.Load() - downAt
	nodes[leader].Start(t)
	wg.Wait()
	if failures.Load() > 0 {
		t.FailNow()
	}
	if writtenWhileDown == 0 {
		t.Fatal("no event was written while the leader was down")
	}

	// No acknowledged event lost, none stored twice.
	last, msgs := lastSeq(t, js, events.LogStream)
	ids := storedIDs(t, js)
	if len(acked) != total || msgs != total || len(ids) != total {
		t.Fatalf("acked %d ids, the log holds %d messages with %d ids; want %d each", len(acked), msgs, len(ids), total)
	}
	for id := range acked {
		if ids[id] != 1 {
			t.Fatalf("acked event %s stored %d times", id, ids[id])
		}
	}

	// Both replicas fold everything into the same read model.
	waitSeq(t, a, last)
	waitSeq(t, b, last)
	for _, n := range []*node.Node{a, b} {
		s, err := eventlog.Read(n.Store.Model(eventlog.Name))
		if err != nil {
			t.Fatal(err)
		}
		if s.Total != total {
			t.Fatalf("replica %s counts %d events, want %d; sequences it never folded: %v; dead-lettered: %d",
				n.ReplicaName(), s.Total, total, watches[n.ReplicaName()].gaps(), n.Runtime.Poisoned())
		}
	}
	da, db := storeDigest(t, a), storeDigest(t, b)
	if da != db {
		t.Fatalf("replicas differ: %s vs %s", da, db)
	}
	if clean, _ := rebuildDigest(t, js); clean != da {
		t.Fatal("replicas differ from a clean rebuild of the log")
	}
	waitAnnounced(t, js, len(pats))
	checkAnnouncedOnce(t, js, pats)

	// A third replica starts from a snapshot and catches up with the tail.
	s, err := a.Snapshot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	pats = append(pats, appendMix(t, events.NewAppender(js), "tail", 0, 200)...)
	c := startNode(t, node.Config{NatsURL: url, Streams: streams, Replica: "lore-c", Models: append(app.Models(), &seqWatch{})})
	got, ok, err := c.RestoreSnapshot(ctx)
	if err != nil || !ok || got.Name != s.Name {
		t.Fatalf("restore: %+v ok=%v err=%v, want %s", got, ok, err, s.Name)
	}
	runNode(t, c)
	last, _ = lastSeq(t, js, events.LogStream)
	for _, n := range []*node.Node{a, b, c} {
		waitSeq(t, n, last)
	}
	da = storeDigest(t, a)
	if db, dc := storeDigest(t, b), storeDigest(t, c); db != da || dc != da {
		t.Fatalf("after the tail: a %s, b %s, c (from snapshot at %d) %s", da[:12], db[:12], s.LastSeq, dc[:12])
	}
	waitAnnounced(t, js, len(pats))
	checkAnnouncedOnce(t, js, pats)
	t.Logf("%d events acked (%d while the leader S-%d was down, %d retried calls); snapshot at seq %d; digest %s",
		total, writtenWhileDown, leader+1, retries.Load(), s.LastSeq, da[:16])
}

// seqWatch is a read model that writes nothing: it records, in memory, the
// sequences a replica's fold skipped over, to explain a lost event.
type seqWatch struct {
	mu      sync.Mutex
	last    uint64
	skipped [][2]uint64
}

func (*seqWatch) Name() string { return "test-seqwatch" }
func (*seqWatch) Version() int { return 1 }
func (w *seqWatch) Fold(_ projector.Tx, ev *events.Event, _ events.Payload) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != 0 && ev.Seq > w.last+1 { // lower: re-folded after a restart
		w.skipped = append(w.skipped, [2]uint64{w.last + 1, ev.Seq - 1})
	}
	w.last = ev.Seq
	return nil
}

func (w *seqWatch) gaps() [][2]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][2]uint64(nil), w.skipped...)
}

// waitAnnounced waits until at least n promotions were announced.
func waitAnnounced(t testing.TB, js jetstream.JetStream, n int) {
	t.Helper()
	natstest.WaitFor(t, 30*time.Second, func() error {
		got := 0
		for _, a := range announcements(t, js) {
			if a.To == "proven" {
				got++
			}
		}
		if got < n {
			return fmt.Errorf("%d of %d promotions announced", got, n)
		}
		return nil
	})
}
