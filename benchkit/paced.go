package benchkit

import (
	"context"
	"errors"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/loredev/lore/node"
)

// pacedRun is the paced load's measure: per event, its append ack, the
// time from it to the projector's commit covering it, and its type; the
// node's background work sampled meanwhile; the rate offered.
type pacedRun struct {
	seqs     []uint64
	acked    []time.Time
	lags     []time.Duration
	types    []string
	activity []activity
	offered  float64
}

// pacedLag appends new workload events one by one at o.PacedRate for
// o.PacedFor, sampling the node's background work every millisecond.
func pacedLag(ctx context.Context, n *node.Node, commits *commitLog, stages *stageLog, o Options) (pacedRun, error) {
	var run pacedRun
	total := int(float64(o.PacedRate) * o.PacedFor.Seconds())
	s := Workload{Seed: o.Seed, Prefix: "lag"}.Stream()
	seqs := make([]uint64, 0, total)
	run.acked = make([]time.Time, 0, total)
	run.types = make([]string, 0, total)
	stopSampling, samples := sampleActivity(n)
	stop := sync.OnceFunc(stopSampling) // called before the samples are read, and on every return
	defer stop()
	stages.start()
	defer stages.stop()
	start := time.Now()
	for i := range total {
		ev, _, err := s.Next()
		if err != nil {
			return run, err
		}
		due := start.Add(time.Duration(float64(i) / float64(o.PacedRate) * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return run, ctx.Err()
			}
		}
		r, err := n.Appender.Append(ctx, ev)
		if err != nil {
			return run, err
		}
		seqs, run.acked, run.types = append(seqs, r.Seq), append(run.acked, time.Now()), append(run.types, ev.Type)
	}
	run.offered = float64(total) / time.Since(start).Seconds()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := n.Runtime.WaitFor(wctx, seqs[len(seqs)-1])
	stop()
	if err != nil {
		return run, err
	}
	run.activity, run.seqs = *samples, seqs
	lags, ok := commits.lagOf(seqs, run.acked)
	if !ok {
		return run, errors.New("paced load: an acknowledged event was never committed")
	}
	run.lags = lags
	return run, nil
}

// sampleActivity samples the node's background work every millisecond
// until stop returns (the samples are complete then, the last one taken
// after the stop was asked).
func sampleActivity(n *node.Node) (stop func(), samples *[]activity) {
	samples = new([]activity)
	rt := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/latencies:seconds"}}
	take := func() {
		metrics.Read(rt)
		a := n.Store.Activity()
		x := activity{at: time.Now(), checkpoints: n.AuditCheckpointsTaken(),
			flushes: a.Flushes, compactions: a.Compactions, gcs: rt[0].Value.Uint64(), running: a.Running}
		if rt[1].Value.Kind() == metrics.KindFloat64Histogram {
			h := rt[1].Value.Float64Histogram()
			x.sched, x.buckets = slices.Clone(h.Counts), h.Buckets
		}
		*samples = append(*samples, x)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			take()
			select {
			case <-quit:
				take()
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); <-done }, samples
}
