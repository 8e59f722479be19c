package benchkit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/eventlog"
)

// Options size a bench run.
type Options struct {
	Events    int   // workload events (default 200k)
	Knowledge int   // seeded knowledge entries (default 10k)
	Patterns  int   // seeded registry patterns (default 10k)
	Seed      int64 // workload seed (default 1)
	Writers   int   // concurrent appenders (default 4)
	// PacedRate and PacedFor: the steady load of the lag measurement
	// (default 2000 events/s for 3 s).
	PacedRate int
	PacedFor  time.Duration
	// Queries per injection endpoint and path (default 2000 in-process,
	// 500 over NATS).
	Queries int
	// NoSyncCommits skips Pebble's fsync on projector commits (as
	// lore serve --no-sync-commits).
	NoSyncCommits bool
	// Dir holds the node's data (a temp folder, removed, when empty).
	Dir string
	// Memory: the node's cache budgets, as lore serve's (0: the
	// defaults); the rebuilds' stores share its store cache. The
	// process's memory limit is the caller's (lore bench sets lore
	// serve's).
	Memory node.MemoryBudgets
	// HeapProfiles, when set, is a folder that receives a heap profile of
	// the process at the end of each phase.
	HeapProfiles string
	// Logf reports progress (nil: silent).
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() {
	if o.Events <= 0 {
		o.Events = 200_000
	}
	if o.Knowledge < 0 {
		o.Knowledge = 0
	}
	if o.Patterns < 0 {
		o.Patterns = 0
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Writers <= 0 {
		o.Writers = 4
	}
	if o.PacedRate <= 0 {
		o.PacedRate = 2000
	}
	if o.PacedFor <= 0 {
		o.PacedFor = 3 * time.Second
	}
	if o.Queries <= 0 {
		o.Queries = 2000
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	// A run logs from more than one goroutine (its phases, the peak
	// watcher): one line at a time.
	var logMu sync.Mutex
	logf := o.Logf
	o.Logf = func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logf(format, args...)
	}
}

// Report holds one run's figures. Ratios compare lore with raw JetStream
// measured in the same run on the same server.
type Report struct {
	Seed         int64  `json:"seed"`
	Events       int    `json:"events"`
	Knowledge    int    `json:"knowledge"`
	Patterns     int    `json:"patterns"`
	Writers      int    `json:"writers"`
	SyncCommits  bool   `json:"sync_commits"`
	StreamEvents uint64 `json:"stream_events"`
	// Memory is how the process's memory was set for the run.
	Memory MemorySettings `json:"memory"`

	RawPublishPerS float64 `json:"raw_publish_per_s"`
	AppendPerS     float64 `json:"append_per_s"`
	AppendRatio    float64 `json:"append_ratio"`

	RawConsumePerS    float64 `json:"raw_consume_per_s"`
	RawConsumeSeconds float64 `json:"raw_consume_s"`
	ProjectionPerS    float64 `json:"projection_per_s"`
	ProjectionRatio   float64 `json:"projection_ratio"`
	RebuildSeconds    float64 `json:"rebuild_s"`
	RebuildRatio      float64 `json:"rebuild_time_ratio"`
	RebuildMatches    bool    `json:"rebuild_digest_matches"`
	// RebuildLogSeconds rebuilds the log model alone: the runtime's own
	// cost (decode, batch, checkpoint) without the domain folds.
	RebuildLogSeconds float64 `json:"rebuild_log_model_s"`
	RebuildLogRatio   float64 `json:"rebuild_log_model_time_ratio"`
	// RebuildModels rebuilds each read model alone (the log model among
	// them): where a full rebuild's time goes. With a lane per model, a
	// full rebuild on enough cores takes about the slowest model's time.
	RebuildModels []ModelRebuild `json:"rebuild_models"`

	LagRate int `json:"lag_rate_per_s"`
	// LagOfferedPerS is the rate the paced appends reached (below LagRate
	// when one append at a time cannot keep the pace).
	LagOfferedPerS float64 `json:"lag_offered_per_s"`
	Lag            Latency `json:"lag"`
	// LagEpisodes are the paced load's worst runs of consecutive events
	// lagging at or above the p99: a run is a stall that every event
	// behind it waited out; its first event is the one folding when it
	// began, or the first to arrive during a stall of something else.
	LagEpisodes []LagEpisode `json:"lag_episodes,omitempty"`

	Inject map[string]Latency `json:"inject"`
	// InjectRegistry is the cross-loop registry the patterns.inject
	// queries ranked: the workload's completed loops add patterns to the
	// seeded ones, so at a million events it holds more than --patterns.
	InjectRegistry RegistrySize `json:"inject_registry"`

	ReadYourWrites ReadYourWrites `json:"read_your_writes"`
	// Audit: --as-of / --at-seq queries at random points of the log.
	Audit AuditReport `json:"audit"`

	// PeakRSSBytes is the whole process's peak (server, client, stores,
	// generator); Phases each phase's wall time and peak.
	PeakRSSBytes int64    `json:"peak_rss_bytes"`
	Phases       []Phase  `json:"phases"`
	Targets      []Target `json:"targets"`
}

// ModelRebuild is the rebuild of one read model alone.
type ModelRebuild struct {
	Model     string  `json:"model"`
	Seconds   float64 `json:"s"`
	TimeRatio float64 `json:"time_ratio"` // ÷ the raw consume time
	// FoldStartUs and FoldEndUs are the rebuild's wall time per event
	// over the first and the last Window events of the workload (after
	// the seeded lessons and patterns); FoldGrowth is end ÷ start: above 1,
	// the model's fold cost grows with the history.
	Window      uint64  `json:"window_events"`
	FoldStartUs float64 `json:"fold_start_us_per_event"`
	FoldEndUs   float64 `json:"fold_end_us_per_event"`
	FoldGrowth  float64 `json:"fold_growth"`
}

// Target is one goal, reported (never asserted).
type Target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Goal  string  `json:"goal"`
	Met   bool    `json:"met"`
}

// Run measures everything on a fresh embedded node. Every phase stops at
// ctx's cancellation; the node and its data are removed in any case.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.setDefaults()
	rep := &Report{Seed: o.Seed, Events: o.Events, Knowledge: o.Knowledge, Patterns: o.Patterns,
		Writers: o.Writers, SyncCommits: !o.NoSyncCommits, Memory: memorySettings(o.Memory), LagRate: o.PacedRate, Inject: map[string]Latency{}}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "lore-bench-")
		if err != nil {
			return nil, err
		}
		dir = d
		defer func() {
			start := time.Now()
			if err := os.RemoveAll(d); err != nil {
				o.Logf("remove %s: %v", d, err)
			}
			o.Logf("removed the bench's data in %.1f s", time.Since(start).Seconds())
		}()
	}
	ph := &phases{logf: o.Logf, heapDir: o.HeapProfiles}
	if o.HeapProfiles != "" {
		if err := os.MkdirAll(o.HeapProfiles, 0o755); err != nil {
			return nil, fmt.Errorf("heap profiles: %w", err)
		}
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); ph.watchPeak(wctx) }()
		defer func() { stopWatch(); <-watched }()
	}

	n, err := node.Start(ctx, node.Config{DataDir: filepath.Join(dir, "node"), Embedded: node.EmbeddedOptions{Port: -1},
		TickInterval: -1, NoSyncCommits: o.NoSyncCommits, Memory: o.Memory, NatsOptions: []nats.Option{nats.MaxPingsOutstanding(100)}})
	if err != nil {
		return nil, err
	}
	defer func() {
		start := time.Now()
		n.Close()
		o.Logf("stopped the node in %.1f s", time.Since(start).Seconds())
	}()
	ph.fills = n.AuditFills

	// 1. Raw publish vs lore's append, after the seeded lessons and
	// patterns. The workload is generated once, genChunk events at a time:
	// each chunk is published raw, then appended by lore; only the
	// publishes and appends are timed, so the bench holds one chunk.
	ph.start("seed", "seeding %d knowledge entries and %d patterns", o.Knowledge, o.Patterns)
	if err := seed(ctx, n.Appender, o); err != nil {
		return nil, err
	}
	seeded, _, err := logState(ctx, n)
	if err != nil {
		return nil, err
	}
	ph.start("append", "raw publish and lore append of %d events (seed %d, %d writers), %d at a time", o.Events, o.Seed, o.Writers, genChunk)
	raw, app1, err := publishAndAppend(ctx, n, Workload{Seed: o.Seed}.Stream(), o.Events, o.Writers)
	if err != nil {
		return nil, err
	}
	rep.RawPublishPerS = float64(o.Events) / raw.Seconds()
	rep.AppendPerS = float64(o.Events) / app1.Seconds()
	rep.AppendRatio = rep.AppendPerS / rep.RawPublishPerS

	// 2. Raw consume vs live projection and full rebuild of the same log.
	last, msgs, err := logState(ctx, n)
	if err != nil {
		return nil, err
	}
	rep.StreamEvents = msgs
	ph.start("raw consume", "raw consume of %d events", msgs)
	rc, err := rawConsume(ctx, n.JS, msgs)
	if err != nil {
		return nil, err
	}
	rep.RawConsumeSeconds = rc.Seconds()
	rep.RawConsumePerS = float64(msgs) / rc.Seconds()

	commits, stages := &commitLog{}, &stageLog{}
	n.Runtime = projector.NewRuntime(n.JS, n.Store, n.Models(), projector.RuntimeOptions{OnCommit: commits.record,
		OnDelivered: stages.deliver, OnDurable: stages.sync, Sealer: n.Sealer})
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = n.Run(rctx) }()
	defer func() {
		start := time.Now()
		stop()
		wg.Wait()
		o.Logf("stopped the projector in %.1f s", time.Since(start).Seconds())
	}()
	ph.start("live projection", "live projection of %d events (every model)", msgs)
	start := time.Now()
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	proj := time.Since(start)
	rep.ProjectionPerS = float64(msgs) / proj.Seconds()
	rep.ProjectionRatio = rep.ProjectionPerS / rep.RawConsumePerS
	liveDigest, err := n.Store.Digest()
	if err != nil {
		return nil, err
	}
	ph.start("full rebuild", "full rebuild of %d events", msgs)
	rb, rebuildDigest, err := rebuild(ctx, n, n.Models(), filepath.Join(dir, "rebuild"))
	if err != nil {
		return nil, err
	}
	rep.RebuildSeconds = rb.Seconds()
	rep.RebuildRatio = rb.Seconds() / rc.Seconds()
	rep.RebuildMatches = rebuildDigest == liveDigest
	for _, m := range n.Models() {
		ph.start("rebuild "+m.Name(), "rebuild of the %s model alone", m.Name())
		mr, err := rebuildWindows(ctx, n, m, filepath.Join(dir, "rebuild-"+m.Name()), seeded, last)
		if err != nil {
			return nil, err
		}
		mr.TimeRatio = mr.Seconds / rc.Seconds()
		rep.RebuildModels = append(rep.RebuildModels, mr)
		if m.Name() == eventlog.Name {
			rep.RebuildLogSeconds = mr.Seconds
			rep.RebuildLogRatio = mr.Seconds / rc.Seconds()
		}
	}

	ph.start("audits", "%d audits at random points of the log", AuditPoints)
	if rep.Audit, err = measureAudits(ctx, n, o, last, rb, dir); err != nil {
		return nil, err
	}

	// 3. End-to-end lag under a steady paced load.
	ph.start("paced load", "paced load: %d events/s for %s", o.PacedRate, o.PacedFor)
	paced, err := pacedLag(ctx, n, commits, stages, o)
	if err != nil {
		return nil, err
	}
	rep.Lag, rep.LagOfferedPerS = Summarise(paced.lags), paced.offered
	rep.LagEpisodes = lagEpisodes(paced.lags, paced.types, time.Duration(rep.Lag.P99us*1e3), 5)
	during(rep.LagEpisodes, paced.acked, paced.lags, paced.activity)
	stagesOf(rep.LagEpisodes, paced.seqs, paced.acked, paced.lags, stages, commits)

	// 4. Injection queries, in-process and over NATS; read your writes.
	if rep.InjectRegistry, err = registrySize(n); err != nil {
		return nil, err
	}
	ph.start("injection", "injection queries, %d active patterns (%d in the text index)", rep.InjectRegistry.Active, rep.InjectRegistry.Indexed)
	if err := injectLatencies(ctx, n, o, rep, ph); err != nil {
		return nil, err
	}
	ph.end()
	rep.Phases = ph.list
	rep.PeakRSSBytes = ph.peak
	rep.Targets = []Target{
		{"append / raw publish", rep.AppendRatio, ">= 0.6", rep.AppendRatio >= 0.6},
		{"projection / raw consume", rep.ProjectionRatio, ">= 0.7", rep.ProjectionRatio >= 0.7},
		{"rebuild time / raw consume time", rep.RebuildRatio, "<= 1.5", rep.RebuildRatio <= 1.5},
		{"knowledge.inject p99 in-process (ms)", rep.Inject["knowledge.inject/in-process"].P99us / 1e3, "<= 1", rep.Inject["knowledge.inject/in-process"].P99us <= 1000},
		{"read your writes p50 (ms)", rep.ReadYourWrites.P50us / 1e3, "<= 0.5", rep.ReadYourWrites.P50us <= 500},
		{"read your writes p99 (ms)", rep.ReadYourWrites.P99us / 1e3, "<= 2", rep.ReadYourWrites.P99us <= 2000},
		{"audit p99 (s)", rep.Audit.P99us / 1e6, "<= 1", rep.Audit.P99us <= 1e6},
		{"patterns.inject p99 in-process (ms)", rep.Inject["patterns.inject/in-process"].P99us / 1e3, "<= 1", rep.Inject["patterns.inject/in-process"].P99us <= 1000},
		{"peak RSS (GiB)", float64(rep.PeakRSSBytes) / (1 << 30), "<= 1", rep.PeakRSSBytes <= 1<<30},
	}
	o.Logf("measured; stopping the node and removing its data")
	return rep, nil
}

