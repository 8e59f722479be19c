package benchkit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// rawStream is the scratch stream of the raw publish baseline: the log's
// configuration on other subjects, deleted after the measurement.
const (
	rawStream  = "LORE_BENCH_RAW"
	rawSubject = "lore-bench-raw"
)

// rawPublisher publishes the wire form of events (prepared as the
// appender would, with Nats-Msg-Id) to the scratch stream with async
// publishes, as fast as the server acks, from one goroutine: the ceiling
// of appends.
type rawPublisher struct {
	js   jetstream.JetStream
	prep func(*events.Event) (*nats.Msg, error)
}

// newRawPublisher creates the scratch stream (deleted by close).
func newRawPublisher(ctx context.Context, js jetstream.JetStream, prep func(*events.Event) (*nats.Msg, error)) (*rawPublisher, error) {
	cfg := events.StreamConfigs(events.StreamOptions{})[0]
	cfg.Name, cfg.Subjects, cfg.Description = rawStream, []string{rawSubject + ".>"}, "lore bench: raw publish baseline (scratch)"
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return nil, fmt.Errorf("raw stream: %w", err)
	}
	return &rawPublisher{js: js, prep: prep}, nil
}

func (r *rawPublisher) close(ctx context.Context) {
	_ = r.js.DeleteStream(context.WithoutCancel(ctx), rawStream)
}

// publish prepares evs (copies: the events themselves are left as they
// are for lore's append), then times their publishes until every one is
// acknowledged.
func (r *rawPublisher) publish(ctx context.Context, evs []*events.Event) (time.Duration, error) {
	msgs := make([]*nats.Msg, 0, len(evs))
	for _, ev := range evs {
		c := *ev
		m, err := r.prep(&c)
		if err != nil {
			return 0, err
		}
		m.Subject = rawSubject + strings.TrimPrefix(m.Subject, events.EventsPrefix)
		m.Header.Set(jetstream.MsgIDHeader, "raw-"+ev.ID)
		msgs = append(msgs, m)
	}
	start := time.Now()
	for _, m := range msgs {
		// On a busy machine acks can lag the publishes: wait for room
		// under the pending cap rather than fail the baseline.
		if _, err := r.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			return 0, fmt.Errorf("raw publish: %w", err)
		}
	}
	select {
	case <-r.js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(10 * time.Minute):
		return 0, errors.New("raw publish: not acknowledged within 10 minutes")
	}
	took := time.Since(start)
	if p := r.js.PublishAsyncPending(); p != 0 {
		return 0, fmt.Errorf("raw publish: %d unacknowledged", p)
	}
	return took, nil
}

// rawConsume drains the log's first n messages with an ordered consumer
// (AckNone, nothing decoded): the ceiling of projection and rebuild.
func rawConsume(ctx context.Context, js jetstream.JetStream, n uint64) (time.Duration, error) {
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return 0, fmt.Errorf("log stream: %w", err)
	}
	start := time.Now()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventsFilter}})
	if err != nil {
		return 0, fmt.Errorf("raw consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return 0, fmt.Errorf("raw consume: %w", err)
	}
	defer it.Stop()
	for i := uint64(0); i < n; i++ {
		if i%1000 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if _, err := it.Next(); err != nil {
			return 0, fmt.Errorf("raw consume %d of %d: %w", i, n, err)
		}
	}
	return time.Since(start), nil
}

// commitLog records the projector's commits (checkpoint, time) in order.
type commitLog struct {
	mu  sync.Mutex
	seq []uint64
	at  []time.Time
}

func (c *commitLog) record(seq uint64) {
	now := time.Now()
	c.mu.Lock()
	c.seq = append(c.seq, seq)
	c.at = append(c.at, now)
	c.mu.Unlock()
}

