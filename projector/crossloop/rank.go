package crossloop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	json "github.com/goccy/go-json"
)

// Embedder scores documents against a query: relevance in [0,1] for each
// document, in order. The lexical default needs none (BM25 over the
// index); an OpenAI-compatible embeddings endpoint is one (embed_openai.go).
type Embedder interface {
	Relevance(ctx context.Context, query string, docs []string) ([]float64, error)
}

// prunePool: Rank picks the candidate pool with prunedPool (false only to
// compare it with the scan in benchmarks).
var prunePool = true

// boundScoring: rankLexical reads the scoring records of the candidates
// whose bound can still reach the top only (false only for tests that
// compare it with scoring every candidate).
var boundScoring = true

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// CategoryBonus is added to the relevance of a pattern of the task's
	// category (capped at 1).
	CategoryBonus = 0.2
)

// InjectRequest asks for the patterns to inject into a loop.
type InjectRequest struct {
	Task     string
	Category string
	TopK     int      // 0: config top-k
	MinRate  *float64 // nil: config min_success_rate
	Types    []string // empty: config include, else all
}

// Ranked is one injected pattern with its scores.
type Ranked struct {
	Pattern       *Pattern `json:"pattern"`
	Relevance     float64  `json:"relevance"`
	Effectiveness float64  `json:"effectiveness"`
	Score         float64  `json:"score"`
	Maturity      string   `json:"maturity"`
}

// BM25Norm normalises a BM25 score by the score of an average-length
// document holding every matched query term once (Σ idf), capped at 1.
func BM25Norm(score, idfSum float64) float64 {
	if idfSum <= 0 {
		return 0
	}
	return math.Min(1, score/idfSum)
}

// LexicalRelevance blends the normalised BM25 score (0.8) and the word
// bigram similarity of task and pattern text (0.2).
func LexicalRelevance(bm25norm, bigram float64) float64 { return 0.8*bm25norm + 0.2*bigram }

// Relevance adds the category bonus and caps at 1.
func Relevance(lexical float64, categoryMatch bool) float64 {
	if categoryMatch {
		lexical += CategoryBonus
	}
	return math.Min(1, lexical)
}

// Score = relevance × effectiveness.
func Score(relevance, effectiveness float64) float64 { return relevance * effectiveness }

// Keep reports whether a pattern may be injected: not archived, of a wanted
// type, and its rate (success, or failure for anti-patterns) ≥ min.
func Keep(p *Pattern, minRate float64, types map[string]bool) bool {
	if p.Archived || (len(types) > 0 && !types[p.Type]) {
		return false
	}
	return KeepRate(p) >= minRate
}

