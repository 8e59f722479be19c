// Package metrics exposes a lore process to Prometheus: events appended and
// projected by type, the projector's lag in events and seconds, dead
// letters, and API latencies by endpoint; plus /healthz.
//
// Metric names. NB: must not change: dashboards and alerts use them.
//
//	lore_events_appended_total{type}          events that reached the log (seen by this process)
//	lore_events_projected_total{type}         of those, events the projector committed
//	lore_log_last_seq                         last sequence of the log
//	lore_projector_checkpoint_seq             last sequence folded and committed
//	lore_projector_lag_events                 log last seq - checkpoint
//	lore_projector_lag_seconds                age of the oldest event not yet projected
//	lore_projector_dead_lettered_total        poison events this process passed (each dead-lettered once per group)
//	lore_projector_duplicates_total           events passed over: their id was folded before
//	lore_dlq_messages                         messages in the dead-letter stream
//	lore_derived_messages                     announcements in LORE_DERIVED
//	lore_nats_connected                       1 when connected to NATS
//	lore_projector_running                    1 while the projector runs
//	lore_api_request_duration_seconds{endpoint,code}  API latency (histogram)
//	lore_pebble_block_cache_bytes             read-model block cache in use (fills to its budget)
//	lore_pebble_block_cache_hits_total        read-model block cache hits
//	lore_pebble_block_cache_misses_total      read-model block cache misses
//	lore_pebble_memtable_bytes                read-model memtables allocated (with zombies)
//	lore_pebble_zombie_memtable_bytes         read-model memtables flushed but still held by a reader
//	lore_pebble_memtables                     read-model memtables
//	lore_malloc_in_use_bytes                  C allocator: allocated, not freed (Pebble's cache and memtables in a cgo build)
//	lore_malloc_free_bytes                    C allocator: freed, still held by its heaps
//	lore_malloc_trims_total                   C allocator: trims (free pages returned to the system)
//	lore_malloc_trim_seconds_total            C allocator: time spent trimming
package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node/cmalloc"
	"github.com/loredev/lore/projector"
)

// Projector is what metrics reads from the projector runtime.
type Projector interface {
	// Seq is the last committed stream sequence.
	Seq() uint64
	// Poisoned counts events the runtime dead-lettered.
	Poisoned() uint64
	// Duplicates counts events passed over because their id was folded.
	Duplicates() uint64
}

// Config says what to observe.
type Config struct {
	NC        *nats.Conn
	JS        jetstream.JetStream
	Projector Projector
	// Now is the clock (default time.Now).
	Now func() time.Time
	// StallAfter is how long the checkpoint may stay behind the log
	// without moving before /healthz says the projector stalled (default
	// DefaultStallAfter).
	StallAfter time.Duration
	// Store, when set, reports the read-model store's memory (Pebble's
	// block cache and memtables live outside the Go heap).
	Store func() projector.StoreMemory
	// Profiling serves net/http/pprof under /debug/pprof/ (heap profiles
	// of a serving process).
	Profiling bool
}

// DefaultStallAfter is Config.StallAfter's default: far longer than a
// commit takes under any load (a batch commits within 100 ms while a
// backlog drains).
const DefaultStallAfter = 30 * time.Second

// Metrics holds a registry with lore's metrics. Observe and
// SetProjectorRunning are safe for concurrent use.
type Metrics struct {
	cfg       Config
	reg       *prometheus.Registry
	appended  *prometheus.CounterVec
	projected *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	running   atomic.Bool

	// progress: the checkpoint last seen by Healthy and when it moved.
	progressMu   sync.Mutex
	lastCp       uint64
	lastProgress time.Time

	mu sync.Mutex
	// pending are events seen in the log and not yet projected, in sequence
	// order. INVARIANT: every entry has seq > the checkpoint last drained.
	pending []pendingEvent
}

type pendingEvent struct {
	seq uint64
	typ string
}

// maxPending bounds the events tracked while the projector lags; beyond
// it, events count as appended only.
const maxPending = 1 << 20