func appendChunks(ctx context.Context, a *events.Appender, evs []*events.Event, chunk int) error {
	for i := 0; i < len(evs); i += chunk {
		if _, err := a.AppendBatch(ctx, evs[i:min(i+chunk, len(evs))]); err != nil {
			return err
		}
	}
	return nil
}

// genChunk is the number of workload events the bench holds at a time.
const genChunk = 50_000

// publishAndAppend generates n events of the stream, genChunk at a time;
// each chunk is published raw (rawPublisher), then appended by lore with
// w concurrent writers: writer k owns the loops of slots ≡ k (mod w) and
// appends their events in order, in batches of 1000. It returns the time
// the raw publishes and lore's appends took (generating is not timed).
func publishAndAppend(ctx context.Context, n *node.Node, s *Stream, total, w int) (raw, lore time.Duration, err error) {
	rp, err := newRawPublisher(ctx, n.JS, n.Appender.Prepare)
	if err != nil {
		return 0, 0, err
	}
	defer rp.close(ctx)
	evs := make([]*events.Event, 0, min(genChunk, total))
	writers := make([]int, 0, min(genChunk, total))
	for done := 0; done < total; {
		evs, writers = evs[:0], writers[:0]
		for i := range min(genChunk, total-done) {
			if i%1000 == 0 && ctx.Err() != nil {
				return 0, 0, ctx.Err()
			}
			ev, writer, err := s.Next()
			if err != nil {
				return 0, 0, err
			}
			evs, writers = append(evs, ev), append(writers, writer)
			done++
		}
		d, err := rp.publish(ctx, evs)
		if err != nil {
			return 0, 0, err
		}
		raw += d
		if d, err = appendParts(ctx, n.Appender, evs, writers, w); err != nil {
			return 0, 0, err
		}
		lore += d
	}
	return raw, lore, nil
}

