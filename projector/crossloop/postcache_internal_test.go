package crossloop

import (
	"fmt"
	"testing"
)

// TestPostingCacheVerifies: the cache keeps what it read only when the
// postings read have the fingerprint of the term record the query read
// (not when the postings changed in between, as a commit between the two
// reads does); a kept entry serves a query only while the record's
// fingerprint is its own; a cache over its budget starts afresh and still
// answers right.
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
	// metaOf is the meta the postings of term give id, and whether the
	// cache holds the term.
	metaOf := func(c *postingCache, term, id string, d termDF) (string, bool) {
		t.Helper()
		tl, err := c.postings(s, []string{term}, []termDF{d}, true)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		meta := ""
		for _, p := range tl.lists[0].ps {
			n++
			if tl.ids[p.doc] == id {
				meta = string(tl.metas[p.meta])
			}
		}
		if n != d.df {
			t.Fatalf("%s: %d postings, record says %d", term, n, d.df)
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		return meta, c.gen.terms[term] != nil
	}
	want := func(p *Pattern) string { return string(postingMeta(p, len(sortedBigrams(p.SearchText())))) }
	df := func(term string) termDF {
		d, err := loadDF(s, term)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	c := newPostingCache(defaultCacheBudget)
	p := pats[3]
	before := df("alpha")
	apply(p) // between the record's read and the chunks'
	if m, kept := metaOf(c, "alpha", p.ID, before); m != want(p) || kept {
		t.Fatalf("read across a change: meta current %v, kept %v; want current, not kept", m == want(p), kept)
	}
	if m, kept := metaOf(c, "alpha", p.ID, df("alpha")); m != want(p) || !kept {
		t.Fatalf("read of a stable term: meta current %v, kept %v", m == want(p), kept)
	}
	apply(p)
	if m, _ := metaOf(c, "alpha", p.ID, df("alpha")); m != want(p) {
		t.Fatal("a kept entry served a term whose postings changed")
	}
	if err := UnindexPattern(s, st, pats[4].ID); err != nil {
		t.Fatal(err)
	}
	if m, _ := metaOf(c, "alpha", pats[4].ID, df("alpha")); m != "" {
		t.Fatal("a removed posting was served")
	}

	small := newPostingCache(4 << 10) // about one term
	first := small.gen
	for round := range 3 {
		for _, term := range []string{"alpha", "beta", "w1", "w2"} {
			q := pats[10+round]
			apply(q)
			tf, _ := Terms(q.SearchText())
			if m, _ := metaOf(small, term, q.ID, df(term)); tf[term] > 0 && m != want(q) {
				t.Fatalf("round %d, %s: stale meta from a small cache", round, term)
			}
		}
	}
	if small.gen == first || small.gen.bytes > small.budget {
		t.Fatalf("small cache: started afresh %v, holds %d bytes (budget %d)", small.gen != first, small.gen.bytes, small.budget)
	}
}

// TestPostingCacheWarm: warming caches every term a query may read with
// exactly the postings its chunks hold (in chunk order), leaves out the
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
	c := newPostingCache(defaultCacheBudget)
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
			q := e.ps[i]
			if g.ids[q.doc] != string(p.id) || string(g.metas[q.meta]) != string(p.meta) || q.tf != float64(p.tf) || q.dl != float64(p.dl) {
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
	c2 := newPostingCache(defaultCacheBudget)
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
}
