package crossloop_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestRankMatchesReference folds a realistic workload (a seeded registry,
// then loops extracting, merging and applying patterns, then patterns
// applied, archived and merged with new tags by imports, in small steps)
// and checks that Rank, which reads the chunked postings (or their cached
// decoding) and scoring records, returns exactly what a straightforward
// ranking over every stored pattern does: with the model's config, whose
// posting cache lives across the steps (so its entries must be revalidated
// as postings come, go and change), and with none.
func TestRankMatchesReference(t *testing.T) {
	n, seeded := 20000, 3000
	if testing.Short() {
		n, seeded = 4000, 600
	}
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := crossloop.New(crossloop.Config{})
	f, err := projector.NewFolder(st, []projector.Model{model}, false)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := benchkit.SeedPatterns(1, seeded)
	if err != nil {
		t.Fatal(err)
	}
	g, err := benchkit.Workload{Seed: 1}.Generate(n)
	if err != nil {
		t.Fatal(err)
	}
	r := st.Model(crossloop.ModelName)
	rng := rand.New(rand.NewPCG(7, 7))
	var seq uint64
	nonEmpty, total := 0, 0
	var hot []string // patterns queries returned: updates go to them too
	check := func(queries int) {
		t.Helper()
		ref := newReference(t, r)
		for q := range queries {
			req := crossloop.InjectRequest{Task: benchkit.PatternTask(rng)}
			switch q % 4 {
			case 1:
				req.Category = []string{"debugging", "testing", "tooling", "architecture", "performance"}[rng.IntN(5)]
			case 2:
				req.TopK = 1 + rng.IntN(20)
				req.MinRate = new(float64)
			case 3:
				req.Types = []string{crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeAnti, crossloop.TypeTemplate}[:1+rng.IntN(4)]
				req.Task = benchkit.KnowledgeTask(rng)
			}
			cfg := model.Config() // cached
			if q%5 == 4 {
				cfg = crossloop.DefaultConfig() // no cache
			}
			got, err := crossloop.Rank(context.Background(), r, cfg, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := ref.rank(crossloop.DefaultConfig(), req)
			total++
			if len(want) > 0 {
				nonEmpty++
			}
			if len(got) != len(want) {
				t.Fatalf("%+v: %d results, want %d", req, len(got), len(want))
			}
			for i := range got {
				hot = append(hot, got[i].Pattern.ID)
				g, w := got[i], want[i]
				if g.Pattern.ID != w.Pattern.ID || g.Relevance != w.Relevance || g.Effectiveness != w.Effectiveness ||
					g.Score != w.Score || g.Maturity != w.Maturity {
					t.Fatalf("%+v: result %d = %s %v %v %v %s, want %s %v %v %v %s", req, i,
						g.Pattern.ID, g.Relevance, g.Effectiveness, g.Score, g.Maturity,
						w.Pattern.ID, w.Relevance, w.Effectiveness, w.Score, w.Maturity)
				}
			}
		}
	}
	fold := func(evs []*events.Event) {
		t.Helper()
		for _, ev := range evs {
			seq++
			ev.Seq = seq
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
			if seq%500 == 0 {
				if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	fold(seed)
	check(100)
	for i := 0; i < len(g.Events); i += n / 4 {
		fold(g.Events[i:min(i+n/4, len(g.Events))])
		check(100)
	}
	// Registry updates after indexing, each step followed by queries: the
	// postings of applied patterns change meta, archived ones leave the
	// index, merges re-index their target with the imported tags.
	for step := range 12 {
		fold(registryUpdates(t, newReference(t, r), rng, step, hot))
		check(40)
	}
	if nonEmpty*2 < total {
		t.Fatalf("%d of %d queries found patterns", nonEmpty, total)
	}
	if ref := newReference(t, r); ref.maxDF <= 128 || ref.df["merged"] == 0 || ref.archived == 0 {
		t.Fatalf("max document frequency %d, df(merged) %d, %d archived: the test misses a case",
			ref.maxDF, ref.df["merged"], ref.archived)
	}
}

// registryUpdates are the events of one step of registry updates after
// indexing: 30 patterns applied (successes and failures: their postings'
// meta changes), 5 archived by a prune, 5 imports merging into existing
// patterns (same signature) with new tags (their target is re-indexed).
// Half the patterns are picked from hot (ids queries returned), so that
// updates hit what queries read.
func registryUpdates(t *testing.T, ref *reference, rng *rand.Rand, step int, hot []string) []*events.Event {
	t.Helper()
	at := time.Date(2026, 6, 1, 0, step, 0, 0, time.UTC)
	byID := map[string]*crossloop.Pattern{}
	for _, p := range ref.pats {
		byID[p.ID] = p
	}
	pick := func() *crossloop.Pattern {
		if len(hot) > 0 && rng.IntN(2) == 0 {
			if p := byID[hot[rng.IntN(len(hot))]]; p != nil {
				return p
			}
		}
		return ref.pats[rng.IntN(len(ref.pats))]
	}
	var evs []*events.Event
	add := func(typ string, d events.Payload) {
		ev, err := events.New(typ, events.DefaultProject, "test", at, d)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	for i := range 30 {
		loop := fmt.Sprintf("ralph-apply-%08x", step*100+i)
		add("loop.started/v1", &events.LoopStarted{LoopID: loop, Task: "apply a pattern"}) // only a started loop applies one
		add("pattern.applied/v1", &events.PatternApplied{LoopID: loop, PatternID: pick().ID, Success: rng.IntN(3) > 0})
	}
	var pruned []events.PrunedPattern
	for range 5 {
		pruned = append(pruned, events.PrunedPattern{PatternID: pick().ID, Reason: "low_success_rate"})
	}
	add("registry.pruned/v1", &events.RegistryPruned{Month: "2026-06", Patterns: pruned})
	imp := &events.RegistryImported{Source: "test"}
	for i := range 5 {
		p := *pick() // same signature: merges into it, adding a tag
		p.ID = fmt.Sprintf("pat-%s-merged-%06d", p.Type, step*10+i)
		p.Tags = []string{fmt.Sprintf("tag%d", rng.IntN(4)), "merged"}
		p.Trend, p.SourceLoops = nil, nil
		raw, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		imp.Patterns = append(imp.Patterns, raw)
	}
	add("registry.imported/v1", imp)
	return evs
}

// TestRankConcurrentWithFold: queries sharing the model's posting cache
// run while the registry changes and commits; then (folds done) Rank
// still equals the reference: no entry read across a commit was kept for
// a state it does not hold. Run with -race, it checks the cache's
// synchronisation too.
func TestRankConcurrentWithFold(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := crossloop.New(crossloop.Config{})
	f, err := projector.NewFolder(st, []projector.Model{model}, false)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := benchkit.SeedPatterns(2, 1500)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	fold := func(evs []*events.Event) {
		t.Helper()
		for _, ev := range evs {
			seq++
			ev.Seq = seq
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
			if seq%7 == 0 {
				if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	fold(seed)
	r := st.Model(crossloop.ModelName)
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var hits atomic.Int64
	for w := range 2 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				rs, err := crossloop.Rank(context.Background(), r, model.Config(), crossloop.InjectRequest{Task: benchkit.PatternTask(rng)}, nil)
				if err != nil {
					errs <- err
					return
				}
				hits.Add(int64(len(rs)))
			}
		}()
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for step := range 15 {
		fold(registryUpdates(t, newReference(t, r), rng, step, nil))
	}
	close(stop)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if hits.Load() == 0 {
		t.Fatal("no concurrent query found a pattern")
	}
	ref := newReference(t, r)
	for range 100 {
		req := crossloop.InjectRequest{Task: benchkit.PatternTask(rng), TopK: 10}
		got, err := crossloop.Rank(context.Background(), r, model.Config(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := ref.rank(crossloop.DefaultConfig(), req)
		if len(got) != len(want) {
			t.Fatalf("%+v: %d results, want %d", req, len(got), len(want))
		}
		for i := range got {
			if got[i].Pattern.ID != want[i].Pattern.ID || got[i].Score != want[i].Score {
				t.Fatalf("%+v: result %d = %s %v, want %s %v", req, i, got[i].Pattern.ID, got[i].Score, want[i].Pattern.ID, want[i].Score)
			}
		}
	}
}

// reference ranks like Rank, from every stored pattern.
type reference struct {
	pats  []*crossloop.Pattern // active
	terms []map[string]int
	lens  []int
	df    map[string]int
	total int
	maxDF int
	// archived counts the archived patterns
	archived int
}

func newReference(t *testing.T, r projector.Reader) *reference {
	t.Helper()
	all, err := crossloop.AllPatterns(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := &reference{df: map[string]int{}}
	for _, p := range all {
		if p.Archived {
			ref.archived++
			continue
		}
		tf, n := crossloop.Terms(p.SearchText())
		ref.pats = append(ref.pats, p)
		ref.terms = append(ref.terms, tf)
		ref.lens = append(ref.lens, n)
		ref.total += n
		for w := range tf {
			ref.df[w]++
			ref.maxDF = max(ref.maxDF, ref.df[w])
		}
	}
	return ref
}

func (ref *reference) rank(cfg crossloop.Config, req crossloop.InjectRequest) []crossloop.Ranked {
	minRate := cfg.MinSuccessRate
	if req.MinRate != nil {
		minRate = *req.MinRate
	}
	types := map[string]bool{}
	for _, t := range req.Types {
		types[t] = true
	}
	if len(types) == 0 {
		for _, t := range cfg.Include {
			types[t] = true
		}
	}
	limit := cfg.Limit(req.TopK)
	if limit == 0 || len(ref.pats) == 0 {
		return nil
	}
	qtf, _ := crossloop.Terms(req.Task + " " + req.Category)
	terms := make([]string, 0, len(qtf))
	for w := range qtf {
		terms = append(terms, w)
	}
	sort.Strings(terms)
	N := float64(len(ref.pats))
	avgdl := float64(ref.total) / N
	type cand struct {
		i  int
		bm float64
	}
	score := make([]float64, len(ref.pats))
	met := make([]bool, len(ref.pats))
	idfSum := 0.0
	for _, w := range terms {
		df := ref.df[w]
		if df == 0 || (len(ref.pats) > 1000 && df*2 > len(ref.pats)) {
			continue
		}
		idf := math.Log(1 + (N-float64(df)+0.5)/(float64(df)+0.5))
		idfSum += idf
		for i, tf := range ref.terms {
			c, ok := tf[w]
			if !ok {
				continue
			}
			tf, dl := float64(c), float64(ref.lens[i])
			score[i] += idf * tf * (1.2 + 1) / (tf + 1.2*(1-0.75+0.75*dl/avgdl))
			met[i] = true
		}
	}
	var cands []cand
	for i := range ref.pats {
		if met[i] {
			cands = append(cands, cand{i, score[i]})
		}
	}
	sort.Slice(cands, func(a, b int) bool {
		if cands[a].bm != cands[b].bm {
			return cands[a].bm > cands[b].bm
		}
		return ref.pats[cands[a].i].ID < ref.pats[cands[b].i].ID
	})
	if len(cands) > cfg.CandidatePool {
		cands = cands[:cfg.CandidatePool]
	}
	tb := crossloop.Bigrams(req.Task)
	var out []crossloop.Ranked
	for _, c := range cands {
		p := ref.pats[c.i]
		if !crossloop.Keep(p, minRate, types) {
			continue
		}
		lex := crossloop.LexicalRelevance(crossloop.BM25Norm(c.bm, idfSum), crossloop.Jaccard(tb, crossloop.Bigrams(p.SearchText())))
		rel := crossloop.Relevance(lex, req.Category != "" && strings.EqualFold(p.Category, req.Category))
		eff := crossloop.Effectiveness(p)
		state, _ := crossloop.Maturity(p)
		out = append(out, crossloop.Ranked{Pattern: p, Relevance: rel, Effectiveness: eff, Score: crossloop.Score(rel, eff), Maturity: state})
	}
	slices.SortFunc(out, func(a, b crossloop.Ranked) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Pattern.ID, b.Pattern.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
