package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/events"
)

// SoakOptions size a soak: a serving lore process (a child, so that the
// load generator's memory is not measured) under a steady load of
// workload events and injection calls over NATS.
type SoakOptions struct {
	Duration   time.Duration // default 10 min
	Rate       int           // workload events/s (default 2000)
	InjectRate int           // knowledge.inject + patterns.inject calls/s, alternately (default 50)
	Every      time.Duration // sampling period (default 5 s)
	Seed       int64         // workload seed (default 1)
	// Knowledge entries and Patterns seeded before the clock starts
	// (default 1000 each), so that injections find something.
	Knowledge, Patterns int
	// Server returns the command of the serving process: `lore serve`
	// with its data in dataDir, its NATS server on a free port and its
	// metrics (with --pprof) on metricsAddr. Required.
	Server func(dataDir, metricsAddr string) *exec.Cmd
	// Dir holds the server's data (a temp folder, removed, when empty).
	Dir string
	// ProfileDir, when set, receives heap profiles of the server
	// (heap-<seconds>s.pb.gz) every ProfileEvery (default Duration/5):
	// compare two with `go tool pprof -base`.
	ProfileDir   string
	ProfileEvery time.Duration
	Logf         func(format string, args ...any)
}

func (o *SoakOptions) setDefaults() {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Rate <= 0 {
		o.Rate = 2000
	}
	if o.InjectRate < 0 {
		o.InjectRate = 0
	}
	if o.Every <= 0 {
		o.Every = 5 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.ProfileEvery <= 0 {
		o.ProfileEvery = o.Duration / 5
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// SoakSample is the serving process's memory at one time of a soak.
type SoakSample struct {
	Seconds float64 `json:"t_s"`
	// RSSBytes is VmRSS of the server (/proc/<pid>/status).
	RSSBytes int64 `json:"rss_bytes"`
	// RSSAnonBytes and RSSFileBytes split it: anonymous memory (heaps,
	// caches) and file pages mapped by the process.
	RSSAnonBytes int64 `json:"rss_anon_bytes"`
	RSSFileBytes int64 `json:"rss_file_bytes"`
	// HeapInuseBytes, Goroutines: the server's Go runtime.
	HeapInuseBytes int64 `json:"heap_inuse_bytes"`
	// HeapRetainedBytes is the heap the runtime holds from the system
	// (obtained, not yet released); NextGCBytes the heap size at which
	// the next collection starts.
	HeapRetainedBytes int64 `json:"heap_retained_bytes"`
	NextGCBytes       int64 `json:"next_gc_bytes"`
	Goroutines        int64 `json:"goroutines"`
	// Pebble's block cache and memtables (outside the Go heap).
	BlockCacheBytes int64 `json:"pebble_block_cache_bytes"`
	MemTableBytes   int64 `json:"pebble_memtable_bytes"`
	// The C allocator (Pebble's cache and memtables in a cgo build):
	// allocated and not freed, and freed but still held.
	MallocInUseBytes int64 `json:"malloc_in_use_bytes"`
	MallocFreeBytes  int64 `json:"malloc_free_bytes"`
	// Trims of the C allocator so far, and their total time.
	MallocTrims       int64   `json:"malloc_trims"`
	MallocTrimSeconds float64 `json:"malloc_trim_s"`
	// Sent events so far; LagEvents not yet projected.
	Sent      int64 `json:"sent"`
	LagEvents int64 `json:"lag_events"`
	// Scraped: the metrics above were read (a busy server may not answer
	// within 30 s; RSS is read all the same).
	Scraped bool `json:"scraped"`
}

// SoakReport holds one soak's figures.
type SoakReport struct {
	Seconds    float64 `json:"seconds"`
	Rate       int     `json:"rate_per_s"`
	InjectRate int     `json:"inject_rate_per_s"`
	// Sent events and their achieved rate; Injections made and failed.
	Sent         int64              `json:"sent"`
	SentPerS     float64            `json:"sent_per_s"`
	Injections   int64              `json:"injections"`
	InjectErrors int64              `json:"inject_errors"`
	Inject       map[string]Latency `json:"inject"`
	Samples      []SoakSample       `json:"samples"`
	// The measured window is the soak's second half: WarmupEndSeconds
	// (half the soak) to the end. At its start and end, the mean of the
	// samples of the last Every×6 (30 s by default).
	WarmupEndSeconds float64    `json:"warmup_end_s"`
	AtWarmupEnd      SoakSample `json:"at_warmup_end"`
	AtEnd            SoakSample `json:"at_end"`
	// RSSGrowthPct is the RSS growth over the measured window, in %.
	RSSGrowthPct  float64 `json:"rss_growth_pct"`
	HeapGrowthPct float64 `json:"heap_growth_pct"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	// ProjectedPerS is the rate the server folded events over the
	// measured window (sent − lag at both ends): below SentPerS, the
	// projector falls behind and memory that follows the lag grows.
	ProjectedPerS float64  `json:"projected_per_s"`
	Profiles      []string `json:"heap_profiles,omitempty"`
	Target        Target   `json:"target"`
}

// Soak runs a serving lore process under a steady load for o.Duration and
// samples its memory every o.Every.
func Soak(ctx context.Context, o SoakOptions) (*SoakReport, error) {
	o.setDefaults()
	if o.Server == nil {
		return nil, errors.New("soak: no server command")
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "lore-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("soak: profiles: %w", err)
		}
	}
	srv, err := startServer(ctx, o, filepath.Join(dir, "data"))
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	nc, err := nats.Connect(srv.url, nats.MaxPingsOutstanding(100))
	if err != nil {
		return nil, fmt.Errorf("soak: connect %s: %w", srv.url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ap := events.NewAppender(js)
	o.Logf("soak: seeding %d knowledge entries and %d patterns", o.Knowledge, o.Patterns)
	if err := appendSeq(ctx, ap, KnowledgeSeeds(o.Seed, o.Knowledge), 1000); err != nil {
		return nil, fmt.Errorf("soak: seed knowledge: %w", err)
	}
	if err := appendSeq(ctx, ap, PatternSeeds(o.Seed, o.Patterns), 20); err != nil {
		return nil, fmt.Errorf("soak: seed patterns: %w", err)
	}
	if err := srv.waitCaughtUp(ctx); err != nil {
		return nil, err
	}

	rep := &SoakReport{Rate: o.Rate, InjectRate: o.InjectRate, Inject: map[string]Latency{}}
	o.Logf("soak: %d events/s and %d injections/s for %s (server pid %d)", o.Rate, o.InjectRate, o.Duration, srv.cmd.Process.Pid)
	lctx, stop := context.WithTimeout(ctx, o.Duration)
	defer stop()
	start := time.Now()
	var sent atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errc <- generate(lctx, ap, o, start, &sent) }()
	var inj injections
	go func() { defer wg.Done(); errc <- inj.run(lctx, api.NewClient(nc), o, start) }()

	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	nextProfile := o.ProfileEvery
	sample := func() {
		s := srv.sample(ctx) // not lctx: the last sample falls at its end
		s.Seconds, s.Sent = time.Since(start).Seconds(), sent.Load()
		rep.Samples = append(rep.Samples, s)
		o.Logf("soak: %4.0fs rss %.0f MiB, heap %.0f MiB, block cache %.0f MiB, memtables %.0f MiB, %d goroutines, lag %d",
			s.Seconds, mib(s.RSSBytes), mib(s.HeapInuseBytes), mib(s.BlockCacheBytes), mib(s.MemTableBytes), s.Goroutines, s.LagEvents)
	}
	for done := false; !done; {
		select {
		case <-lctx.Done():
			done = true
		case <-tick.C:
			sample()
			if o.ProfileDir != "" && time.Since(start) >= nextProfile {
				if p, err := srv.heapProfile(ctx, o.ProfileDir, time.Since(start)); err != nil {
					o.Logf("soak: heap profile: %v", err)
				} else {
					rep.Profiles = append(rep.Profiles, p)
				}
				nextProfile += o.ProfileEvery
			}
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := srv.alive(); err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Sent = sent.Load()
	rep.SentPerS = float64(rep.Sent) / rep.Seconds
	inj.report(rep)
	summariseSoak(rep, o)
	return rep, nil
}

// summariseSoak fills the window figures from the samples.
func summariseSoak(rep *SoakReport, o SoakOptions) {
	rep.WarmupEndSeconds = rep.Seconds / 2
	span := (6 * o.Every).Seconds()
	rep.AtWarmupEnd = meanSample(rep.Samples, rep.WarmupEndSeconds-span, rep.WarmupEndSeconds)
	rep.AtEnd = meanSample(rep.Samples, rep.Seconds-span, rep.Seconds)
	for _, s := range rep.Samples {
		rep.PeakRSSBytes = max(rep.PeakRSSBytes, s.RSSBytes)
	}
	if w := rep.AtEnd.Seconds - rep.AtWarmupEnd.Seconds; w > 0 && rep.AtEnd.Scraped && rep.AtWarmupEnd.Scraped {
		done := (rep.AtEnd.Sent - rep.AtEnd.LagEvents) - (rep.AtWarmupEnd.Sent - rep.AtWarmupEnd.LagEvents)
		rep.ProjectedPerS = max(float64(done), 0) / w
	}
	rep.RSSGrowthPct = growthPct(rep.AtWarmupEnd.RSSBytes, rep.AtEnd.RSSBytes)
	rep.HeapGrowthPct = growthPct(rep.AtWarmupEnd.HeapInuseBytes, rep.AtEnd.HeapInuseBytes)
	rep.Target = Target{Name: "RSS growth over the second half (%)", Value: rep.RSSGrowthPct, Goal: "<= 10",
		Met: rep.AtWarmupEnd.RSSBytes > 0 && rep.RSSGrowthPct <= 10}
}

func growthPct(from, to int64) float64 {
	if from <= 0 {
		return 0
	}
	return 100 * float64(to-from) / float64(from)
}

// meanSample averages the samples with from < t <= to (the latest sample
// at or before to when none is in the span).
func meanSample(ss []SoakSample, from, to float64) SoakSample {
	var m SoakSample
	n, ns := int64(0), int64(0)
	for _, s := range ss {
		if s.Seconds > from && s.Seconds <= to {
			m.RSSBytes += s.RSSBytes
			m.RSSAnonBytes += s.RSSAnonBytes
			m.RSSFileBytes += s.RSSFileBytes
			m.Sent = s.Sent
			n++
			if !s.Scraped {
				continue
			}
			ns++
			m.HeapInuseBytes += s.HeapInuseBytes
			m.HeapRetainedBytes += s.HeapRetainedBytes
			m.NextGCBytes += s.NextGCBytes
			m.Goroutines += s.Goroutines
			m.BlockCacheBytes += s.BlockCacheBytes
			m.MemTableBytes += s.MemTableBytes
			m.MallocInUseBytes += s.MallocInUseBytes
			m.MallocFreeBytes += s.MallocFreeBytes
			m.MallocTrims, m.MallocTrimSeconds = s.MallocTrims, s.MallocTrimSeconds // counters: the last
			m.LagEvents += s.LagEvents
		}
	}
	if n == 0 {
		for _, s := range ss {
			if s.Seconds <= to {
				m = s
			}
		}
		return m
	}
	m.Seconds = to
	m.RSSBytes /= n
	m.RSSAnonBytes /= n
	m.RSSFileBytes /= n
	if m.Scraped = ns > 0; m.Scraped {
		m.HeapInuseBytes /= ns
		m.HeapRetainedBytes /= ns
		m.NextGCBytes /= ns
		m.Goroutines /= ns
		m.BlockCacheBytes /= ns
		m.MemTableBytes /= ns
		m.MallocInUseBytes /= ns
		m.MallocFreeBytes /= ns
		m.LagEvents /= ns
	}
	return m
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// generate appends the workload at o.Rate from one writer (the loops'
// order is kept), in batches of what fell due since the last batch.
func generate(ctx context.Context, ap *events.Appender, o SoakOptions, start time.Time, sent *atomic.Int64) error {
	st := Workload{Seed: o.Seed, Prefix: "soak", Clock: time.Now}.Stream()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	batch := make([]*events.Event, 0, 1000)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		due := int64(time.Since(start).Seconds()*float64(o.Rate)) - sent.Load()
		for due > 0 {
			batch = batch[:0]
			for range min(due, 1000) {
				ev, _, err := st.Next()
				if err != nil {
					return err
				}
				batch = append(batch, ev)
			}
			if _, err := ap.AppendBatch(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("soak: append: %w", err)
			}
			sent.Add(int64(len(batch)))
			due -= int64(len(batch))
		}
	}
}

// injections makes knowledge.inject and patterns.inject calls, alternately,
// at o.InjectRate over the NATS API (injectCallers at once, as agents).
type injections struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	n, bad atomic.Int64
}

// injectCallers is how many injection calls may be in flight at once.
const injectCallers = 16

func (in *injections) run(ctx context.Context, cl *api.Client, o SoakOptions, start time.Time) error {
	in.lat = map[string][]time.Duration{}
	if o.InjectRate == 0 {
		return nil
	}
	calls := make(chan int, 64)
	var wg sync.WaitGroup
	for w := range injectCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(w)))
			for i := range calls {
				group, args := "knowledge", marshal(map[string]any{"task": KnowledgeTask(rng), "headroom": 0.5})
				project := KnowledgeProject(rng.IntN(max(KnowledgeProjects(o.Knowledge), 1)))
				if i%2 == 1 {
					group, project = "patterns", events.DefaultProject
					args = marshal(map[string]any{"task": PatternTask(rng), "category": "debugging", "top_k": 5})
				}
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				t0 := time.Now()
				_, err := cl.CallRaw(cctx, group, "inject", api.Request{Args: args, Project: project, Source: "soak", NoWait: true})
				d := time.Since(t0)
				cancel()
				in.n.Add(1)
				if err != nil {
					in.bad.Add(1)
					continue
				}
				in.mu.Lock()
				in.lat[group+".inject"] = append(in.lat[group+".inject"], d)
				in.mu.Unlock()
			}
		}()
	}
	defer wg.Wait()
	defer close(calls)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	made := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for due := int(time.Since(start).Seconds() * float64(o.InjectRate)); made < due; made++ {
			select {
			case calls <- made:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

func (in *injections) report(rep *SoakReport) {
	rep.Injections, rep.InjectErrors = in.n.Load(), in.bad.Load()
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, ds := range in.lat {
		rep.Inject[k] = Summarise(ds)
	}
}

// server is the serving child process.
type server struct {
	cmd     *exec.Cmd
	url     string
	metrics string // http://host:port
	exited  chan struct{}
	err     error // set before exited closes
	stderr  *tailBuffer
}

// startServer starts the server and waits for its NATS URL and metrics.
func startServer(ctx context.Context, o SoakOptions, dataDir string) (*server, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: o.Server(dataDir, addr), metrics: "http://" + addr, exited: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	s.cmd.Stdout, s.cmd.Stderr = io.Discard, s.stderr
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("soak: start the server: %w", err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	o.Logf("soak: server %s (pid %d)", strings.Join(s.cmd.Args, " "), s.cmd.Process.Pid)
	// Wait for the URL file, then for the metrics endpoint.
	deadline := time.After(2 * time.Minute)
	for s.url == "" {
		if b, err := os.ReadFile(filepath.Join(dataDir, "nats.url")); err == nil && strings.TrimSpace(string(b)) != "" {
			s.url = strings.TrimSpace(string(b))
			break
		}
		if err := s.waitStep(ctx, deadline); err != nil {
			s.stop()
			return nil, err
		}
	}
	for {
		if _, err := s.scrape(ctx); err == nil {
			return s, nil
		}
		if err := s.waitStep(ctx, deadline); err != nil {
			s.stop()
			return nil, err
		}
	}
}

func (s *server) waitStep(ctx context.Context, deadline <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.exited:
		return s.alive()
	case <-deadline:
		return fmt.Errorf("soak: the server did not start within 2 minutes: %s", s.stderr)
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

// alive is nil while the server runs.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("soak: the server exited (%v): %s", s.err, s.stderr)
	default:
		return nil
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 30 s).
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitCaughtUp waits until the projector has folded the whole log.
func (s *server) waitCaughtUp(ctx context.Context) error {
	deadline := time.After(10 * time.Minute)
	for {
		m, err := s.scrape(ctx)
		if err == nil && m["lore_log_last_seq"] > 0 && m["lore_projector_lag_events"] == 0 {
			return nil
		}
		if err := s.waitStep(ctx, deadline); err != nil {
			return err
		}
	}
}

// sample reads the server's RSS and its metrics (zero when unreadable).
func (s *server) sample(ctx context.Context) SoakSample {
	pid := s.cmd.Process.Pid
	rss := procStatusBytes(pid, "VmRSS:", "RssAnon:", "RssFile:") // one read: one instant
	out := SoakSample{RSSBytes: rss[0], RSSAnonBytes: rss[1], RSSFileBytes: rss[2]}
	m, err := s.scrape(ctx)
	if err != nil {
		return out
	}
	out.HeapInuseBytes = int64(m["go_memstats_heap_inuse_bytes"])
	out.HeapRetainedBytes = int64(m["go_memstats_heap_sys_bytes"] - m["go_memstats_heap_released_bytes"])
	out.NextGCBytes = int64(m["go_memstats_next_gc_bytes"])
	out.Goroutines = int64(m["go_goroutines"])
	out.BlockCacheBytes = int64(m["lore_pebble_block_cache_bytes"])
	out.MemTableBytes = int64(m["lore_pebble_memtable_bytes"])
	out.MallocInUseBytes = int64(m["lore_malloc_in_use_bytes"])
	out.MallocFreeBytes = int64(m["lore_malloc_free_bytes"])
	out.MallocTrims = int64(m["lore_malloc_trims_total"])
	out.MallocTrimSeconds = m["lore_malloc_trim_seconds_total"]
	out.LagEvents = int64(m["lore_projector_lag_events"])
	out.Scraped = true
	return out
}

// scrape reads the unlabelled series of the server's /metrics.
func (s *server) scrape(ctx context.Context) (map[string]float64, error) {
	b, err := s.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = f
		}
	}
	return out, nil
}

// heapProfile saves the server's heap profile in dir.
func (s *server) heapProfile(ctx context.Context, dir string, at time.Duration) (string, error) {
	b, err := s.get(ctx, "/debug/pprof/heap")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, fmt.Sprintf("heap-%04.0fs.pb.gz", at.Seconds()))
	return p, os.WriteFile(p, b, 0o644)
}

func (s *server) get(ctx context.Context, path string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.metrics+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// freeAddr returns a free 127.0.0.1 TCP address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// procStatusBytes reads the "<field> N kB" lines of /proc/<pid>/status
// in bytes, in the order asked, from one read of the file (0 for a field
// unavailable).
func procStatusBytes(pid int, fields ...string) []int64 {
	out := make([]int64, len(fields))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		for i, field := range fields {
			if rest, ok := strings.CutPrefix(line, field); ok {
				if f := strings.Fields(rest); len(f) >= 1 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					out[i] = kb << 10
				}
			}
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written (the server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