// lagOf returns, for each acknowledged (seq, ack time), the time until the
// first commit whose checkpoint covers seq (0 if it committed before the
// writer saw the ack). ok is false when a seq was never committed.
func (c *commitLog) lagOf(seqs []uint64, acked []time.Time) (lags []time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range seqs {
		j := sort.Search(len(c.seq), func(k int) bool { return c.seq[k] >= s })
		if j == len(c.seq) {
			return lags, false
		}
		lags = append(lags, max(0, c.at[j].Sub(acked[i])))
	}
	return lags, true
}

// LagEpisode is a run of consecutive paced events that each lagged at or
// above a threshold.
type LagEpisode struct {
	// Index is the run's first event (0: the first paced event), Type
	// its type; Events the run's length; MaxUs its worst lag.
	Index  int     `json:"index"`
	Type   string  `json:"type"`
	Events int     `json:"events"`
	MaxUs  float64 `json:"max_us"`
	// What the node did around the run (from its worst lag before its
	// first event's append to its last event's commit, as sampled every
	// millisecond: what held the projector up began at most that long
	// before the first event waited): live audit checkpoints completed;
	// memtable flushes (a checkpoint's forced flush among them),
	// compactions of the live store and Go collections begun; the most
	// flushes and compactions of the live store running at once, those
	// begun before included (a collection under way is not seen).
	Checkpoints uint64 `json:"audit_checkpoints"`
	Flushes     uint64 `json:"flushes"`
	Compactions uint64 `json:"compactions"`
	GCs         uint64 `json:"gc_cycles"`
	StoreWork   int64  `json:"store_work_running"`
	// SchedWaitUs is the longest some goroutine of the process waited,
	// runnable, for a core meanwhile (the lower bound of the runtime's
	// histogram bucket it fell in).
	SchedWaitUs float64 `json:"sched_wait_us"`
	// Where the run's events waited: the worst time from an event's
	// append ack to its delivery to the projector's fold loop (the
	// server and the decoders), the worst from its delivery to the commit
	// covering it (folding and committing, and what the fold loop waited
	// for), and the slowest commit fsync (visible to durable) of the
	// commits made meanwhile.
	DeliveryUs   float64 `json:"delivery_us"`
	FoldCommitUs float64 `json:"fold_commit_us"`
	FsyncUs      float64 `json:"slowest_fsync_us"`
}

// stageLog records, while on, when the projector received each event
// (RuntimeOptions.OnDelivered) and when each commit became durable
// (OnDurable).
type stageLog struct {
	on        atomic.Bool
	mu        sync.Mutex
	delivered map[uint64]time.Time
	durable   map[uint64]time.Time
}

func (s *stageLog) start() {
	s.mu.Lock()
	s.delivered, s.durable = map[uint64]time.Time{}, map[uint64]time.Time{}
	s.mu.Unlock()
	s.on.Store(true)
}

func (s *stageLog) stop() { s.on.Store(false) }

func (s *stageLog) deliver(seq uint64) { s.record(&s.delivered, seq) }

func (s *stageLog) sync(seq uint64) { s.record(&s.durable, seq) }

func (s *stageLog) record(m *map[uint64]time.Time, seq uint64) {
	if !s.on.Load() {
		return
	}
	now := time.Now()
	s.mu.Lock()
	(*m)[seq] = now
	s.mu.Unlock()
}

// stagesOf sets each episode's DeliveryUs, FoldCommitUs and FsyncUs from
// the events' sequences, acks and lags, the stage log and the commits. An
// event whose delivery was not recorded counts for neither wait.
func stagesOf(eps []LagEpisode, seqs []uint64, acked []time.Time, lags []time.Duration, st *stageLog, commits *commitLog) {
	st.mu.Lock()
	defer st.mu.Unlock()
	commits.mu.Lock()
	defer commits.mu.Unlock()
	us := func(d time.Duration) float64 { return float64(max(d, 0).Nanoseconds()) / 1e3 }
	for i := range eps {
		e := &eps[i]
		last := e.Index + e.Events - 1
		for k := e.Index; k <= last; k++ {
			d, ok := st.delivered[seqs[k]]
			if !ok {
				continue
			}
			e.DeliveryUs = max(e.DeliveryUs, us(d.Sub(acked[k])))
			e.FoldCommitUs = max(e.FoldCommitUs, us(acked[k].Add(lags[k]).Sub(d)))
		}
		from := acked[e.Index].Add(-time.Duration(e.MaxUs * float64(time.Microsecond)))
		to := acked[last].Add(lags[last])
		for j, at := range commits.at {
			if at.Before(from) || at.After(to) {
				continue
			}
			if d, ok := st.durable[commits.seq[j]]; ok {
				e.FsyncUs = max(e.FsyncUs, us(d.Sub(at)))
			}
		}
	}
}