// New returns metrics for one lore process.
func New(cfg Config) *Metrics {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry(), lastProgress: cfg.Now()}
	if cfg.Projector != nil {
		m.lastCp = cfg.Projector.Seq()
	}
	m.appended = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lore_events_appended_total",
		Help: "Events that reached the log since this process started observing it (at the projector's checkpoint), by type."}, []string{"type"})
	m.projected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lore_events_projected_total",
		Help: "Events the projector folded and committed since this process started, by type."}, []string{"type"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lore_api_request_duration_seconds",
		Help:    "Time to answer an API request (NATS request-reply), by endpoint and code (200, 400, 404, 409, 500).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
		[]string{"endpoint", "code"})
	m.reg.MustRegister(m.appended, m.projected, m.latency, &state{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the Prometheus registry (to add collectors or gather).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Observe records one API request; it has the signature of api.Options.Observe.
func (m *Metrics) Observe(subject string, d time.Duration, err error) {
	code := "200"
	if err != nil {
		code = api.CodeOf(err)
	}
	m.latency.WithLabelValues(strings.TrimPrefix(subject, "lore.api."), code).Observe(d.Seconds())
}

// SetProjectorRunning says whether the projector runs (health).
func (m *Metrics) SetProjectorRunning(on bool) { m.running.Store(on) }

// Healthy reports whether NATS is connected, the projector runs and the
// read model keeps up with the log, with the reason when not. A read model
// behind the log whose checkpoint has not moved for StallAfter is not
// healthy: the projector runs but folds nothing. One behind but moving is
// healthy (catching up).
func (m *Metrics) Healthy() (bool, string) {
	switch {
	case m.cfg.NC == nil || !m.cfg.NC.IsConnected():
		return false, "nats not connected"
	case !m.running.Load():
		return false, "projector not running"
	}
	cp := m.cfg.Projector.Seq()
	now := m.cfg.Now()
	m.progressMu.Lock()
	if cp != m.lastCp {
		m.lastCp, m.lastProgress = cp, now
	}
	still := now.Sub(m.lastProgress)
	m.progressMu.Unlock()
	if still < m.cfg.StallAfter || m.cfg.JS == nil {
		return true, "ok"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, _, err := streamInfo(ctx, m.cfg.JS, events.LogStream)
	if err != nil {
		return false, fmt.Sprintf("log not readable: %v", err)
	}
	if last := info.State.LastSeq; last > cp {
		return false, fmt.Sprintf("projector stalled: read model at seq %d, log at %d, no progress for %s",
			cp, last, still.Truncate(time.Second))
	}
	return true, "ok"
}

// Run follows the log's headers (no payloads) from the projector's
// checkpoint to count events by type, until ctx ends.
func (m *Metrics) Run(ctx context.Context) error {
	start := m.cfg.Projector.Seq() + 1
	cons, err := m.cfg.JS.OrderedConsumer(ctx, events.LogStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.EventsFilter}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq: start, HeadersOnly: true})
	if err != nil {
		return fmt.Errorf("metrics: follow the log: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("metrics: follow the log: %w", err)
	}
	defer it.Stop()
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				it.Stop()
				return
			case <-t.C:
				m.drain()
			}
		}
	}()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("metrics: follow the log: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			continue
		}
		// The catalogue's own string, not the header's: a pending entry
		// must not keep the decoded header alive (one allocation per
		// event not yet projected).
		typ := "unknown" // bounded label values: foreign clients may set anything
		if k, known := events.Lookup(msg.Headers().Get(events.TypeHeader)); known {
			typ = k.Type
		}
		m.appended.WithLabelValues(typ).Inc()
		m.mu.Lock()
		if len(m.pending) < maxPending {
			m.pending = append(m.pending, pendingEvent{seq: meta.Sequence.Stream, typ: typ})
		}
		m.mu.Unlock()
		m.drain()
	}
}

// drain counts as projected every pending event at or below the checkpoint.
func (m *Metrics) drain() {
	cp := m.cfg.Projector.Seq()
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for ; i < len(m.pending) && m.pending[i].seq <= cp; i++ {
		m.projected.WithLabelValues(m.pending[i].typ).Inc()
	}
	if i > 0 {
		m.pending = append(m.pending[:0], m.pending[i:]...)
	}
}

// state collects the gauges read at scrape time from the streams and the
// projector.
type state struct{ m *Metrics }

