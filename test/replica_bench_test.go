package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/snapshots"
	"github.com/loredev/lore/test/natstest"
)

// BenchmarkReplicaCatchUp measures how long a new replica takes to reach
// the end of a log of N events (LORE_BENCH_N, default 100k) plus a tail of
// N/100 (at least 1,000): from zero (folding the whole log) and from the
// newest snapshot (taken at N: download, restore, fold the tail). Both end
// with the same read model. Metrics: seconds of each and their ratio.
//
//	LORE_BENCH_N=1000000 go test -run '^$' -bench ReplicaCatchUp -benchtime 1x -timeout 60m ./test/
func BenchmarkReplicaCatchUp(b *testing.B) {
	n := benchN()
	tail := max(n/100, 1000)
	srv := natstest.Start(b)
	url := srv.ClientURL()
	_, js := natstest.Connect(b, url, nats.MaxPingsOutstanding(100))
	ctx := context.Background()
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		b.Fatal(err)
	}
	appendAll := func(evs []*events.Event) {
		a := events.NewAppender(js)
		for i := 0; i < len(evs); i += 1000 {
			if _, err := a.AppendBatch(ctx, evs[i:min(i+1000, len(evs))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	appendAll(benchEvents(b, n))

	// The seed: a read model of the first N events, snapshotted.
	seed, err := projector.OpenStore(b.TempDir(), projector.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := projector.Replay(ctx, js, seed, app.Models(), projector.ReplayOptions{}); err != nil {
		b.Fatal(err)
	}
	snap, err := snapshots.Create(ctx, js, seed, snapshots.Options{Replica: "seed", TempDir: b.TempDir()})
	seed.Close()
	if err != nil {
		b.Fatal(err)
	}
	appendAll(benchEvents(b, tail))
	last, _ := lastSeq(b, js, events.LogStream)

	// catchUp starts a new replica on an empty folder and returns the time
	// it took to reach the end of the log, and its digest.
	run := 0
	catchUp := func(fromSnapshot bool) (time.Duration, string) {
		run++
		start := time.Now()
		nd, err := node.Start(ctx, node.Config{DataDir: b.TempDir(), NatsURL: url, TickInterval: -1,
			Replica: fmt.Sprintf("bench-%d", run)})
		if err != nil {
			b.Fatal(err)
		}
		defer nd.Close()
		if fromSnapshot {
			s, ok, err := nd.RestoreSnapshot(ctx)
			if err != nil || !ok || s.Name != snap.Name {
				b.Fatalf("restore: %+v ok=%v err=%v", s, ok, err)
			}
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- nd.Run(rctx) }()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Minute)
		err = nd.Runtime.WaitFor(wctx, last)
		wcancel()
		took := time.Since(start)
		cancel()
		if rerr := <-done; rerr != nil {
			b.Fatal(rerr)
		}
		if err != nil {
			b.Fatal(err)
		}
		d, err := nd.Store.Digest()
		if err != nil {
			b.Fatal(err)
		}
		return took, d
	}
	for b.Loop() {
		zero, dz := catchUp(false)
		fromSnap, ds := catchUp(true)
		if dz != ds {
			b.Fatal("the replica from the snapshot differs from the one folded from zero")
		}
		b.ReportMetric(zero.Seconds(), "from-zero-s")
		b.ReportMetric(fromSnap.Seconds(), "from-snapshot-s")
		b.ReportMetric(zero.Seconds()/fromSnap.Seconds(), "zero/snapshot")
		b.ReportMetric(float64(snap.Size)/(1<<20), "snapshot-MiB")
	}
	b.Logf("N=%d tail=%d snapshot at seq %d (%d bytes)", n, tail, snap.LastSeq, snap.Size)
}