// appendParts appends evs with w concurrent writers (writer k: the events
// whose loop slot is ≡ k mod w, in order) and returns the time it took.
func appendParts(ctx context.Context, a *events.Appender, evs []*events.Event, writers []int, w int) (time.Duration, error) {
	parts := make([][]*events.Event, w)
	for i, ev := range evs {
		parts[writers[i]%w] = append(parts[writers[i]%w], ev)
	}
	errc := make(chan error, w)
	start := time.Now()
	for _, p := range parts {
		go func() { errc <- appendChunks(ctx, a, p, 1000) }()
	}
	var errs []error
	for range parts {
		errs = append(errs, <-errc)
	}
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return took, err // every writer stopped for it
	}
	return took, errors.Join(errs...)
}

// seed appends the seeded lessons and registry patterns (KnowledgeSeeds,
// PatternSeeds) as they are generated, a batch at a time: the bench holds
// one batch, whatever the sizes.
func seed(ctx context.Context, a *events.Appender, o Options) error {
	if err := appendSeq(ctx, a, KnowledgeSeeds(o.Seed, o.Knowledge), 1000); err != nil {
		return fmt.Errorf("seed knowledge: %w", err)
	}
	if err := appendSeq(ctx, a, PatternSeeds(o.Seed, o.Patterns), 20); err != nil {
		return fmt.Errorf("seed patterns: %w", err)
	}
	return nil
}