var (
	descLastSeq    = prometheus.NewDesc("lore_log_last_seq", "Last stream sequence of the log (LORE).", nil, nil)
	descCheckpoint = prometheus.NewDesc("lore_projector_checkpoint_seq", "Last log sequence the projector folded and committed.", nil, nil)
	descLagEvents  = prometheus.NewDesc("lore_projector_lag_events", "Events in the log not yet projected (last seq - checkpoint).", nil, nil)
	descLagSeconds = prometheus.NewDesc("lore_projector_lag_seconds", "Age of the oldest event not yet projected (0 when caught up).", nil, nil)
	descPoisoned   = prometheus.NewDesc("lore_projector_dead_lettered_total", "Poison events this process's projector passed: each is in LORE_DLQ once, written by this replica or another.", nil, nil)
	descDuplicates = prometheus.NewDesc("lore_projector_duplicates_total", "Events this process's projector passed over: an event with the same id was folded before.", nil, nil)
	descDLQ        = prometheus.NewDesc("lore_dlq_messages", "Messages in the dead-letter stream (LORE_DLQ).", nil, nil)
	descDerived    = prometheus.NewDesc("lore_derived_messages", "Announcements in LORE_DERIVED.", nil, nil)
	descConnected  = prometheus.NewDesc("lore_nats_connected", "1 when the process is connected to NATS.", nil, nil)
	descRunning    = prometheus.NewDesc("lore_projector_running", "1 while the projector runs.", nil, nil)
	descBlockCache = prometheus.NewDesc("lore_pebble_block_cache_bytes", "Bytes of the read-model store's block cache in use (it fills up to its budget).", nil, nil)
	descCacheHits  = prometheus.NewDesc("lore_pebble_block_cache_hits_total", "Hits of the read-model store's block cache.", nil, nil)
	descCacheMiss  = prometheus.NewDesc("lore_pebble_block_cache_misses_total", "Misses of the read-model store's block cache.", nil, nil)
	descMemTable   = prometheus.NewDesc("lore_pebble_memtable_bytes", "Bytes allocated by the read-model store's memtables, zombies included.", nil, nil)
	descZombieMem  = prometheus.NewDesc("lore_pebble_zombie_memtable_bytes", "Bytes of read-model memtables flushed but still held by an open iterator or snapshot.", nil, nil)
	descMemTables  = prometheus.NewDesc("lore_pebble_memtables", "Memtables of the read-model store.", nil, nil)
	descMallocUsed = prometheus.NewDesc("lore_malloc_in_use_bytes", "Bytes the C allocator has allocated and not freed (Pebble's block cache and memtables in a cgo build).", nil, nil)
	descMallocFree = prometheus.NewDesc("lore_malloc_free_bytes", "Bytes freed to the C allocator and still held by its heaps (resident unless trimmed).", nil, nil)
	descTrims      = prometheus.NewDesc("lore_malloc_trims_total", "Trims of the C allocator: the free pages inside its heaps returned to the system.", nil, nil)
	descTrimTime   = prometheus.NewDesc("lore_malloc_trim_seconds_total", "Time spent trimming the C allocator.", nil, nil)
)

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLastSeq, descCheckpoint, descLagEvents, descLagSeconds,
		descPoisoned, descDuplicates, descDLQ, descDerived, descConnected, descRunning, descBlockCache, descCacheHits, descCacheMiss, descMemTable, descZombieMem, descMemTables, descMallocUsed, descMallocFree, descTrims, descTrimTime} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	m := s.m
	m.drain()
	cp := m.cfg.Projector.Seq()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(descCheckpoint, float64(cp))
	ch <- prometheus.MustNewConstMetric(descPoisoned, prometheus.CounterValue, float64(m.cfg.Projector.Poisoned()))
	ch <- prometheus.MustNewConstMetric(descDuplicates, prometheus.CounterValue, float64(m.cfg.Projector.Duplicates()))
	gauge(descConnected, b2f(m.cfg.NC != nil && m.cfg.NC.IsConnected()))
	gauge(descRunning, b2f(m.running.Load()))
	if m.cfg.Store != nil {
		sm := m.cfg.Store()
		gauge(descBlockCache, float64(sm.BlockCacheBytes))
		ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, float64(sm.BlockCacheHits))
		ch <- prometheus.MustNewConstMetric(descCacheMiss, prometheus.CounterValue, float64(sm.BlockCacheMisses))
		gauge(descMemTable, float64(sm.MemTableBytes))
		gauge(descZombieMem, float64(sm.ZombieMemTableBytes))
		gauge(descMemTables, float64(sm.MemTables))
	}
	if cs, ok := cmalloc.Read(); ok {
		gauge(descMallocUsed, float64(cs.InUse))
		gauge(descMallocFree, float64(cs.Free))
		ch <- prometheus.MustNewConstMetric(descTrims, prometheus.CounterValue, float64(cs.Trims))
		ch <- prometheus.MustNewConstMetric(descTrimTime, prometheus.CounterValue, cs.TrimTime.Seconds())
	}
	if m.cfg.JS == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if info, st, err := streamInfo(ctx, m.cfg.JS, events.LogStream); err == nil {
		last := info.State.LastSeq
		gauge(descLastSeq, float64(last))
		lag := uint64(0)
		if last > cp {
			lag = last - cp
		}
		gauge(descLagEvents, float64(lag))
		secs := 0.0
		if lag > 0 {
			if msg, err := st.GetMsg(ctx, cp+1, jetstream.WithGetMsgSubject(events.EventsFilter)); err == nil {
				secs = max(m.cfg.Now().Sub(msg.Time).Seconds(), 0)
			}
		}
		gauge(descLagSeconds, secs)
	}
	if info, _, err := streamInfo(ctx, m.cfg.JS, events.DLQStream); err == nil {
		gauge(descDLQ, float64(info.State.Msgs))
	}
	if info, _, err := streamInfo(ctx, m.cfg.JS, events.DerivedStream); err == nil {
		gauge(descDerived, float64(info.State.Msgs))
	}
}

func streamInfo(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamInfo, jetstream.Stream, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	info, err := st.Info(ctx)
	return info, st, err
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