// activity is a sample of the node's background work counters.
type activity struct {
	at                                time.Time
	checkpoints, flushes, compactions uint64
	gcs                               uint64
	running                           int64 // the store's flushes and compactions under way
	// sched is the runtime's histogram of the time goroutines waited
	// runnable before they ran (/sched/latencies:seconds), cumulative
	// counts by the bounds buckets.
	sched   []uint64
	buckets []float64
}

// during sets each episode's counts of the work done around it, from
// acked[first] less its worst lag to acked[last]+lags[last]: the
// difference between the last sample at or before that start and the
// first one at or after that end, and the most store work running in the
// samples from one to the other (samples in time order). Without samples
// around it they stay 0.
func during(eps []LagEpisode, acked []time.Time, lags []time.Duration, samples []activity) {
	for i := range eps {
		e := &eps[i]
		last := e.Index + e.Events - 1
		from := acked[e.Index].Add(-time.Duration(e.MaxUs * float64(time.Microsecond)))
		to := acked[last].Add(lags[last])
		a := sort.Search(len(samples), func(k int) bool { return samples[k].at.After(from) }) - 1
		b := sort.Search(len(samples), func(k int) bool { return !samples[k].at.Before(to) })
		if a < 0 || b == len(samples) {
			continue
		}
		e.Checkpoints = samples[b].checkpoints - samples[a].checkpoints
		e.Flushes = samples[b].flushes - samples[a].flushes
		e.Compactions = samples[b].compactions - samples[a].compactions
		e.GCs = samples[b].gcs - samples[a].gcs
		for _, x := range samples[a : b+1] {
			e.StoreWork = max(e.StoreWork, x.running)
		}
		e.SchedWaitUs = schedWaitUs(samples[a].sched, samples[b].sched, samples[b].buckets)
	}
}

// schedWaitUs is the lower bound, in µs, of the highest bucket whose
// count grew from the histogram before to after (0: none, or no
// histogram).
func schedWaitUs(before, after []uint64, buckets []float64) float64 {
	if len(before) != len(after) || len(buckets) != len(after)+1 {
		return 0
	}
	for i := len(after) - 1; i >= 0; i-- {
		if after[i] > before[i] {
			return max(buckets[i], 0) * 1e6
		}
	}
	return 0
}

// lagEpisodes returns at most k runs of consecutive events whose lag is at
// least at (at > 0), the worst first.
func lagEpisodes(lags []time.Duration, types []string, at time.Duration, k int) []LagEpisode {
	if at <= 0 {
		return nil
	}
	var eps []LagEpisode
	for i := 0; i < len(lags); i++ {
		if lags[i] < at {
			continue
		}
		e := LagEpisode{Index: i, Type: types[i]}
		for ; i < len(lags) && lags[i] >= at; i++ {
			e.Events++
			e.MaxUs = max(e.MaxUs, float64(lags[i].Microseconds()))
		}
		eps = append(eps, e)
	}
	sort.SliceStable(eps, func(a, b int) bool { return eps[a].MaxUs > eps[b].MaxUs })
	return eps[:min(k, len(eps))]
}

// Latency summarises a set of durations, in microseconds.
type Latency struct {
	N     int     `json:"n"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// Summarise returns the count, p50, p99 and maximum of ds.
func Summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return float64(s[i].Nanoseconds()) / 1e3
	}
	return Latency{N: len(s), P50us: q(0.50), P99us: q(0.99), MaxUs: q(1)}
}