// appendSeq appends a stream of events in batches of batch, in order.
func appendSeq(ctx context.Context, a *events.Appender, seq iter.Seq2[*events.Event, error], batch int) error {
	evs := make([]*events.Event, 0, batch)
	for ev, err := range seq {
		if err != nil {
			return err
		}
		if evs = append(evs, ev); len(evs) == batch {
			if _, err := a.AppendBatch(ctx, evs); err != nil {
				return err
			}
			evs = evs[:0]
		}
	}
	return appendChunks(ctx, a, evs, batch)
}

func logState(ctx context.Context, n *node.Node) (last, msgs uint64, err error) {
	st, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		return 0, 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.State.LastSeq, info.State.Msgs, nil
}

// rebuild folds the whole log into a fresh store (fsync'd commits, as the
// node's) with models, and returns its time and digest.
func rebuild(ctx context.Context, n *node.Node, models []projector.Model, dir string) (time.Duration, string, error) {
	st, err := projector.OpenStore(dir, rebuildStore(n))
	if err != nil {
		return 0, "", err
	}
	defer dropStore(st, dir)
	start := time.Now()
	if _, err := projector.Replay(ctx, n.JS, st, models, projector.ReplayOptions{Sealer: n.Sealer}); err != nil {
		return 0, "", fmt.Errorf("rebuild: %w", err)
	}
	d := time.Since(start)
	dg, err := st.Digest()
	return d, dg, err
}

