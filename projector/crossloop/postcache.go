package crossloop

import (
	"fmt"
	"sync"
)

// postingCache keeps the decoded postings of the terms queries read, so
// that a query reads a term's record (one Get) instead of its chunks. A
// Model's queries share one (its Config carries it); it is safe for
// concurrent use.
//
// INVARIANT: an entry holds postings whose fingerprint is the entry's fp,
// computed from those very postings as they were read; a query uses an
// entry only when the term record it has just read through its own Reader
// carries the same fingerprint, that is (barring a fingerprint collision)
// when the store holds exactly those postings (termDF). So an answer
// equals the answer from the chunks, whatever store, rebuild, snapshot or
// concurrent commit the entry was read from, and nothing ever has to
// invalidate the cache.
type postingCache struct {
	budget int // bytes: past it, the generation is dropped and a new one begun

	mu  sync.RWMutex
	gen *cacheGen
}

// defaultCacheBudget bounds a cache's estimated memory. The postings of
// every term of 100k patterns (≈ 15 each) would take ≈ 50 MiB; queries
// only ever cache the terms they read.
const defaultCacheBudget = 64 << 20

func newPostingCache(budget int) *postingCache {
	return &postingCache{budget: budget, gen: newCacheGen()}
}

// cacheGen is one generation of a cache: its entries, and the numbering
// of pattern ids and metas the entries refer to.
//
// INVARIANT: ids and metas are only appended to (under the cache's lock),
// so a copy of their slice headers stays valid and immutable for its
// length; an entry, once installed, is never modified.
type cacheGen struct {
	terms map[string]*termPostings
	ids   []string // doc number → pattern id
	docs  map[string]uint32
	metas [][]byte // meta number → a posting meta
	metaN map[string]uint32
	bytes int // estimated size
	// warmed: a query has begun preloading the index (warm)
	warmed bool
}

func newCacheGen() *cacheGen {
	return &cacheGen{terms: map[string]*termPostings{}, docs: map[string]uint32{}, metaN: map[string]uint32{}}
}

// termPostings are a term's postings, in chunk order, and their
// fingerprint.
type termPostings struct {
	fp fingerprint
	ps []cachedPosting

	once sync.Once // builds idx
	idx  *docIndex
}

// cachedPosting is a posting with its id and meta numbered in the
// generation, and tf and document length as BM25 reads them.
type cachedPosting struct {
	doc, meta uint32
	tf, dl    float64
}

// costPosting and costEntry estimate the memory of cached data (bytes).
const (
	costPosting = 24
	costEntry   = 96
)

// rawPosting is a posting as read from a chunk (the slices point into a
// copy of the chunk).
type rawPosting struct {
	id, meta []byte
	tf, dl   uint64
}

// readTerm reads a term's postings from its chunks, in key order, with
// their fingerprint when withFP.
func readTerm(r Reader, term string, withFP bool, sizeHint int) ([]rawPosting, fingerprint, error) {
	var fp fingerprint
	out := make([]rawPosting, 0, sizeHint)
	err := r.Scan([]byte(prefPosting+term+"\x00"), func(k, v []byte) error {
		var err error
		out, err = decodeChunk(k, v, out, &fp, withFP)
		return err
	})
	if err != nil {
		return nil, fp, fmt.Errorf("read postings of %q: %w", term, err)
	}
	return out, fp, nil
}

// decodeChunk appends the postings of chunk v (at key k) to out, pointing
// into a copy of v, and adds them to fp when withFP.
func decodeChunk(k, v []byte, out []rawPosting, fp *fingerprint, withFP bool) ([]rawPosting, error) {
	v = append([]byte(nil), v...) // the postings point into it
	for len(v) > 0 {
		id, tf, dl, meta, rest, err := nextPosting(v)
		if err != nil {
			return out, fmt.Errorf("%s: %w", k, err)
		}
		if withFP {
			fp.add(v[:len(v)-len(rest)])
		}
		out = append(out, rawPosting{id: id, meta: meta, tf: tf, dl: dl})
		v = rest
	}
	return out, nil
}

// warmMax bounds the index a cache preloads whole (Stats.IndexLen, the
// number of term occurrences, bounds the number of postings): ≈ 25k
// patterns of 20 words; the preload costs ≈ 0.3 µs a posting (lore
// bench's 8.7k patterns, 214k occurrences: ≈ 50 ms, once).
const warmMax = 500_000

