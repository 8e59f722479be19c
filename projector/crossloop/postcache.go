package crossloop

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// postingCache keeps the decoded postings of the terms queries read, each
// with its doc index (pool.go), so that a query reads a term's record (one
// Get) instead of its chunks. A Model's queries share one (its Config
// carries it); it is safe for concurrent use. The fold logs, for the
// terms the cache holds, what each event removed from and added to their
// postings (a delta from one fingerprint to the next); a query finding an
// entry behind its term's record brings it forward with those deltas, in
// place, instead of reading and indexing the term's chunks again.
//
// INVARIANT (self-certifying entries): an entry's fp is the fingerprint
// of the postings it holds. An entry is made from one read of a term's
// chunks (one iterator: one state of the store), with the fingerprint
// computed from what was read, or from an entry of fingerprint from by a
// delta that took the fold's postings from from to to: equal fingerprints
// are equal multisets (barring a collision), so the result holds exactly
// the postings of to. A query uses an entry only when its fp is the one
// of the term record it has just read, so an answer equals the answer
// from the chunks, whatever store, rebuild, refold or concurrent commit
// the entry or the delta came from, and nothing ever has to invalidate
// the cache.
type postingCache struct {
	// budget bounds the estimated bytes of the generation (cacheGen.bytes):
	// past it, the terms used least recently are dropped (trim), and when
	// that is not enough (the numbering of pattern ids, which only grows
	// within a generation) the generation is dropped and a new one begun.
	budget int
	// clock numbers the uses of entries (termPostings.used).
	clock atomic.Uint64

	// mu guards gen and its entries: queries use entries under RLock;
	// installs and deltas change them under Lock.
	mu  sync.RWMutex
	gen *cacheGen

	// logMu guards log and logBytes, their size (taken after mu when
	// both are held).
	logMu    sync.Mutex
	log      map[string]*termLog
	logBytes int
}

// DefaultCacheBudget bounds a cache's estimated memory (SetCacheBudget).
// The postings of every term queries may read of lore bench's 100k
// patterns (≈ 12 each) take ≈ 33 MB, ids and metas included: the first
// query loads them all (warm). The 175k patterns a million events of its
// workload leave need more than 48 MiB: below what a query's terms and
// the numbering of their patterns take, every query reads its terms from
// the store again (22 ms instead of 2.6 ms over NATS).
const DefaultCacheBudget = 96 << 20

func newPostingCache(budget int) *postingCache {
	return &postingCache{budget: budget, gen: newCacheGen(), log: map[string]*termLog{}}
}

// SetCacheBudget sets the byte budget of the model's posting cache (≤ 0:
// DefaultCacheBudget); the cache is trimmed to it at its next fill.
func (m *Model) SetCacheBudget(bytes int) {
	if bytes <= 0 {
		bytes = DefaultCacheBudget
	}
	c := m.cfg.postings
	c.mu.Lock()
	c.budget = bytes
	c.mu.Unlock()
}

// cacheGen is one generation of a cache: its entries, and the numbering
// of pattern ids and metas the entries refer to.
//
// INVARIANT: ids is only appended to; metas[m] is referenced by refs[m]
// postings of entries (and of queries' private reads until they end), is
// nil and on free when none; a meta's bytes are never modified (a query
// may keep a slice of them after its lock).
type cacheGen struct {
	terms map[string]*termPostings
	ids   []string // doc number → pattern id
	docs  map[string]uint32
	metas [][]byte // meta number → a posting meta
	refs  []int32
	free  []uint32
	metaN map[string]uint32
	bytes int // estimated size
	// warmed: a query has begun preloading the index (warm)
	warmed bool
}

func newCacheGen() *cacheGen {
	return &cacheGen{terms: map[string]*termPostings{}, docs: map[string]uint32{}, metaN: map[string]uint32{}}
}

