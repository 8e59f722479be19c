package knowledge_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// Injection at scale: 1000 projects of 105 lessons each (the swarm cap of
// 100 archives 5 per project) plus 200 hive lessons, ≈ 105 000 entries,
// folded once; each iteration injects for a random project and task.

const (
	benchProjects   = 1000
	benchPerProject = 105
	benchHive       = 200
)

var benchVocab = strings.Fields(`parser handler cache index schema query router worker queue retry timeout lock
	mutex channel buffer stream cursor batch commit snapshot replay decoder encoder config flag
	migration fixture mock client server socket token session tenant module package interface struct
	pointer slice map goroutine context deadline backoff jitter checksum digest ledger journal
	pipeline stage shard replica leader follower quorum election lease heartbeat probe metric gauge`)

func benchWord(rng *rand.Rand) string { return benchVocab[rng.IntN(len(benchVocab))] }

func benchLesson(rng *rand.Rand) string {
	return fmt.Sprintf("use %s %s with %s %s when %s %s fails in %s tests",
		benchWord(rng), benchWord(rng), benchWord(rng), benchWord(rng), benchWord(rng), benchWord(rng), benchWord(rng))
}

var (
	benchStoreOnce sync.Once
	benchStore     *projector.Store
	benchStoreErr  error
)

// injectStore folds the 100k-entry history once per test binary.
func injectStore(b *testing.B) *projector.Store {
	benchStoreOnce.Do(func() {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			benchStoreErr = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		models := []projector.Model{knowledge.New()}
		var seq uint64
		var batch []*events.Event
		flush := func() {
			if len(batch) == 0 {
				return
			}
			poison, err := projector.FoldEvents(st, models, batch)
			if err == nil && len(poison) > 0 {
				err = fmt.Errorf("poison: %v", poison[0])
			}
			if err != nil && benchStoreErr == nil {
				benchStoreErr = err
			}
			batch = batch[:0]
		}
		add := func(project, tier string) {
			seq++
			conf := float64(3+rng.IntN(7)) / 10
			ev, err := events.New("knowledge.submitted/v1", project, "bench", t0.Add(time.Duration(seq)*time.Second),
				&events.KnowledgeSubmitted{Lesson: benchLesson(rng), Category: "debugging", Confidence: &conf,
					Tags: []string{benchWord(rng)}, Tier: tier, Source: "agent"})
			if err != nil {
				benchStoreErr = err
				return
			}
			ev.Seq = seq
			batch = append(batch, ev)
			if len(batch) == 1000 {
				flush()
			}
		}
		for i := range benchHive {
			add(fmt.Sprintf("kp-%04d", i%benchProjects), knowledge.TierHive)
		}
		for p := range benchProjects {
			for range benchPerProject {
				add(fmt.Sprintf("kp-%04d", p), "")
			}
		}
		flush()
		benchStore = st
	})
	if benchStoreErr != nil {
		b.Fatal(benchStoreErr)
	}
	return benchStore
}

// BenchmarkInject100k measures knowledge injection (Model.InjectFrom, what
// `lore inject --task ... --headroom` runs in-process) among ≈105k entries
// and reports p50 and p99 latencies. The model starts with an empty pool
// cache; the projects asked for are random among 1000, more than it holds.
func BenchmarkInject100k(b *testing.B) {
	st := injectStore(b)
	r := st.Model(knowledge.ModelName)
	m := knowledge.New()
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := knowledge.DefaultConfig()
	var lat []time.Duration
	shown := 0
	b.ResetTimer()
	for b.Loop() {
		o := knowledge.InjectOptions{
			Task:     fmt.Sprintf("fix the %s %s when the %s %s fails", benchWord(rng), benchWord(rng), benchWord(rng), benchWord(rng)),
			Headroom: 0.9, Project: fmt.Sprintf("kp-%04d", rng.IntN(benchProjects)),
		}
		start := time.Now()
		inj, err := m.InjectFrom(r, cfg, o, t0)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		shown += len(inj.Entries)
	}
	b.StopTimer()
	if shown == 0 {
		b.Fatal("no injection showed anything")
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkInjectPool100k is BenchmarkKnowledgeOps's inject and
// inject/recorded on 100 000 lessons in one project's injections: 10 000
// swarm entries (the swarm's largest cap) and 90 000 hive entries. Seeding
// takes a minute or more.
func BenchmarkInjectPool100k(b *testing.B) {
	for _, op := range []string{"inject", "inject/recorded"} {
		b.Run(fmt.Sprintf("%s/N=100000", strings.ReplaceAll(op, "/", "-")), func(b *testing.B) {
			benchOpOn(b, op, newOpsPool(b, 10000, 90000))
		})
	}
}