// Rank answers an injection from the index: candidates come from the
// postings of the task's terms (never a scan of the registry; terms found
// in more than half of a large registry are skipped), the best
// CandidatePool by BM25 are loaded, filtered, scored and the top k
// returned, best first (ties by id). emb, when not nil, replaces the lexical
// relevance of the candidates.
//
// A term's postings come from the posting cache of cfg (the Model's) when
// the cached fingerprint is the one of the term's record, read here
// through r, once brought forward by the fold's deltas where it is behind
// (postingCache), else from its chunks: either way the same postings, so
// the same answer.
func Rank(ctx context.Context, r Reader, cfg Config, req InjectRequest, emb Embedder) ([]Ranked, error) {
	cfg.setDefaults()
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
	if limit == 0 {
		return nil, nil
	}
	qtf, _ := Terms(req.Task + " " + req.Category)
	terms := make([]string, 0, len(qtf))
	for t := range qtf {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	pc := cfg.postings
	var (
		cands  []*candidate
		idfSum float64
		qterms queryTerms
	)
	// With the cache: the records read, the entries brought to them; a
	// commit between the two reads the records again (a few times, then
	// the chunks are read for this query alone).
	for attempt := 0; ; attempt++ {
		q, err := loadQuery(r, terms)
		if err != nil || q.n == 0 {
			return nil, err
		}
		idfSum, qterms = q.idfSum, q.terms()
		if pc == nil || attempt == 3 {
			tl, err := private(r, q.names, q.dfs)
			if err != nil {
				return nil, err
			}
			cands = q.pool(tl, cfg.CandidatePool, false)
			break
		}
		pool := func(tl termLists) { cands = q.pool(tl, cfg.CandidatePool, true) }
		if err := pc.warm(r, q.st); err != nil {
			return nil, err
		}
		ok, err := pc.use(r, q.names, q.dfs, pool)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
	}
	if emb != nil {
		return rankEmbedded(ctx, r, req, emb, cands, minRate, types, limit)
	}
	return rankLexical(r, req, cands, newTaskBigrams(req.Task, qterms), idfSum, minRate, types, limit)
}

// query is what a query reads before the postings: the index totals, and the
// terms it reads (document frequency within bounds: not found in more
// than half of a large registry), their records and idf.
type query struct {
	st     *Stats
	n      int // patterns indexed
	avgdl  float64
	names  []string
	dfs    []termDF
	idfs   []float64
	idfSum float64
	absent []string // query terms no pattern holds (df 0)
}

func loadQuery(r Reader, terms []string) (query, error) {
	var q query
	st, err := loadIndexTotals(r)
	if err != nil {
		return q, err
	}
	q.st, q.n = st, st.IndexDocs
	if q.n == 0 {
		return q, nil
	}
	N := float64(st.IndexDocs)
	q.avgdl = float64(st.IndexLen) / N
	if q.avgdl <= 0 {
		q.avgdl = 1
	}
	for _, t := range terms {
		d, err := loadDF(r, t)
		if err != nil {
			return q, err
		}
		df := d.df
		if df == 0 {
			q.absent = append(q.absent, t)
			continue
		}
		if st.IndexDocs > 1000 && df*2 > st.IndexDocs {
			continue
		}
		idf := math.Log(1 + (N-float64(df)+0.5)/(float64(df)+0.5))
		q.idfSum += idf
		q.names = append(q.names, t)
		q.dfs = append(q.dfs, d)
		q.idfs = append(q.idfs, idf)
	}
	return q, nil
}

// pool returns the best n patterns by BM25 met in the postings tl (the
// query's terms, in order), best first, with their scores and the meta of
// their first posting met: BM25 per pattern summed over the terms in
// their order (as the reference does: the same float operations in the
// same order), from bitmaps (prunedPool) when prune and the entries are
// the cache's (their bitmaps are kept up to date), else by a scan of
// every posting.
func (q *query) pool(tl termLists, n int, prune bool) []*candidate {
	sc := getScratch(len(tl.ids))
	defer sc.release()
	pruned := prunePool && prune && prunedPool(sc, tl.lists, q.idfs, q.avgdl, n)
	if !pruned {
		for i, idf := range q.idfs {
			bit := termBit(i)
			for _, p := range tl.lists[i].ps {
				if !sc.seen[p.doc] {
					sc.seen[p.doc] = true
					sc.meta[p.doc] = p.meta
					sc.touched = append(sc.touched, p.doc)
				}
				sc.s[p.doc] += bm25Term(idf, float64(p.tf), float64(p.dl), q.avgdl)
				sc.held[p.doc] |= bit
			}
		}
	}
	sc.vals = slices.Grow(sc.vals[:0], len(sc.touched))
	top := topCandidates(sc.touched, n, sc.s, tl.ids, sc.vals)
	slab := make([]candidate, len(top))
	cands := make([]*candidate, len(top))
	for i, d := range top {
		held := sc.held[d]
		if pruned { // the term lists' bitmaps (prunedPool built them)
			held = 0
			for j, l := range tl.lists {
				if l.index().has(d) {
					held |= termBit(j)
				}
			}
		}
		slab[i] = candidate{id: tl.ids[d], s: sc.s[d], meta: tl.metas[sc.meta[d]], held: held}
		cands[i] = &slab[i]
	}
	return cands
}

// termBit is the bit of query term i in a candidate's held terms (none
// past the 64th: those terms are not known to be held or not).
func termBit(i int) uint64 {
	if i >= 64 {
		return 0
	}
	return 1 << i
}

// rankLexical filters the candidates and bounds their scores from their
// postings' meta (the bigram similarity bounded by the sizes of the two
// bigram sets), then computes exact scores best bound first, reading a
// candidate's scoring record only while its bound can still reach the top
// limit; it loads only the patterns returned.
//
// INVARIANT: bound ≥ exact score for every candidate (same formula with
// Jaccard replaced by an upper bound of it: min(|A|,|B|)/max(|A|,|B|), or
// taskBigrams.bound from the query terms the candidate holds; float
// rounding is monotone), so a candidate left unread cannot enter the top
// limit, ties included: the result equals scoring every candidate.
func rankLexical(r Reader, req InjectRequest, cands []*candidate, tb taskBigrams, idfSum, minRate float64,
	types map[string]bool, limit int) ([]Ranked, error) {
	type scored struct {
		id             string
		bm, bound, eff float64
		rel, score     float64
		cat            bool
		maturity       string
	}
	taskBigrams := tb.set
	nt := len(taskBigrams)
	kept := make([]scored, 0, len(cands))
	for _, c := range cands {
		m, ok := decodeMeta(c.meta)
		if !ok {
			return nil, fmt.Errorf("posting meta of %s", c.id)
		}
		p := m.pattern()
		if !Keep(&p, minRate, types) {
			continue
		}
		jb := 1.0
		if lo, hi := min(nt, m.nBigrams), max(nt, m.nBigrams); hi > 0 {
			jb = float64(lo) / float64(hi)
			if boundScoring {
				jb = min(jb, tb.bound(c.held, m.nBigrams))
			}
		}
		sc := scored{id: c.id, bm: BM25Norm(c.s, idfSum), eff: Effectiveness(&p),
			cat: req.Category != "" && strings.EqualFold(string(m.category), req.Category)}
		sc.maturity, _ = Maturity(&p)
		sc.bound = Score(Relevance(LexicalRelevance(sc.bm, jb), sc.cat), sc.eff)
		kept = append(kept, sc)
	}
	slices.SortFunc(kept, func(a, b scored) int {
		if a.bound != b.bound {
			if a.bound > b.bound {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	better := func(a, b *scored) bool { return a.score > b.score || (a.score == b.score && a.id < b.id) }
	var top []scored // best first, at most limit
	for _, sc := range kept {
		if boundScoring && len(top) == limit && sc.bound < top[limit-1].score {
			break // kept is by bound: no later candidate reaches the top
		}
		v, ok, err := r.Get(scoreKey(sc.id))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		rec, ok := decodeScore(v)
		if !ok {
			return nil, fmt.Errorf("decode scoring record of %s", sc.id)
		}
		sc.rel = Relevance(LexicalRelevance(sc.bm, rec.jaccard(taskBigrams)), sc.cat)
		sc.score = Score(sc.rel, sc.eff)
		i := len(top)
		for i > 0 && better(&sc, &top[i-1]) {
			i--
		}
		if i < limit {
			top = slices.Insert(top, i, sc)
			if len(top) > limit {
				top = top[:limit]
			}
		}
	}
	out := make([]Ranked, 0, len(top))
	for _, s := range top {
		p, ok, err := LoadPattern(r, s.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("scored pattern %s has no record", s.id)
		}
		out = append(out, Ranked{Pattern: p, Relevance: s.rel, Effectiveness: s.eff, Score: s.score, Maturity: s.maturity})
	}
	return out, nil
}

// candidate is a pattern met in the postings: its BM25 score and the meta
// of its first posting met (shared with the posting cache: read only).
type candidate struct {
	id   string
	s    float64
	meta []byte
	// held has bit i (termBit) set when the pattern holds query term i
	// (it has a posting in the term's list).
	held uint64
}

// topCandidates returns the best n of docs by score s (descending), ties
// by id (ascending), best first: the first n of a sort of docs by
// (s desc, id asc), computed without sorting them all. A quickselect
// finds v, the n-th best score; every doc scoring above v is in, and of
// those scoring v the smallest ids fill the rest; only the n kept are
// sorted. vals is scratch space (appended to from its start).
//
// INVARIANT: scores are not NaN (BM25 sums of finite positive terms), so
// (s desc, id asc) is a strict total order on docs with distinct ids.
func topCandidates(docs []uint32, n int, s []float64, ids []string, vals []float64) []uint32 {
	better := func(a, b uint32) int {
		if s[a] != s[b] {
			if s[a] > s[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(ids[a], ids[b])
	}
	if n <= 0 {
		return nil
	}
	if len(docs) <= n {
		out := slices.Clone(docs)
		slices.SortFunc(out, better)
		return out
	}
	vals = vals[:0]
	for _, d := range docs {
		vals = append(vals, s[d])
	}
	v := nthLargest(vals, n-1)
	out := make([]uint32, 0, n)
	var ties []uint32
	for _, d := range docs {
		switch {
		case s[d] > v:
			out = append(out, d)
		case s[d] == v:
			ties = append(ties, d)
		}
	}
	// fewer than n score above v and at least n score v or above (v is
	// the n-th best): the ties fill the rest, smallest ids first.
	slices.SortFunc(ties, func(a, b uint32) int { return strings.Compare(ids[a], ids[b]) })
	out = append(out, ties[:n-len(out)]...)
	slices.SortFunc(out, better)
	return out
}

// nthLargest returns the value at index k of vals sorted in descending
// order (0 ≤ k < len(vals)); it reorders vals. Quickselect, median of
// three pivots: O(len(vals)) expected.
func nthLargest(vals []float64, k int) float64 {
	lo, hi := 0, len(vals)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// median of three at mid
		if vals[mid] > vals[lo] {
			vals[mid], vals[lo] = vals[lo], vals[mid]
		}
		if vals[hi] > vals[lo] {
			vals[hi], vals[lo] = vals[lo], vals[hi]
		}
		if vals[hi] > vals[mid] {
			vals[hi], vals[mid] = vals[mid], vals[hi]
		}
		p := vals[mid]
		// Hoare partition, descending: [lo, j] ≥ p ≥ [j+1, hi]
		i, j := lo, hi
		for i <= j {
			for vals[i] > p {
				i++
			}
			for vals[j] < p {
				j--
			}
			if i <= j {
				vals[i], vals[j] = vals[j], vals[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return vals[k] // j < k < i: vals[k] == p
		}
	}
	return vals[k]
}

// rankEmbedded scores the candidates with the embedder's relevance: the
// candidates are loaded whole (the embedder needs their text).
func rankEmbedded(ctx context.Context, r Reader, req InjectRequest, emb Embedder, cands []*candidate,
	minRate float64, types map[string]bool, limit int) ([]Ranked, error) {
	var out []Ranked
	var pats []*Pattern
	for _, c := range cands {
		p, ok, err := LoadPattern(r, c.id)
		if err != nil {
			return nil, err
		}
		if !ok || !Keep(p, minRate, types) {
			continue
		}
		pats = append(pats, p)
	}
	if len(pats) == 0 {
		return nil, nil
	}
	docs := make([]string, len(pats))
	for i, p := range pats {
		docs[i] = p.SearchText()
	}
	embRel, err := emb.Relevance(ctx, req.Task, docs)
	if err != nil {
		return nil, fmt.Errorf("embedder: %w", err)
	}
	if len(embRel) != len(docs) {
		return nil, fmt.Errorf("embedder: %d scores for %d documents", len(embRel), len(docs))
	}
	for i, p := range pats {
		lex := math.Max(0, math.Min(1, embRel[i]))
		rel := Relevance(lex, req.Category != "" && strings.EqualFold(p.Category, req.Category))
		state, _ := Maturity(p)
		eff := Effectiveness(p)
		out = append(out, Ranked{Pattern: p, Relevance: rel, Effectiveness: eff, Score: Score(rel, eff), Maturity: state})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Pattern.ID < out[j].Pattern.ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// loadIndexTotals reads the totals of the text index (the fields of
// Stats a query reads; the others, maps among them, are not decoded).
func loadIndexTotals(r Reader) (*Stats, error) {
	var t struct {
		IndexDocs int `json:"index_docs"`
		IndexLen  int `json:"index_len"`
	}
	v, ok, err := r.Get([]byte(keyStats))
	if err != nil || !ok {
		return &Stats{}, err
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return nil, fmt.Errorf("decode stats: %w", err)
	}
	return &Stats{IndexDocs: t.IndexDocs, IndexLen: t.IndexLen}, nil
}

// LoadStats reads the running totals (empty when none).
func LoadStats(r interface {
	Get([]byte) ([]byte, bool, error)
}) (*Stats, error) {
	st := NewStats()
	v, ok, err := r.Get([]byte(keyStats))
	if err != nil || !ok {
		return st, err
	}
	if err := json.Unmarshal(v, st); err != nil {
		return nil, fmt.Errorf("decode stats: %w", err)
	}
	if st.ByType == nil {
		st.ByType = map[string]int{}
	}
	if st.Counters == nil {
		st.Counters = map[string]int{}
	}
	if st.Categories == nil {
		st.Categories = map[string]*Cat{}
	}
	return st, nil
}