// termPostings are a term's postings and their fingerprint. A cached
// entry's postings are its index's, by doc (ps is x.byDoc); a private
// read's (Rank without a cache) are in chunk order, without an index
// until prunedPool asks for one.
type termPostings struct {
	fp fingerprint
	ps []cachedPosting
	x  *docIndex
	// used is the cache's clock at the last query that used the entry.
	used atomic.Uint64
}

// cachedPosting is a posting with its id and meta numbered in the
// generation, its tf and document length (16 bytes: a registry's postings
// are cached whole, warm). BM25 reads float64(tf) and float64(dl): the
// values the store's uvarints give, exactly.
//
// INVARIANT: tf and dl fit 32 bits (a posting that does not is refused
// as corrupt: decodeChunk; a pattern's text is a part of one event).
type cachedPosting struct {
	doc, meta uint32
	tf, dl    uint32
}

// fits32 reports whether a posting's tf and document length fit a
// cachedPosting.
func fits32(tf, dl uint64) bool { return tf <= math.MaxUint32 && dl <= math.MaxUint32 }

// costPosting, costEntry and costWord estimate the memory of cached data
// (bytes).
const (
	costPosting = 16
	costEntry   = 96
	costWord    = 20 // a word of the bitmaps, its rank
)

// cost counts the capacity of the slices, not their length: deltas grow
// them in place (apply), by doubling.
func (e *termPostings) cost(term string) int {
	return costEntry + len(term) + costPosting*cap(e.ps) + costWord*cap(e.x.bits)
}

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
		if !fits32(tf, dl) {
			return out, fmt.Errorf("%s: posting of %s: tf %d or length %d beyond 32 bits: %w", k, id, tf, dl, errPostings)
		}
		if withFP {
			fp.add(v[:len(v)-len(rest)])
		}
		out = append(out, rawPosting{id: id, meta: meta, tf: tf, dl: dl})
		v = rest
	}
	return out, nil
}

