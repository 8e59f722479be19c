package crossloop_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestRankMatchesReference folds a realistic workload (a seeded registry,
// then loops extracting, merging and applying patterns) and checks that
// Rank, which reads the chunked postings and scoring records, returns
// exactly what a straightforward ranking over every stored pattern does.
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
	f, err := projector.NewFolder(st, []projector.Model{crossloop.New(crossloop.Config{})}, false)
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
			got, err := crossloop.Rank(context.Background(), r, crossloop.DefaultConfig(), req, nil)
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
	if nonEmpty*2 < total {
		t.Fatalf("%d of %d queries found patterns", nonEmpty, total)
	}
	if ref := newReference(t, r); ref.maxDF <= 128 {
		t.Fatalf("max document frequency %d: no term spans several chunks", ref.maxDF)
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
