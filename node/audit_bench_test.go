package node_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
)

// BenchmarkAudit times audits (--at-seq, --as-of, both) at random points of
// logs of growing size with the node's default checkpoint policy: an audit
// folds at most about one interval, so the log it reads does not grow with
// the log. Each size
// also reports full-fold-ratio: an audit's time ÷ a fold of the whole log
// (what every audit cost before checkpoints), measured in the same run, and
// fixed-ms: an audit exactly at a checkpoint (copy, open, close; nothing to
// fold), max-ms the slowest audit, and the checkpoints kept and the disk
// they hold beyond the live store.
func BenchmarkAudit(b *testing.B) {
	for _, size := range []int{4000, 16000, 64000, 256000} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The node's default retention (a disk budget).
			n, err := node.Start(ctx, node.Config{DataDir: b.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1},
				NoSyncCommits: true})
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			done := make(chan error, 1)
			go func() { done <- n.Run(ctx) }()
			defer func() { cancel(); <-done }()
			evs := backfilledWorkload(b, size, 5)
			var last uint64
			for i := 0; i < len(evs); i += 1000 {
				rs, err := n.Appender.AppendBatch(ctx, evs[i:min(i+1000, len(evs))])
				if err != nil {
					b.Fatal(err)
				}
				last = rs[len(rs)-1].Seq
			}
			if err := n.WaitFor(ctx, last); err != nil {
				b.Fatal(err)
			}
			for !n.AuditCheckpointsSettled() {
				time.Sleep(20 * time.Millisecond)
			}
			st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true, CacheBytes: 32 << 20})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := projector.Replay(ctx, n.JS, st, n.Models(), projector.ReplayOptions{}); err != nil {
				b.Fatal(err)
			}
			full := time.Since(start)
			st.Close()
			first, span := evs[0].Time, evs[len(evs)-1].Time.Sub(evs[0].Time)
			rng := rand.New(rand.NewPCG(1, 2))
			i, read, slowest := 0, uint64(0), time.Duration(0)
			b.ResetTimer()
			for b.Loop() {
				var asOf *time.Time
				var atSeq uint64
				if i%3 != 1 {
					atSeq = 1 + rng.Uint64N(last)
				}
				if i%3 != 0 {
					t := first.Add(time.Duration(rng.Int64N(int64(span))))
					asOf = &t
				}
				model := n.Models()[i%len(n.Models())].Name()
				i++
				at := time.Now()
				v, release, err := n.At(ctx, asOf, atSeq)
				if err != nil {
					b.Fatal(err)
				}
				// A query reads a model: an audit folds what is read.
				if _, _, err := v.Model(model).Get([]byte("total")); err != nil {
					b.Fatal(err)
				}
				release()
				slowest = max(slowest, time.Since(at))
				b.StopTimer()
				read += auditReads(b, n, asOf, atSeq, last)
				b.StartTimer()
			}
			b.StopTimer()
			// The fixed part: audits exactly at a checkpoint (nothing to fold).
			cps := n.AuditCheckpoints()
			fstart := time.Now()
			for _, cp := range cps {
				v, release, err := n.At(ctx, nil, cp.Seq)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := v.Model(n.Models()[0].Name()).Get([]byte("total")); err != nil {
					b.Fatal(err)
				}
				release()
			}
			b.ReportMetric(float64(time.Since(fstart).Microseconds())/1000/float64(len(cps)), "fixed-ms")
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(full), "full-fold-ratio")
			b.ReportMetric(float64(full.Microseconds())/float64(last), "full-fold-µs/event")
			b.ReportMetric(float64(read)/float64(b.N), "log-reads/op")
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(len(cps)), "checkpoints")
			b.ReportMetric(float64(n.AuditCheckpointDisk())/(1<<20), "checkpoint-MiB")
		})
	}
}

// auditReads is how many sequences of the log an audit reads after its
// checkpoint (what the checkpoints bound, whatever the log's size).
func auditReads(b *testing.B, n *node.Node, asOf *time.Time, atSeq, last uint64) uint64 {
	target := last
	if atSeq > 0 && atSeq < last {
		target = atSeq
	}
	from := n.AuditCheckpointFor(asOf, target)
	ranges, err := n.Store.AuditRanges(from, target, asOf)
	if err != nil {
		b.Fatal(err)
	}
	var read uint64
	for _, r := range ranges {
		read += r.To - r.From + 1
	}
	return read
}

// BenchmarkAuditCheckpointCost measures what audit checkpoints cost the
// live projector: the same log projected from the start by a node that
// takes checkpoints every DefaultAuditCheckpointEvery events and by one
// that takes none, one after the other in each iteration (order
// alternating). with-÷-without is the ratio of their projection times;
// flushes/1k-events counts the memtable flushes of the live store.
func BenchmarkAuditCheckpointCost(b *testing.B) {
	const size = 64000
	evs := backfilledWorkload(b, size, 5)
	project := func(every int) (time.Duration, int64) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n, err := node.Start(ctx, node.Config{DataDir: b.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1},
			NoSyncCommits: true, AuditCheckpointEvery: every})
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		var last uint64
		for i := 0; i < len(evs); i += 1000 {
			rs, err := n.Appender.AppendBatch(ctx, evs[i:min(i+1000, len(evs))])
			if err != nil {
				b.Fatal(err)
			}
			last = rs[len(rs)-1].Seq
		}
		flushes := n.Store.DB().Metrics().Flush.Count
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- n.Run(ctx) }()
		if err := n.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		flushes = n.Store.DB().Metrics().Flush.Count - flushes
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return d, flushes
	}
	var with, without time.Duration
	var fWith, fWithout int64
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			d, f := project(-1)
			without, fWithout = without+d, fWithout+f
			d, f = project(0)
			with, fWith = with+d, fWith+f
		} else {
			d, f := project(0)
			with, fWith = with+d, fWith+f
			d, f = project(-1)
			without, fWithout = without+d, fWithout+f
		}
	}
	b.ReportMetric(float64(with)/float64(without), "with-÷-without")
	b.ReportMetric(float64(size)*float64(b.N)/without.Seconds(), "events/s-without")
	b.ReportMetric(float64(fWith)*1000/float64(size)/float64(b.N), "flushes/1k-events-with")
	b.ReportMetric(float64(fWithout)*1000/float64(size)/float64(b.N), "flushes/1k-events-without")
}
