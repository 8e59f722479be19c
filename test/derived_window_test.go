package test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

// TestAnnouncementsOnceBeyondTheDuplicateWindow: a replica that announces
// transitions long after another replica did (it was stopped while they
// were folded, and its read model is not rebuilt) adds nothing to the
// derived stream, although the server's duplicate window has long passed:
// it looks each announcement up before publishing it. New transitions are
// still announced once for both replicas.
func TestAnnouncementsOnceBeyondTheDuplicateWindow(t *testing.T) {
	const window = time.Second
	models := append(app.Models(), milestone{})
	streams := events.StreamOptions{DerivedDuplicates: window}
	a := startNode(t, node.Config{Models: models, Replica: "replica-a", Streams: streams})
	runNode(t, a)
	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Models: models, Replica: "replica-b", Streams: streams})
	ctx := context.Background()
	st, err := a.JS.Stream(ctx, events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Duplicates; got != window {
		t.Fatalf("derived duplicate window %v, want %v", got, window)
	}
	next := 0
	appendOutcomes := func(n int) uint64 {
		seq := appendOutcomeRun(t, a, next, n, time.Hour, 5)
		next += n
		return seq
	}
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
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && count() < want {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * window) // let any extra announcement arrive
		if got := count(); got != want {
			t.Fatalf("derived stream holds %d milestone announcements, want %d", got, want)
		}
	}
	wait := func(n *node.Node, seq uint64) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := n.Runtime.WaitFor(wctx, seq); err != nil {
			t.Fatal(err)
		}
	}

	// Both replicas fold the first events: announced once.
	runCtx, stopB := context.WithCancel(ctx)
	doneB := make(chan struct{})
	go func() { defer close(doneB); _ = b.Run(runCtx) }()
	seq := appendOutcomes(10) // 2 failures
	wait(a, seq)
	wait(b, seq)
	announced(2)

	// B stops; A folds and announces 10 more.
	stopB()
	<-doneB
	seq = appendOutcomes(50) // 10 failures
	wait(a, seq)
	announced(12) // waits twice the window: every id announced has left it

	// B comes back and folds what it missed, far behind the window: it
	// announces nothing again.
	runNode(t, b)
	wait(b, seq)
	announced(12)

	// New transitions: once for both.
	seq = appendOutcomes(10) // 2 failures
	wait(a, seq)
	wait(b, seq)
	announced(14)
	da, _ := a.Store.Digest()
	db, _ := b.Store.Digest()
	if da != db {
		t.Fatalf("replicas differ: %s vs %s", da, db)
	}
}