// warm preloads, once per generation and when the index is small
// (warmMax), the postings of every term a query may read (as Rank: not
// those found in more than half of a large registry), in one scan of the
// term records and one of the chunks, instead of one query-time read per
// term met: the first query pays for the index once, the next ones find
// their terms cached. Entries are kept as by postings: only those whose
// fingerprint is the one of the term's record read by the scan.
func (c *postingCache) warm(r Reader, st *Stats) error {
	if st.IndexLen > warmMax {
		return nil
	}
	c.mu.Lock()
	g := c.gen
	if g.warmed {
		c.mu.Unlock()
		return nil
	}
	g.warmed = true
	c.mu.Unlock()
	large := st.IndexDocs > 1000
	dfs := map[string]termDF{}
	err := r.Scan([]byte(prefDF), func(k, v []byte) error {
		term := string(k[len(prefDF):])
		d, err := decodeDF(term, v)
		if err != nil {
			return err
		}
		if !large || d.df*2 <= st.IndexDocs {
			dfs[term] = d
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	var (
		term string
		raw  []rawPosting
		fp   fingerprint
	)
	flush := func() {
		d, ok := dfs[term]
		if !ok || d.fp != fp || d.df != len(raw) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen != g || g.terms[term] != nil || g.bytes > c.budget {
			return
		}
		e := g.number(raw)
		e.fp = fp
		g.terms[term] = e
		g.bytes += costEntry + len(term) + costPosting*len(e.ps)
	}
	err = r.Scan([]byte(prefPosting), func(k, v []byte) error {
		if len(k) < len(prefPosting)+5 {
			return fmt.Errorf("posting key %q: too short", k)
		}
		t := k[len(prefPosting) : len(k)-5]
		if string(t) != term {
			if term != "" {
				flush()
			}
			term, raw, fp = string(t), raw[:0], fingerprint{}
		}
		if _, ok := dfs[term]; !ok {
			return nil // not read by queries
		}
		var err error
		raw, err = decodeChunk(k, v, raw, &fp, true)
		return err
	})
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	if term != "" {
		flush()
	}
	return nil
}

// termLists are the postings of a query's terms and the numbering they
// refer to.
type termLists struct {
	lists []*termPostings
	ids   []string
	metas [][]byte
}

// postings returns the postings of terms (their records in dfs): from
// the cache when its entry's fingerprint is the record's, else read from
// r. With share, what is read is cached when its fingerprint is the
// record's (else it was read across a commit: it serves this query only,
// as a read of the chunks would).
func (c *postingCache) postings(r Reader, terms []string, dfs []termDF, share bool) (termLists, error) {
	out := termLists{lists: make([]*termPostings, len(terms))}
	c.mu.RLock()
	g := c.gen
	for i, t := range terms {
		if e := g.terms[t]; e != nil && e.fp == dfs[i].fp {
			out.lists[i] = e
		}
	}
	c.mu.RUnlock()
	for i, t := range terms {
		if out.lists[i] != nil {
			continue
		}
		raw, fp, err := readTerm(r, t, share, dfs[i].df)
		if err != nil {
			return out, err
		}
		c.mu.Lock()
		e := g.number(raw)
		e.fp = fp
		if share && fp == dfs[i].fp && len(raw) == dfs[i].df && c.gen == g {
			g.terms[t] = e
			g.bytes += costEntry + len(t) + costPosting*len(e.ps)
		}
		if g.bytes > c.budget && c.gen == g {
			c.gen = newCacheGen() // g lives on for the queries using it
		}
		c.mu.Unlock()
		out.lists[i] = e
	}
	c.mu.RLock()
	out.ids, out.metas = g.ids, g.metas
	c.mu.RUnlock()
	return out, nil
}

// number converts raw postings, numbering new ids and metas. The cache's
// lock must be held.
func (g *cacheGen) number(raw []rawPosting) *termPostings {
	e := &termPostings{ps: make([]cachedPosting, len(raw))}
	for i, p := range raw {
		d, ok := g.docs[string(p.id)]
		if !ok {
			d = uint32(len(g.ids))
			id := string(p.id)
			g.ids = append(g.ids, id)
			g.docs[id] = d
			g.bytes += 2*len(id) + 64
		}
		m, ok := g.metaN[string(p.meta)]
		if !ok {
			m = uint32(len(g.metas))
			meta := string(p.meta)
			g.metas = append(g.metas, []byte(meta))
			g.metaN[meta] = m
			g.bytes += 2*len(meta) + 72
		}
		e.ps[i] = cachedPosting{doc: d, meta: m, tf: float64(p.tf), dl: float64(p.dl)}
	}
	return e
}

// scratch is a query's accumulator over doc numbers.
//
// INVARIANT: between queries every s is 0, every seen false, touched
// empty (a query resets what it touched).
type scratch struct {
	s       []float64 // BM25 so far
	seen    []bool
	meta    []uint32 // meta number of the doc's first posting met
	touched []uint32 // docs met, in first-met order
	vals    []float64
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func getScratch(n int) *scratch {
	sc := scratches.Get().(*scratch)
	if len(sc.s) < n {
		n = max(n, 2*len(sc.s))
		sc.s = make([]float64, n)
		sc.seen = make([]bool, n)
		sc.meta = make([]uint32, n)
	}
	return sc
}

func (sc *scratch) release() {
	for _, d := range sc.touched {
		sc.s[d] = 0
		sc.seen[d] = false
	}
	sc.touched = sc.touched[:0]
	sc.vals = sc.vals[:0]
	scratches.Put(sc)
}