// rebuildStore is the options of a rebuild's store: fsync'd commits, as
// the live store's, and the node's block cache shared (one budget for the
// process, as it would be for one store: the live store is idle meanwhile,
// so the rebuild's blocks take its place).
func rebuildStore(n *node.Node) projector.StoreOptions {
	return projector.StoreOptions{Sync: true, ShareCache: n.Store}
}

// dropStore closes a rebuild's store and removes it: a run keeps one
// rebuild's data on disk at a time.
func dropStore(st *projector.Store, dir string) {
	_ = st.Close()
	_ = os.RemoveAll(dir)
}

// rebuildWindows rebuilds one model alone from the whole log into a fresh
// store (fsync'd commits), in four replays: up to seeded (the seeded
// lessons and patterns), the first window of the workload, its middle,
// and its last window, each timed. Seconds is their sum.
func rebuildWindows(ctx context.Context, n *node.Node, m projector.Model, dir string, seeded, last uint64) (ModelRebuild, error) {
	mr := ModelRebuild{Model: m.Name()}
	st, err := projector.OpenStore(dir, rebuildStore(n))
	if err != nil {
		return mr, err
	}
	defer dropStore(st, dir)
	models := []projector.Model{m}
	if err := st.Reset(projector.FormatVersion(models), last); err != nil {
		return mr, err
	}
	// The windows: a tenth of the workload, at least 1 000 and at most
	// 50 000 events, never more than half of it (they do not overlap).
	work := last - min(seeded, last)
	w := min(max(work/10, 1000), 50_000, work/2)
	mr.Window = w
	bounds := []uint64{seeded, seeded + w, last - w, last}
	var took []time.Duration
	for _, b := range bounds {
		start := time.Now()
		if _, err := projector.Replay(ctx, n.JS, st, models, projector.ReplayOptions{UntilSeq: b, Sealer: n.Sealer}); err != nil {
			return mr, fmt.Errorf("rebuild %s: %w", m.Name(), err)
		}
		took = append(took, time.Since(start))
	}
	for _, d := range took {
		mr.Seconds += d.Seconds()
	}
	if w > 0 {
		mr.FoldStartUs = float64(took[1].Microseconds()) / float64(w)
		mr.FoldEndUs = float64(took[3].Microseconds()) / float64(w)
		if mr.FoldStartUs > 0 {
			mr.FoldGrowth = mr.FoldEndUs / mr.FoldStartUs
		}
	}
	return mr, nil
}