// warm preloads, once per generation, the postings of every term a query
// may read (as Rank: not those found in more than half of a large
// registry), in one scan of the term records and one of the chunks,
// instead of one query-time read per term met: the first query pays for
// the index once (≈ 0.3 µs a posting: ≈ 0.4 s for the 1.2 million
// postings of lore bench's 100k patterns), the next ones find their
// terms cached, so no later query reads a term cold. Terms are loaded in
// key order while the generation is within the cache's budget; the scan
// stops when it is full (a registry larger than the budget is loaded in
// part, and the terms queries read then replace those used least
// recently). Only the terms whose postings have the fingerprint of the
// record the scan read are kept (the others changed in between).
func (c *postingCache) warm(r Reader, st *Stats) error {
	c.mu.RLock()
	warmed := c.gen.warmed
	c.mu.RUnlock()
	if warmed { // the common case, without the write lock
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
	// flush installs the term read; errWarmFull when the generation is
	// full or no longer the cache's.
	flush := func() error {
		d, ok := dfs[term]
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen != g || g.bytes > c.budget {
			return errWarmFull
		}
		if !ok || d.fp != fp || d.df != len(raw) || g.terms[term] != nil {
			return nil
		}
		c.install(term, raw, fp)
		if g.bytes > c.budget { // it does not fit: out again, and done
			g.drop(term, g.terms[term])
			c.trim(nil, 0) // the ids it numbered may be more than the budget
			return errWarmFull
		}
		return nil
	}
	err = r.Scan([]byte(prefPosting), func(k, v []byte) error {
		if len(k) < len(prefPosting)+5 {
			return fmt.Errorf("posting key %q: too short", k)
		}
		t := k[len(prefPosting) : len(k)-5]
		if string(t) != term {
			if term != "" {
				if err := flush(); err != nil {
					return err
				}
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
	if err == nil && term != "" {
		err = flush()
	}
	if err != nil && !errors.Is(err, errWarmFull) {
		return fmt.Errorf("warm: %w", err)
	}
	return nil
}

// Warm preloads the model's posting cache from r (the live read model) as
// the first query would (warm), so that query does not pay for it: a
// serving node calls it in the background once it starts. It does
// nothing when the cache is warm already or the registry is empty.
func (m *Model) Warm(r Reader) error {
	st, err := loadIndexTotals(r)
	if err != nil || st.IndexDocs == 0 {
		return err
	}
	return m.cfg.postings.warm(r, st)
}

// errWarmFull ends a warm's scan: the generation is full.
var errWarmFull = errors.New("posting cache full")

// termLists are the postings of a query's terms and the numbering they
// refer to.
type termLists struct {
	lists []*termPostings
	ids   []string
	metas [][]byte
}

// use calls fn, under the cache's read lock, with the postings of terms
// whose records are dfs: the cached entries, brought forward by the
// fold's deltas or read from the store where they are behind. It returns
// false, without calling fn, when a term's postings as read are not the
// ones of its record (a commit came in between: the caller reads the
// records again). fn must not keep lists, ids or metas past its return
// (the slices of metas' bytes it may keep).
func (c *postingCache) use(r Reader, terms []string, dfs []termDF, fn func(termLists)) (bool, error) {
	lists := make([]*termPostings, len(terms))
	var behind []int
	for round := 0; ; round++ {
		behind = behind[:0]
		c.mu.RLock()
		g := c.gen
		for i, t := range terms {
			if e := g.terms[t]; e != nil && e.fp == dfs[i].fp {
				lists[i] = e
			} else {
				behind = append(behind, i)
			}
		}
		if len(behind) == 0 {
			now := c.clock.Add(1)
			for _, e := range lists {
				e.used.Store(now)
			}
			fn(termLists{lists: lists, ids: g.ids, metas: g.metas})
			c.mu.RUnlock()
			return true, nil
		}
		c.mu.RUnlock()
		if round > 0 {
			return false, nil
		}
		var read []int
		c.mu.Lock()
		for _, i := range behind {
			if !c.catchUp(terms[i], dfs[i].fp) {
				read = append(read, i)
			}
		}
		c.trim(terms, 0)
		c.mu.Unlock()
		for _, i := range read {
			raw, fp, err := readTerm(r, terms[i], true, dfs[i].df)
			if err != nil {
				return false, err
			}
			c.mu.Lock()
			c.trim(terms, rawCost(terms[i], raw))
			c.install(terms[i], raw, fp)
			c.mu.Unlock()
		}
	}
}

// private reads the postings of terms from r for one query (Rank without
// a cache): in chunk order, numbered in a generation of their own.
func private(r Reader, terms []string, dfs []termDF) (termLists, error) {
	g := newCacheGen()
	out := termLists{lists: make([]*termPostings, len(terms))}
	for i, t := range terms {
		raw, _, err := readTerm(r, t, false, dfs[i].df)
		if err != nil {
			return out, err
		}
		out.lists[i] = g.number(raw)
	}
	out.ids, out.metas = g.ids, g.metas
	return out, nil
}

// install caches the postings read of term (fingerprint fp), with their
// index, in place of its entry. The caller makes room first (trim). The
// cache's lock must be held.
func (c *postingCache) install(term string, raw []rawPosting, fp fingerprint) {
	g := c.gen
	if old := g.terms[term]; old != nil {
		g.drop(term, old)
	}
	e := g.number(raw)
	e.fp = fp
	e.x = buildIndex(e.ps)
	e.ps = e.x.byDoc
	g.terms[term] = e
	g.bytes += e.cost(term)
}

// trim makes room bytes in the generation, within the budget: past it,
// the entries used least recently, other than those of keep (the terms of
// the query at hand), are dropped until room fits with a margin of a
// 32nd of the budget (so that the next entries fit without another
// sort); when dropping them all is not enough (the numbering of pattern
// ids, which only grows within a generation, or keep's own entries), a
// new generation is begun (the queries of the old one hold the cache's
// lock or nothing). The cache's lock must be held.
func (c *postingCache) trim(keep []string, room int) {
	g := c.gen
	if g.bytes+room <= c.budget {
		return
	}
	type aged struct {
		term string
		used uint64
	}
	xs := make([]aged, 0, len(g.terms))
	for t, e := range g.terms {
		if !slices.Contains(keep, t) {
			xs = append(xs, aged{t, e.used.Load()})
		}
	}
	slices.SortFunc(xs, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	for _, x := range xs {
		if g.bytes+room <= c.budget-c.budget/32 {
			break
		}
		g.drop(x.term, g.terms[x.term])
	}
	if g.bytes+room <= c.budget {
		return
	}
	ng := newCacheGen()
	ng.warmed = g.warmed
	c.gen = ng
	c.logMu.Lock()
	c.log, c.logBytes = map[string]*termLog{}, 0
	c.logMu.Unlock()
}

// rawCost estimates the cost of the entry raw postings of term make
// (termPostings.cost, without the numbering of new ids and metas).
func rawCost(term string, raw []rawPosting) int {
	return costEntry + len(term) + costPosting*len(raw) + costWord*(len(raw)/64+1)
}

// drop removes term's entry e. The cache's lock must be held.
func (g *cacheGen) drop(term string, e *termPostings) {
	for _, p := range e.ps {
		g.unref(p.meta)
	}
	g.bytes -= e.cost(term)
	delete(g.terms, term)
}

// number converts raw postings, numbering new ids and metas.
func (g *cacheGen) number(raw []rawPosting) *termPostings {
	e := &termPostings{ps: make([]cachedPosting, len(raw))}
	for i, p := range raw {
		e.ps[i] = cachedPosting{doc: g.docNum(p.id), meta: g.metaNum(p.meta), tf: uint32(p.tf), dl: uint32(p.dl)}
	}
	return e
}

// docNum returns the number of pattern id, numbering it when new.
func (g *cacheGen) docNum(id []byte) uint32 {
	d, ok := g.docs[string(id)]
	if !ok {
		d = uint32(len(g.ids))
		s := string(id)
		g.ids = append(g.ids, s)
		g.docs[s] = d
		g.bytes += 2*len(s) + 64
	}
	return d
}

// metaNum returns the number of meta and counts one more reference to it,
// numbering it when new.
func (g *cacheGen) metaNum(meta []byte) uint32 {
	if m, ok := g.metaN[string(meta)]; ok {
		g.refs[m]++
		return m
	}
	var m uint32
	b := []byte(string(meta))
	if n := len(g.free); n > 0 {
		m, g.free = g.free[n-1], g.free[:n-1]
		g.metas[m], g.refs[m] = b, 1
	} else {
		m = uint32(len(g.metas))
		g.metas, g.refs = append(g.metas, b), append(g.refs, 1)
	}
	g.metaN[string(b)] = m
	g.bytes += 2*len(b) + 72
	return m
}

// unref counts one reference less to meta m, freeing it at none.
func (g *cacheGen) unref(m uint32) {
	if g.refs[m]--; g.refs[m] > 0 {
		return
	}
	g.bytes -= 2*len(g.metas[m]) + 72
	delete(g.metaN, string(g.metas[m]))
	g.metas[m] = nil
	g.free = append(g.free, m)
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
	held    []uint64 // the query terms each doc met holds (termBit), by the scan
	vals    []float64
	// prunedPool's buffers, kept between queries (no garbage per query)
	words   []uint64 // the counters' planes and the multi bitmap
	planes  [][]uint64
	xs      []*docIndex
	ub, ub1 []float64
	lb1     []float64
	lbM     []float64
	his     []float64
	wt      weights
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func getScratch(n int) *scratch {
	sc := scratches.Get().(*scratch)
	if len(sc.s) < n {
		n = max(n, 2*len(sc.s))
		sc.s = make([]float64, n)
		sc.seen = make([]bool, n)
		sc.meta = make([]uint32, n)
		sc.held = make([]uint64, n)
	}
	return sc
}

func (sc *scratch) release() {
	for _, d := range sc.touched {
		sc.s[d] = 0
		sc.seen[d] = false
		sc.held[d] = 0
	}
	sc.touched = sc.touched[:0]
	sc.vals = sc.vals[:0]
	scratches.Put(sc)
}
