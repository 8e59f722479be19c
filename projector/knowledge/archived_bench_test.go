package knowledge

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// A pool whose history is mostly archived entries: a swarm cap of
// archActive, and archActive + n lessons submitted to one project, so the
// cap has archived n of them. The lessons share a vocabulary, as agents'
// lessons do.

const (
	archActive  = 200
	archProject = "archive"
)

var archVocab = strings.Fields(`parser handler cache index schema query router worker queue retry timeout lock
	mutex channel buffer stream cursor batch commit snapshot replay decoder encoder config flag
	migration fixture mock client server socket token session tenant module package interface struct
	pointer slice map goroutine context deadline backoff jitter checksum digest ledger journal
	pipeline stage shard replica leader follower quorum election lease heartbeat probe metric gauge`)

// archRareLesson draws its words from a vocabulary of 20 000: most of its
// bigrams are in no other lesson, as in free text.
func archRareLesson(rng *rand.Rand) string {
	w := func() string { return fmt.Sprintf("w%05d", rng.IntN(20000)) }
	return fmt.Sprintf("use %s %s with %s %s when %s %s fails in %s %s tests", w(), w(), w(), w(), w(), w(), w(), w())
}

func archLesson(rng *rand.Rand) string {
	w := func() string { return archVocab[rng.IntN(len(archVocab))] }
	return fmt.Sprintf("use %s %s with %s %s when %s %s fails in %s %s tests", w(), w(), w(), w(), w(), w(), w(), w())
}

type archPool struct {
	st  *projector.Store
	m   *Model
	rng *rand.Rand
	seq uint64
}

func (p *archPool) event(tb testing.TB, typ string, data events.Payload) *events.Event {
	tb.Helper()
	p.seq++
	ev, err := events.New(typ, archProject, "bench", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(p.seq)*time.Second), data)
	if err != nil {
		tb.Fatal(err)
	}
	ev.Seq = p.seq
	return ev
}

func (p *archPool) submission(tb testing.TB, lesson string) *events.Event {
	conf := 0.5
	return p.event(tb, "knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: lesson, Category: "debugging",
		Confidence: &conf, Tags: []string{"testing"}, Source: "agent"})
}

func (p *archPool) fold(tb testing.TB, evs ...*events.Event) {
	tb.Helper()
	if poison, err := projector.FoldEvents(p.st, []projector.Model{p.m}, evs); err != nil || len(poison) > 0 {
		tb.Fatal(err, poison)
	}
}

// newArchPool folds the configuration (a swarm cap of active) and active +
// archived lessons, in batches of 1000 events.
func newArchPool(tb testing.TB, active, archived int, lesson func(*rand.Rand) string) *archPool {
	tb.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	p := &archPool{st: st, m: New(), rng: rand.New(rand.NewPCG(uint64(archived), 11))}
	cfg, _ := json.Marshal(map[string]any{"swarm_max_entries": active, "hive_enabled": false,
		"default_max_phases": 1 << 30})
	p.fold(tb, p.event(tb, "knowledge.configured/v1", &events.KnowledgeConfigured{Config: cfg}))
	var batch []*events.Event
	for i := range active + archived {
		batch = append(batch, p.submission(tb, lesson(p.rng)))
		if len(batch) == 1000 || i == active+archived-1 {
			p.fold(tb, batch...)
			batch = batch[:0]
		}
	}
	return p
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkArchivedPool reports, for a pool of archActive active and n
// archived entries: the heap a fold's state of the pool holds (heapB/entry,
// from runtime.MemStats around its load) and the state's own estimate
// (acctB/entry), per entry of the pool; the time of loading the state from
// the store (load-ns); and ns/op and the process's CPU time per op
// (cpu-ns/op, the collector's included), one submission folded (each
// archives one more entry), so that the growth with the archive shows as the ratio
// between the two sizes of one run.
//
// vocab=shared draws the lessons' words from a vocabulary of 60 (as lore
// bench's workload does), vocab=rare from one of 20 000.
func BenchmarkArchivedPool(b *testing.B) {
	for _, v := range []struct {
		name   string
		lesson func(*rand.Rand) string
	}{{"shared", archLesson}, {"rare", archRareLesson}} {
		for _, n := range []int{2000, 20000} {
			b.Run(fmt.Sprintf("vocab=%s/archived=%d", v.name, n), func(b *testing.B) { benchArchived(b, n, v.lesson) })
		}
	}
}

func benchArchived(b *testing.B, n int, lesson func(*rand.Rand) string) {
	p := newArchPool(b, archActive, n, lesson)
	r := p.st.Model(ModelName)
	scope := sumScope(TierSwarm, archProject)
	before := heapAlloc()
	t := time.Now()
	state, err := loadPoolState(r, scope)
	load := time.Since(t)
	if err != nil {
		b.Fatal(err)
	}
	after := heapAlloc()
	entries := float64(len(state.byKey))
	if len(state.byKey) < archActive+n {
		b.Fatalf("%d summaries in the pool, want %d", len(state.byKey), archActive+n)
	}
	runtime.KeepAlive(state)
	b.ResetTimer()
	c0 := cputime.Used()
	for range b.N {
		p.fold(b, p.submission(b, lesson(p.rng)))
	}
	b.StopTimer()
	b.ReportMetric(float64((cputime.Used()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(after-before)/entries, "heapB/entry")
	b.ReportMetric(float64(state.size())/entries, "acctB/entry")
	b.ReportMetric(float64(load.Nanoseconds()), "load-ns")
}
