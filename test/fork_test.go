package test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
)

// forkProbe is a model with a cache of its own (a projector.Forker): it
// counts the events each instance folds, so a test sees which instance a
// folder used.
type forkProbe struct {
	folded *atomic.Int64
	forks  *atomic.Int64 // events folded by the forks, shared by them
}

func (forkProbe) Name() string { return "forkprobe" }
func (forkProbe) Version() int { return 1 }
func (p forkProbe) Fold(_ projector.Tx, _ *events.Event, _ events.Payload) error {
	p.folded.Add(1)
	return nil
}
func (p forkProbe) Fork() projector.Model {
	return forkProbe{folded: p.forks, forks: p.forks}
}

// TestBackgroundFoldsLeaveTheLiveModelsAlone: a rebuild (Replay) and an
// audit (FoldRanges) fold forks of the models, never the instances the
// live projector folds with, whose caches (a knowledge pool's fold state,
// the cross-loop posting cache) would otherwise be taken out by the fold
// of another point of the log.
func TestBackgroundFoldsLeaveTheLiveModelsAlone(t *testing.T) {
	probe := forkProbe{folded: new(atomic.Int64), forks: new(atomic.Int64)}
	n := startNode(t, node.Config{Models: append(app.Models(), probe), AuditCheckpointEvery: -1})
	runNode(t, n)
	const total = 60
	var evs []*events.Event
	for i := range total {
		evs = append(evs, outcome(t, "default", fmt.Sprintf("bd-%d", i%7), day0.AddDate(0, 0, i), i%3 != 0))
	}
	res, err := n.Appender.AppendBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Runtime.WaitFor(context.Background(), res[len(res)-1].Seq); err != nil {
		t.Fatal(err)
	}
	if got := probe.folded.Load(); got != total {
		t.Fatalf("the live projector folded %d events into the live model, want %d", got, total)
	}
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := projector.Replay(context.Background(), n.JS, st, n.Models(), projector.ReplayOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, forks := probe.folded.Load(), probe.forks.Load(); got != total || forks != total {
		t.Fatalf("after a rebuild: %d events folded by the live model, %d by forks; want %d and %d", got, forks, total, total)
	}
	asOf := day0.AddDate(0, 0, 9)
	v, release, err := n.At(context.Background(), &asOf, 0)
	if err != nil {
		t.Fatal(err)
	}
	// An audit folds a model on its first read; as of a time, every model
	// together.
	s, err := eventlog.Read(v.Model(eventlog.Name))
	release()
	if err != nil || s.Total != 10 {
		t.Fatalf("as of day 9: %d events, %v", s.Total, err)
	}
	if got, forks := probe.folded.Load(), probe.forks.Load(); got != total || forks != total+10 {
		t.Fatalf("after an audit as of day 9: %d events folded by the live model, %d by forks; want %d and %d", got, forks, total, total+10)
	}
}