// RegistrySize is the size of the cross-loop registry.
type RegistrySize struct {
	Active   int `json:"active"`   // patterns not archived
	Indexed  int `json:"indexed"`  // patterns in the text index patterns.inject ranks
	Archived int `json:"archived"` // archived patterns
}

// registrySize reads the live cross-loop registry's totals.
func registrySize(n *node.Node) (RegistrySize, error) {
	st, err := crossloop.LoadStats(n.Live().Model("crossloop"))
	if err != nil {
		return RegistrySize{}, fmt.Errorf("registry size: %w", err)
	}
	r := RegistrySize{Indexed: st.IndexDocs, Archived: st.Archived}
	for _, c := range st.ByType {
		r.Active += c
	}
	return r, nil
}

// injectLatencies times knowledge.inject and patterns.inject: in-process
// (the endpoint called on the live view) and over NATS (the API service,
// no_wait: the reply returns once the injection record is stored).
func injectLatencies(ctx context.Context, n *node.Node, o Options, rep *Report, ph *phases) error {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x696e))
	kproj := func() string {
		if o.Knowledge == 0 {
			return fmt.Sprintf("p%d", rng.IntN(8))
		}
		return KnowledgeProject(rng.IntN(KnowledgeProjects(o.Knowledge)))
	}
	type call struct {
		group, name string
		args        func() (project string, args []byte)
	}
	calls := []call{
		{"knowledge", "inject", func() (string, []byte) {
			return kproj(), marshal(map[string]any{"task": KnowledgeTask(rng), "headroom": 0.5})
		}},
		{"patterns", "inject", func() (string, []byte) {
			return events.DefaultProject, marshal(map[string]any{"task": PatternTask(rng), "category": "debugging", "top_k": 5})
		}},
	}
	for _, c := range calls {
		ep, ok := app.Lookup(c.group, c.name)
		if !ok {
			return fmt.Errorf("endpoint %s.%s is not registered", c.group, c.name)
		}
		ds := make([]time.Duration, 0, o.Queries)
		for range o.Queries {
			if err := ctx.Err(); err != nil {
				return err
			}
			project, args := c.args()
			req := app.Request{Now: time.Now(), Project: project, Source: "bench", Args: args}
			t0 := time.Now()
			var err error
			if ep.Query != nil {
				_, err = ep.Query(ctx, n.Live(), req)
			} else {
				_, _, err = ep.Command(ctx, n.Live(), req)
			}
			ds = append(ds, time.Since(t0))
			if err != nil {
				return fmt.Errorf("%s.%s in-process: %w", c.group, c.name, err)
			}
		}
		rep.Inject[c.group+"."+c.name+"/in-process"] = Summarise(ds)
	}

	svc, err := n.Serve(api.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	cl := api.NewClient(nc)
	q := max(o.Queries/4, 1)
	for _, c := range calls {
		ds := make([]time.Duration, 0, q)
		for range q {
			project, args := c.args()
			t0 := time.Now()
			_, err := cl.CallRaw(ctx, c.group, c.name, api.Request{Args: args, Project: project, Source: "bench", NoWait: true})
			ds = append(ds, time.Since(t0))
			if err != nil {
				return fmt.Errorf("%s.%s over NATS: %w", c.group, c.name, err)
			}
		}
		rep.Inject[c.group+"."+c.name+"/nats"] = Summarise(ds)
	}
	ph.start("read your writes", "read your writes: commands one after another")
	ryw, err := measureReadYourWrites(ctx, nc, cl, max(q/len(rywCommands), 1))
	if err != nil {
		return err
	}
	rep.ReadYourWrites = ryw
	return nil
}
