package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
)

// sharedMilestone announces each failure on one subject per project: the
// subject holds many announcements, so looking one of them up is not a
// look at the subject's newest message alone.
type sharedMilestone struct{}

func (sharedMilestone) Name() string { return "test-shared-milestone" }
func (sharedMilestone) Version() int { return 1 }
func (sharedMilestone) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	if o, ok := data.(*events.OutcomeRecorded); ok && !o.Success {
		tx.Emit(projector.Derived{Type: "test.milestone/v1", Project: ev.Project, Subject: "shared",
			Key: o.BeadID, Data: milestoneReached{Bead: o.BeadID}})
	}
	return nil
}

// TestAnnouncementsOnceAfterALongBacklog: a replica catching up on a log
// stored long ago looks every announcement up (more than a publishing
// window of them), on subjects holding one announcement and on one
// holding a hundred; the ones another replica announced are not
// added again, the ones nobody announced are, once, in the order of their
// causes.
func TestAnnouncementsOnceAfterALongBacklog(t *testing.T) {
	const window = time.Second
	models := append(app.Models(), milestone{}, sharedMilestone{})
	streams := events.StreamOptions{DerivedDuplicates: window}
	a := startNode(t, node.Config{Models: models, Replica: "replica-a", Streams: streams})
	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Models: models, Replica: "replica-b", Streams: streams})
	ctx := context.Background()
	st, err := a.JS.Stream(ctx, events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	appendOutcomes := func(n int) uint64 {
		seq := appendOutcomeRun(t, a, next, n, time.Minute, 3)
		next += n
		return seq
	}
	milestones := func() (perBead, shared uint64) {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.DerivedPrefix+".*.test.milestone.>"))
		if err != nil {
			t.Fatal(err)
		}
		for subj, c := range info.State.Subjects {
			if subj == events.DerivedPrefix+".default.test.milestone.shared" {
				shared += c
			} else {
				perBead += c
			}
		}
		return perBead, shared
	}
	settle := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			p, s := milestones()
			if p == want && s == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d per-bead and %d shared announcements, want %d of each", p, s, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * window) // let any extra announcement arrive
		if p, s := milestones(); p != want || s != want {
			t.Fatalf("%d per-bead and %d shared announcements, want %d of each", p, s, want)
		}
	}
	run := func(n *node.Node) (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = n.Run(rctx) }()
		return func() { cancel(); <-done }
	}

	// A alone folds 300 events and announces their 100 failures twice
	// (per bead, shared), then stops; 300 more are stored while no
	// replica runs.
	stopA := run(a)
	waitSeq(t, a, appendOutcomes(300))
	settle(100)
	stopA()
	seq := appendOutcomes(300)
	time.Sleep(2 * window) // every event of the log is now older than the window

	// B folds the whole log: 200 failures, 100 of them announced by A;
	// it looks up 400 announcements, more than a publishing window.
	stopB := run(b)
	defer stopB()
	waitSeq(t, b, seq)
	settle(200)

	// The shared subject holds one announcement per failure, in the order
	// of their causes.
	var prev uint64
	for at := uint64(1); ; {
		sm, err := st.GetMsg(ctx, at, jetstream.WithGetMsgSubject(events.DerivedPrefix+".default.test.milestone.shared"))
		if err != nil {
			break
		}
		var cause uint64
		fmt.Sscan(sm.Header.Get(projector.HeaderCauseSeq), &cause)
		if cause <= prev {
			t.Fatalf("shared announcement of cause %d after cause %d", cause, prev)
		}
		prev, at = cause, sm.Sequence+1
	}

	// A comes back and folds the 300 it missed: nothing new to announce.
	stopA = run(a)
	defer stopA()
	waitSeq(t, a, seq)
	settle(200)
	if da, db := storeDigest(t, a), storeDigest(t, b); da != db {
		t.Fatalf("replicas differ: %s vs %s", da, db)
	}
}
