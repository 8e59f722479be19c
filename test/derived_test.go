package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
)

// milestone is a test model announcing every failed outcome.
type milestone struct{}

type milestoneReached struct {
	Bead string `json:"bead"`
}

func (m *milestoneReached) AggregateID() string { return m.Bead }

func init() {
	events.Register(events.Kind{Type: "test.milestone/v1", Aggregate: "test", Derived: true,
		Doc: "test announcement", New: func() events.Payload { return new(milestoneReached) }})
}

// appendOutcomeRun appends the outcomes of beads bd-from … bd-(from+n-1)
// in project "default", bead i at day0 + i×step, every failEvery-th one
// (i%failEvery == 0) a failure, and returns the sequence of the last.
func appendOutcomeRun(t *testing.T, n *node.Node, from, count int, step time.Duration, failEvery int) uint64 {
	t.Helper()
	var evs []*events.Event
	for i := from; i < from+count; i++ {
		evs = append(evs, outcome(t, "default", fmt.Sprintf("bd-%d", i), day0.Add(time.Duration(i)*step), i%failEvery != 0))
	}
	res, err := n.Appender.AppendBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	return res[len(res)-1].Seq
}

func (milestone) Name() string { return "test-milestone" }
func (milestone) Version() int { return 1 }
func (milestone) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	if o, ok := data.(*events.OutcomeRecorded); ok && !o.Success {
		tx.Emit(projector.Derived{Type: "test.milestone/v1", Project: ev.Project, Subject: o.BeadID,
			Key: "failed", Data: milestoneReached{Bead: o.BeadID}})
	}
	return nil
}

// TestAnnouncementsOncePerCause: derived events are announced once per
// cause, across projector restarts and by several replicas; a rebuild or an
// audit replay never re-announces them.
func TestAnnouncementsOncePerCause(t *testing.T) {
	models := append(app.Models(), milestone{})
	a := startNode(t, node.Config{Models: models, Replica: "replica-a"})
	ctx := context.Background()
	appendOutcomes := func(from, n int) uint64 { return appendOutcomeRun(t, a, from, n, time.Hour, 5) }
	st, err := a.JS.Stream(ctx, events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	// count the milestones among every announcement (other models announce too)
	count := func() uint64 {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.DerivedPrefix+".*.test.milestone.>"))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	announced := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && count() < want {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // let any extra announcement arrive
		if got := count(); got != want {
			t.Fatalf("derived stream holds %d announcements, want %d", got, want)
		}
	}
	wait := func(n *node.Node, seq uint64) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := n.Runtime.WaitFor(wctx, seq); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, stopA := context.WithCancel(ctx)
	doneA := make(chan struct{})
	go func() { defer close(doneA); _ = a.Run(runCtx) }()
	seq := appendOutcomes(0, 50) // 10 failures
	wait(a, seq)
	announced(10)

	// Restart the projector: nothing is announced again.
	stopA()
	<-doneA
	runNode(t, a)
	seq = appendOutcomes(50, 5) // 1 failure
	wait(a, seq)
	announced(11)

	// A second replica rebuilds from the log: it re-announces nothing, and
	// new transitions are announced once for both.
	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Models: models, Replica: "replica-b"})
	runNode(t, b)
	wait(b, seq)
	announced(11)
	seq = appendOutcomes(55, 10) // 2 failures
	wait(a, seq)
	wait(b, seq)
	announced(13)

	// An audit replay announces nothing.
	asOf := day0.Add(30 * time.Hour)
	_, release, err := a.At(ctx, &asOf, 0)
	if err != nil {
		t.Fatal(err)
	}
	release()
	announced(13)
	da, _ := a.Store.Digest()
	db, _ := b.Store.Digest()
	if da != db {
		t.Fatalf("replicas differ: %s vs %s", da, db)
	}
}

// TestAnnouncedOutboxClearedByPointDeletes: each commit that announces
// clears its outbox entries once they are published, and does so without
// a range deletion (a range deletion in the memtable makes the next read
// of any key re-fragment every one the memtable holds: reads would cost
// more with each announcing commit).
func TestAnnouncedOutboxClearedByPointDeletes(t *testing.T) {
	models := append(app.Models(), milestone{})
	n := startNode(t, node.Config{Models: models})
	runNode(t, n)
	ctx := context.Background()
	res, err := n.Appender.Append(ctx, outcome(t, "default", "bd-ok", day0, true)) // announces nothing
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Runtime.WaitFor(ctx, res.Seq); err != nil {
		t.Fatal(err)
	}
	db := n.Store.DB()
	before := rangeDeletions(t, db) // those of the store's creation
	const commits = 40
	for i := range commits { // one failure a commit: one announcement each
		res, err := n.Appender.Append(ctx, outcome(t, "default", fmt.Sprintf("bd-%d", i), day0.Add(time.Duration(i)*time.Hour), false))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Runtime.WaitFor(ctx, res.Seq); err != nil {
			t.Fatal(err)
		}
	}
	outbox := []byte("sys/outbox/") // the store's outbox prefix (projector/store.go)
	pending := func() int {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: outbox, UpperBound: append(slices.Clone(outbox[:len(outbox)-1]), '/'+1)})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		k := 0
		for it.First(); it.Valid(); it.Next() {
			k++
		}
		return k
	}
	deadline := time.Now().Add(10 * time.Second)
	for pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if k := pending(); k > 0 {
		t.Fatalf("%d announcements still in the outbox after they were published", k)
	}
	if got := rangeDeletions(t, db); got > before {
		t.Fatalf("the store holds %d range deletions after %d announcing commits, %d before them", got, commits, before)
	}
}

// rangeDeletions flushes db's memtable and counts the range deletions of
// its tables.
func rangeDeletions(t *testing.T, db *pebble.DB) uint64 {
	t.Helper()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, level := range levels {
		for _, tb := range level {
			n += tb.Properties.NumRangeDeletions
		}
	}
	return n
}
