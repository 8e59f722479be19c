package crossloop_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// BenchmarkInject100k: one injection query among 100k patterns. The query
// reads the postings of its terms (which carry what filtering and bounding
// a candidate needs; decoded once into the model's cache, then revalidated
// by each term's record), the scoring records of the candidates whose bound can
// still reach the top k, and the k patterns returned. It reports the p50
// and p99 of the calls, once the store's background compactions settled.
func BenchmarkInject100k(b *testing.B) {
	const n, chunk = 100_000, 500
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	model := crossloop.New(crossloop.Config{})
	f, err := projector.NewFolder(st, []projector.Model{model}, false)
	if err != nil {
		b.Fatal(err)
	}
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%04d", i)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seq := uint64(0)
	for i := 0; i < n; i += chunk {
		d := &events.RegistryImported{}
		for j := i; j < i+chunk; j++ {
			msg := fmt.Sprintf("%s %s %s %s %s", words[j%5000], words[(j*7)%5000], words[(j*13)%5000], words[(j*31)%5000], words[j/20%5000])
			p := crossloop.Pattern{ID: fmt.Sprintf("pat-error-gen-%06d", j), Type: crossloop.TypeError, Title: "generated",
				ErrorType: "TypeError", ErrorPattern: msg, FixDescription: "fix " + msg, Category: "debugging",
				Successful: 4, UsageCount: 4, SuccessRate: 1, FirstDiscovered: at, LastUsed: at}
			raw, _ := json.Marshal(p)
			d.Patterns = append(d.Patterns, raw)
		}
		ev, err := events.New("registry.imported/v1", "default", "bench", at, d)
		if err != nil {
			b.Fatal(err)
		}
		seq++
		ev.Seq = seq
		if _, err := f.Fold(ev); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// Steady state: the population's flushes and compactions run in the
	// background and would otherwise compete with the first queries.
	if err := st.DB().Flush(); err != nil {
		b.Fatal(err)
	}
	for st.DB().Metrics().Compact.NumInProgress > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	// Then one shape whatever the write volume: compacted to the last
	// level. (Where the last flush falls decides whether a few L0 tables
	// stay behind, which every Get then checks too: a few more bytes
	// written can move the figures by a third.)
	if err := st.DB().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		b.Fatal(err)
	}
	r := st.Model(crossloop.ModelName)
	cfg := model.Config() // as the app ranks: with the model's posting cache
	req := crossloop.InjectRequest{Task: "fix TypeError w0042 w0294 in the w0546 handler", Category: "debugging"}
	rs, err := crossloop.Rank(context.Background(), r, cfg, req, nil)
	if err != nil || len(rs) == 0 {
		b.Fatalf("rank: %v %v", rs, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var ds []time.Duration
	for b.Loop() {
		t := time.Now()
		if _, err := crossloop.Rank(context.Background(), r, cfg, req, nil); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkInjectShared100k: injection queries among the 100k patterns of
// `lore bench --patterns 100000` (benchkit.SeedPatterns: a shared
// vocabulary of a few dozen words, so each query term has thousands of
// postings), asked as the bench asks them (benchkit.PatternTask, category
// debugging, top 5), a different query each call, with the candidate pool
// picked by the full scan of the postings ("scan") and by prunedPool
// ("pruned"), in the same run. It reports the p50 and p99 of the calls,
// and fails unless both give the same answers to 1000 queries.
func BenchmarkInjectShared100k(b *testing.B) {
	st, model, _ := sharedRegistry(b, 100_000)
	defer st.Close()
	r := st.Model(crossloop.ModelName)
	cfg := model.Config()
	reqs := sharedQueries(1000)
	answers := func(prune bool) []byte {
		defer crossloop.SetPrunePool(crossloop.SetPrunePool(prune))
		var all []byte
		for _, req := range reqs {
			rs, err := crossloop.Rank(context.Background(), r, cfg, req, nil)
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := json.Marshal(rs)
			all = append(all, raw...)
		}
		return all
	}
	if scan, pruned := answers(false), answers(true); string(scan) != string(pruned) {
		b.Fatal("pruned pool: answers differ from the scan's")
	}
	for _, mode := range []string{"scan", "pruned"} {
		b.Run(mode, func(b *testing.B) {
			defer crossloop.SetPrunePool(crossloop.SetPrunePool(mode == "pruned"))
			b.ReportAllocs()
			var ds []time.Duration
			i := 0
			for b.Loop() {
				t := time.Now()
				if _, err := crossloop.Rank(context.Background(), r, cfg, reqs[i%len(reqs)], nil); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
				i++
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkInjectBench100k: `lore bench`'s in-process figure of
// patterns.inject at 100k patterns: the queries of the bench
// (benchkit.PatternTask, category debugging, top 5) asked one after
// another from an empty posting cache, so the first query of each term is
// among them, as after a start. It reports the p50 and p99 of the calls,
// the CPU per call (user and system time of the process, the collector
// included) and how many answers equal those of the exhaustive ranking
// (no cache, every posting scored): the benchmark fails on a difference.
// Run with -benchtime 2000x (the bench's query count).
func BenchmarkInjectBench100k(b *testing.B) {
	st, model, _ := sharedRegistry(b, 100_000)
	defer st.Close()
	r := st.Model(crossloop.ModelName)
	reqs := sharedQueries(2000)
	exact := func(req crossloop.InjectRequest) []byte {
		defer crossloop.SetPrunePool(crossloop.SetPrunePool(false))
		rs, err := crossloop.Rank(context.Background(), r, crossloop.Uncached(model.Config()), req, nil)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(rs)
		return raw
	}
	want := map[int][]byte{}
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			cfg := crossloop.FreshCache(model.Config())
			if mode == "warm" { // every term read once before
				for _, req := range reqs {
					if _, err := crossloop.Rank(context.Background(), r, cfg, req, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			runtime.GC()
			b.ReportAllocs()
			var (
				ds   []time.Duration
				got  [][]crossloop.Ranked
				i    int
				cpu0 = cputime.Used()
			)
			for b.Loop() {
				t := time.Now()
				rs, err := crossloop.Rank(context.Background(), r, cfg, reqs[i%len(reqs)], nil)
				ds = append(ds, time.Since(t))
				if err != nil {
					b.Fatal(err)
				}
				got = append(got, rs)
				i++
			}
			cpu := cputime.Used() - cpu0
			b.StopTimer()
			first := ds[0]
			agree := 0
			for i, rs := range got {
				q := i % len(reqs)
				if want[q] == nil {
					want[q] = exact(reqs[q])
				}
				raw, _ := json.Marshal(rs)
				if string(raw) != string(want[q]) {
					b.Fatalf("query %d (%q): the answer differs from the exhaustive ranking's", i, reqs[q].Task)
				}
				agree++
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(ds)), "cpu-µs/op")
			b.ReportMetric(float64(agree), "agree")
			b.ReportMetric(float64(first.Microseconds())/1e3, "first-ms")
			b.ReportMetric(float64(crossloop.CacheBytes(cfg))/1e6, "cache-MB")
		})
	}
}

// BenchmarkInjectSharedChurn100k: BenchmarkInjectShared100k's queries
// while the registry keeps changing: between two queries the fold takes
// the next 40 events of the bench's workload (loops started, iterated and
// completed, patterns extracted, merged and refreshed; `lore bench
// --soak` at 2 000 events/s and 50 injections/s), each committed on its
// own as an idle runtime does. Only the queries are timed, once each
// query has been asked before the fold starts (the first reads of its
// terms are BenchmarkInjectShared100k's cold queries). Every tenth
// answer is compared with the answer of a full scan of the store's
// postings (no cache, no pruning): the benchmark fails on a difference.
func BenchmarkInjectSharedChurn100k(b *testing.B) {
	const perQuery = 40
	st, model, f := sharedRegistry(b, 100_000)
	defer st.Close()
	r := st.Model(crossloop.ModelName)
	cfg := model.Config()
	reqs := sharedQueries(1000)
	wl := benchkit.Workload{Seed: 7, Prefix: "churn"}.Stream()
	seq := f.Seq()
	fold := func() {
		for range perQuery {
			ev, _, err := wl.Next()
			if err != nil {
				b.Fatal(err)
			}
			seq++
			ev.Seq = seq
			if _, err := f.Fold(ev); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	exact := func(req crossloop.InjectRequest) []byte {
		defer crossloop.SetPrunePool(crossloop.SetPrunePool(false))
		rs, err := crossloop.Rank(context.Background(), r, crossloop.Uncached(cfg), req, nil)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(rs)
		return raw
	}
	for _, req := range reqs { // the cache's first reads of each term
		if _, err := crossloop.Rank(context.Background(), r, cfg, req, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var ds []time.Duration
	i, checked := 0, 0
	for b.Loop() {
		b.StopTimer()
		fold()
		b.StartTimer()
		req := reqs[i%len(reqs)]
		t := time.Now()
		rs, err := crossloop.Rank(context.Background(), r, cfg, req, nil)
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
		if i%10 == 0 {
			b.StopTimer()
			raw, _ := json.Marshal(rs)
			if string(raw) != string(exact(req)) {
				b.Fatalf("query %d (%q): the answer differs from the full scan's", i, req.Task)
			}
			checked++
			b.StartTimer()
		}
		i++
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(checked), "checked")
}

// sharedQueries are n injection requests as `lore bench` asks them.
func sharedQueries(n int) []crossloop.InjectRequest {
	rng := rand.New(rand.NewPCG(1, 0x696e))
	out := make([]crossloop.InjectRequest, n)
	for i := range out {
		out[i] = crossloop.InjectRequest{Task: benchkit.PatternTask(rng), Category: "debugging", TopK: 5}
	}
	return out
}

// sharedRegistry folds benchkit.SeedPatterns(1, n) into an in-memory
// store, compacted to its last level; the folder folds on from f.Seq()+1.
func sharedRegistry(tb testing.TB, n int) (*projector.Store, *crossloop.Model, *projector.Folder) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	model := crossloop.New(crossloop.Config{})
	f, err := projector.NewFolder(st, []projector.Model{model}, false)
	if err != nil {
		tb.Fatal(err)
	}
	evs, err := benchkit.SeedPatterns(1, n)
	if err != nil {
		tb.Fatal(err)
	}
	for i, ev := range evs {
		ev.Seq = uint64(i + 1)
		if _, err := f.Fold(ev); err != nil {
			tb.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := st.DB().Flush(); err != nil {
		tb.Fatal(err)
	}
	for st.DB().Metrics().Compact.NumInProgress > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := st.DB().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		tb.Fatal(err)
	}
	return st, model, f
}
