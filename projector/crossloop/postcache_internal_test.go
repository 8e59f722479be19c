package crossloop

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPostingCacheVerifies: a query is served by an entry only when its
// fingerprint is the one of the term record the query read; postings read
// across a change of the term (a commit between the record's read and the
// chunks') are cached with their own fingerprint and the query is told to
// read its records again; a cache over its budget starts afresh and still
// answers right. The changes here are made without the cache's memo: no
// delta is logged, the entries are read again.
func TestPostingCacheVerifies(t *testing.T) {
	s := memStore{}
	st := NewStats()
	var pats []*Pattern
	for i := range 150 {
		p := &Pattern{ID: fmt.Sprintf("pat-error-x-%03d", i), Type: TypeError, ErrorType: "E",
			ErrorPattern: fmt.Sprintf("alpha beta w%d", i%7), Successful: 1, SuccessRate: 1}
		if err := IndexPattern(s, st, p, 0.8); err != nil {
			t.Fatal(err)
		}
		pats = append(pats, p)
	}
	apply := func(p *Pattern) {
		t.Helper()
		p.Successful++
		var m memo
		if err := refreshPostings(s, &m, p, len(sortedBigrams(p.SearchText()))); err != nil {
			t.Fatal(err)
		}
		if err := m.flush(s); err != nil {
			t.Fatal(err)
		}
	}
	// metaOf is the meta the postings of term give id, whether the query
	// was served, and whether the cache holds the term at the store's
	// fingerprint.
	metaOf := func(c *postingCache, term, id string, d termDF) (meta string, served, kept bool) {
		t.Helper()
		ok, err := c.use(s, []string{term}, []termDF{d}, func(tl termLists) {
			n := 0
			for _, p := range tl.lists[0].ps {
				n++
				if tl.ids[p.doc] == id {
					meta = string(tl.metas[p.meta])
				}
			}
			if n != d.df {
				t.Fatalf("%s: %d postings, record says %d", term, n, d.df)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		_, fp, err := readTerm(s, term, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		e := c.gen.terms[term]
		return meta, ok, e != nil && e.fp == fp
	}
	want := func(p *Pattern) string { return string(postingMeta(p, len(sortedBigrams(p.SearchText())))) }
	df := func(term string) termDF {
		d, err := loadDF(s, term)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	c := newPostingCache(DefaultCacheBudget)
	p := pats[3]
	before := df("alpha")
	apply(p) // between the record's read and the chunks'
	if _, served, kept := metaOf(c, "alpha", p.ID, before); served || !kept {
		t.Fatalf("read across a change: served %v, kept %v; want not served, kept", served, kept)
	}
	if m, served, _ := metaOf(c, "alpha", p.ID, df("alpha")); m != want(p) || !served {
		t.Fatalf("read of a stable term: meta current %v, served %v", m == want(p), served)
	}
	apply(p)
	if m, served, _ := metaOf(c, "alpha", p.ID, df("alpha")); m != want(p) || !served {
		t.Fatal("a kept entry served a term whose postings changed")
	}
	if err := UnindexPattern(s, st, pats[4].ID); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := metaOf(c, "alpha", pats[4].ID, df("alpha")); m != "" {
		t.Fatal("a removed posting was served")
	}

	small := newPostingCache(4 << 10) // about one term
	first := small.gen
	for round := range 3 {
		for _, term := range []string{"alpha", "beta", "w1", "w2"} {
			q := pats[10+round]
			apply(q)
			tf, _ := Terms(q.SearchText())
			if m, served, _ := metaOf(small, term, q.ID, df(term)); !served || (tf[term] > 0 && m != want(q)) {
				t.Fatalf("round %d, %s: stale meta from a small cache (served %v)", round, term, served)
			}
		}
	}
	// over its budget, a generation takes one more entry, then is dropped
	if small.gen == first || len(small.gen.terms) > 2 {
		t.Fatalf("small cache: started afresh %v, holds %d terms (budget about one)", small.gen != first, len(small.gen.terms))
	}
}

// scanCounter is a Reader that counts the scans of postings.
type scanCounter struct {
	memStore
	scans int
}

func (c *scanCounter) Scan(p []byte, fn func(k, v []byte) error) error {
	c.scans++
	return c.memStore.Scan(p, fn)
}

// TestPostingCacheDeltas: with the cache in the fold's memo, entries
// follow the changes (metas refreshed, patterns added, re-indexed with
// other words, removed) by the deltas the fold logs, without reading the
// chunks again, and hold then exactly the postings the chunks hold (ids,
// tf, lengths, metas), with bitmaps and ranks that find each; a query
// whose record is behind the fold applies only the deltas up to it.
func TestPostingCacheDeltas(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &scanCounter{memStore: memStore{}}
	st := NewStats()
	c := newPostingCache(DefaultCacheBudget)
	pats := map[string]*Pattern{}
	next := 0
	text := func() string {
		return fmt.Sprintf("alpha w%d w%d v%d", rng.IntN(9), rng.IntN(9), rng.IntN(5))
	}
	fold := func(op func(m *memo) error) {
		t.Helper()
		m := memo{cache: c}
		if err := op(&m); err != nil {
			t.Fatal(err)
		}
		if err := m.flush(s); err != nil {
			t.Fatal(err)
		}
	}
	add := func() {
		p := &Pattern{ID: fmt.Sprintf("pat-error-d-%04d", next), Type: TypeError, ErrorType: "E",
			ErrorPattern: text(), Successful: 1, SuccessRate: 1}
		next++
		pats[p.ID] = p
		fold(func(m *memo) error { return indexPattern(s, st, p, 0.8, m, true) })
	}
	pick := func() *Pattern {
		ids := make([]string, 0, len(pats))
		for id := range pats {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return pats[ids[rng.IntN(len(ids))]]
	}
	for range 300 {
		add()
	}
	terms := func() []string {
		var out []string
		_ = s.memStore.Scan([]byte(prefDF), func(k, _ []byte) error {
			out = append(out, string(k[len(prefDF):]))
			return nil
		})
		return out
	}
	// check serves every term at the records given (dfs; the store's when
	// nil) and compares the entries with want (the chunks' when nil); it
	// returns the number of chunk scans the queries made.
	check := func(ts []string, dfs []termDF, want map[string][]rawPosting) int {
		t.Helper()
		if dfs == nil {
			for _, term := range ts {
				d, err := loadDF(s.memStore, term)
				if err != nil {
					t.Fatal(err)
				}
				dfs = append(dfs, d)
			}
		}
		before := s.scans
		ok, err := c.use(s, ts, dfs, func(tl termLists) {
			for i, term := range ts {
				w := want[term]
				if w == nil {
					raw, _, err := readTerm(s.memStore, term, false, 0)
					if err != nil {
						t.Fatal(err)
					}
					w = raw
				}
				e := tl.lists[i]
				if len(e.ps) != len(w) || e.fp != dfs[i].fp {
					t.Fatalf("%s: %d postings, want %d (fingerprint right %v)", term, len(e.ps), len(w), e.fp == dfs[i].fp)
				}
				for _, p := range w {
					d, ok := c.gen.docs[string(p.id)]
					if !ok || !e.x.has(d) {
						t.Fatalf("%s: %s missing", term, p.id)
					}
					q := e.x.posting(d)
					if tl.ids[q.doc] != string(p.id) || uint64(q.tf) != p.tf || uint64(q.dl) != p.dl || string(tl.metas[q.meta]) != string(p.meta) {
						t.Fatalf("%s: posting of %s differs", term, p.id)
					}
				}
			}
		})
		if err != nil || !ok {
			t.Fatalf("use: served %v, %v", ok, err)
		}
		return s.scans - before
	}
	all := terms()
	if n := check(all, nil, nil); n != len(all) {
		t.Fatalf("first queries: %d scans, want %d", n, len(all))
	}
	for round := range 200 {
		switch k := rng.IntN(10); {
		case k < 5: // a meta refreshed
			p := pick()
			p.Successful++
			fold(func(m *memo) error { return refreshPostings(s, m, p, len(sortedBigrams(p.SearchText()))) })
		case k < 7:
			add()
		case k < 9: // re-indexed with other words
			p := pick()
			p.ErrorPattern = text()
			fold(func(m *memo) error { return indexPattern(s, st, p, 0.8, m, false) })
		default:
			p := pick()
			delete(pats, p.ID)
			fold(func(m *memo) error { return unindexPattern(s, st, p.ID, m) })
		}
		if round%7 == 0 {
			ts := terms()
			if !slices.Equal(ts, all) {
				t.Fatalf("round %d: terms %v, were %v", round, ts, all)
			}
			if n := check(all, nil, nil); n != 0 {
				t.Fatalf("round %d: %d chunk scans; want the deltas only", round, n)
			}
		}
	}
	// A record behind the fold: the entry stops at it.
	atY := map[string][]rawPosting{}
	var dfsY []termDF
	p := pick()
	p.Successful++
	fold(func(m *memo) error { return refreshPostings(s, m, p, len(sortedBigrams(p.SearchText()))) })
	for _, term := range all {
		d, _ := loadDF(s.memStore, term)
		dfsY = append(dfsY, d)
		raw, _, _ := readTerm(s.memStore, term, false, 0)
		atY[term] = raw
	}
	add()
	p.Successful++
	fold(func(m *memo) error { return refreshPostings(s, m, p, len(sortedBigrams(p.SearchText()))) })
	if n := check(all, dfsY, atY); n != 0 {
		t.Fatalf("record behind: %d scans", n)
	}
	if n := check(all, nil, nil); n != 0 {
		t.Fatalf("record at the fold: %d scans", n)
	}
}

// TestPostingCacheWarm: warming caches every term a query may read with
// exactly the postings its chunks hold (indexed by doc), leaves out the
// terms queries skip, and is done once per generation.
func TestPostingCacheWarm(t *testing.T) {
	s := memStore{}
	st := NewStats()
	for i := range 600 {
		p := &Pattern{ID: fmt.Sprintf("pat-error-x-%03d", i), Type: TypeError, ErrorType: "E",
			ErrorPattern: fmt.Sprintf("alpha w%d v%d", i%7, i%13), Successful: i % 5, Failed: 1}
		if err := IndexPattern(s, st, p, 0.8); err != nil {
			t.Fatal(err)
		}
	}
	c := newPostingCache(DefaultCacheBudget)
	if err := c.warm(s, st); err != nil {
		t.Fatal(err)
	}
	g := c.gen
	n := 0
	err := s.Scan([]byte(prefDF), func(k, _ []byte) error {
		term := string(k[len(prefDF):])
		n++
		e := g.terms[term]
		if e == nil {
			t.Fatalf("term %s not warmed", term)
		}
		raw, fp, err := readTerm(s, term, true, 0)
		if err != nil {
			return err
		}
		if e.fp != fp || len(e.ps) != len(raw) {
			t.Fatalf("%s: %d postings, fingerprint %x; want %d, %x", term, len(e.ps), e.fp, len(raw), fp)
		}
		for i, p := range raw {
			d, ok := g.docs[string(p.id)]
			if !ok || !e.x.has(d) {
				t.Fatalf("%s: posting %d (%s) not indexed", term, i, p.id)
			}
			q := e.x.posting(d)
			if g.ids[q.doc] != string(p.id) || string(g.metas[q.meta]) != string(p.meta) || uint64(q.tf) != p.tf || uint64(q.dl) != p.dl {
				t.Fatalf("%s: posting %d differs", term, i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 || n != len(g.terms) {
		t.Fatalf("%d terms warmed, %d in the index", len(g.terms), n)
	}
	// In a large registry (> 1000 patterns), alpha, in more than half of
	// it, is not read by queries, so not warmed; a generation is warmed
	// once.
	c2 := newPostingCache(DefaultCacheBudget)
	large := *st
	large.IndexDocs = 1100
	if err := c2.warm(s, &large); err != nil {
		t.Fatal(err)
	}
	if c2.gen.terms["alpha"] != nil || c2.gen.terms["w1"] == nil {
		t.Fatal("large registry: alpha warmed or w1 not")
	}
	delete(c2.gen.terms, "w1")
	if err := c2.warm(s, &large); err != nil {
		t.Fatal(err)
	}
	if c2.gen.terms["w1"] != nil {
		t.Fatal("a generation warmed twice")
	}
	// Within a budget smaller than the index: terms are loaded while they
	// fit, each whole (its fingerprint the record's), and the generation
	// stays within the budget.
	c3 := newPostingCache(g.bytes - g.bytes/10)
	if err := c3.warm(s, st); err != nil {
		t.Fatal(err)
	}
	if g3 := c3.gen; len(g3.terms) == 0 || len(g3.terms) >= n || g3.bytes > c3.budget {
		t.Fatalf("budget %d: %d of %d terms warmed, %d bytes", c3.budget, len(g3.terms), n, g3.bytes)
	}
	for term, e := range c3.gen.terms {
		d, err := loadDF(s, term)
		if err != nil {
			t.Fatal(err)
		}
		if e.fp != d.fp || len(e.ps) != d.df {
			t.Fatalf("budget: %s warmed with %d postings, its record says %d", term, len(e.ps), d.df)
		}
	}
}

// TestDeltaLogBounded: the deltas logged for the cached terms stay within
// each term's bounds and, all terms together, within logBudget, their
// count of bytes exact; deltas of terms the cache does not hold are not
// logged.
func TestDeltaLogBounded(t *testing.T) {
	c := newPostingCache(DefaultCacheBudget)
	for i := range 100 {
		c.gen.terms[fmt.Sprintf("t%03d", i)] = &termPostings{x: buildIndex(nil)}
	}
	big := make([]byte, 4<<10)
	for k := range 70 {
		for i := range 101 {
			from, to := fingerprint{uint64(k)}, fingerprint{uint64(k + 1)}
			c.record(fmt.Sprintf("t%03d", i), from, to, []postingOp{{now: big}})
		}
	}
	if c.log["t100"] != nil {
		t.Fatal("a term not cached has a log")
	}
	sum := 0
	for term, l := range c.log {
		b := 0
		for _, d := range l.ds {
			b += d.bytes
		}
		if b != l.bytes || b > logMaxBytes || len(l.ds) > logMax {
			t.Fatalf("%s: %d deltas, %d bytes (counted %d)", term, len(l.ds), b, l.bytes)
		}
		sum += b
	}
	if sum != c.logBytes || sum > logBudget || sum == 0 {
		t.Fatalf("logs hold %d bytes (counted %d), budget %d", sum, c.logBytes, logBudget)
	}
}

// TestPostingCacheEvictsLeastRecentlyUsed: past its budget the cache drops
// the entries used least recently, not the terms of the query at hand, and
// stays within its budget; a dropped term is read again, with the same
// postings.
func TestPostingCacheEvictsLeastRecentlyUsed(t *testing.T) {
	s := memStore{}
	st := NewStats()
	words := []string{"alpha", "beta", "gamma", "delta", "omega"}
	for i := range 40 {
		p := &Pattern{ID: fmt.Sprintf("pat-error-x-%03d", i), Type: TypeError, ErrorType: "E",
			ErrorPattern: strings.Join(words, " ") + fmt.Sprintf(" w%d", i), Successful: 1, SuccessRate: 1}
		if err := IndexPattern(s, st, p, 0.8); err != nil {
			t.Fatal(err)
		}
	}
	postings := func(c *postingCache, term string) []string {
		t.Helper()
		d, err := loadDF(s, term)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		ok, err := c.use(s, []string{term}, []termDF{d}, func(tl termLists) {
			for _, p := range tl.lists[0].ps {
				ids = append(ids, tl.ids[p.doc])
			}
		})
		if err != nil || !ok {
			t.Fatalf("%s: served %v, %v", term, ok, err)
		}
		slices.Sort(ids)
		return ids
	}
	// A budget of the numbering and three and a half entries: a fourth is
	// one too many.
	probe := newPostingCache(1 << 30)
	want := map[string][]string{}
	for _, w := range words[:3] {
		want[w] = postings(probe, w)
	}
	entry := probe.gen.terms["alpha"].cost("alpha")
	budget := probe.gen.bytes + entry/2
	c := newPostingCache(budget)
	first := c.gen
	for _, w := range words[:3] {
		postings(c, w)
	}
	postings(c, "alpha") // beta is now the least recently used
	got := postings(c, "delta")
	if c.gen != first {
		t.Fatal("the cache started a new generation instead of dropping entries")
	}
	if c.gen.terms["beta"] != nil || c.gen.terms["alpha"] == nil || c.gen.terms["delta"] == nil {
		t.Fatalf("after a use of alpha and a read of delta, the cache holds %v; want beta dropped, alpha and delta kept", slices.Sorted(maps.Keys(c.gen.terms)))
	}
	if c.gen.bytes > budget {
		t.Fatalf("cache holds %d bytes, budget %d", c.gen.bytes, budget)
	}
	if len(got) != 40 {
		t.Fatalf("delta: %d postings, want 40", len(got))
	}
	if b := postings(c, "beta"); !slices.Equal(b, want["beta"]) {
		t.Fatalf("beta read again: %v, want %v", b, want["beta"])
	}
}
