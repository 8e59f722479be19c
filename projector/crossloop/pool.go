package crossloop

import (
	"math"
	"math/bits"
	"slices"
)

// The candidate pool without scoring every posting: with a shared
// vocabulary a query's terms have tens of thousands of postings each, and
// the pool (the best CandidatePool by BM25) holds the few hundred patterns
// that match the most of them. The pool is found from per-term bitmaps of
// the patterns holding the term (word-parallel counting of the terms each
// pattern holds), exact scores for the patterns that may reach the pool,
// and bounds that rule the rest out.

// bm25Term is the BM25 weight of one query term in one pattern. Every
// path sums these, in the query's term order, from 0: the same float
// operations give the same score to the bit.
func bm25Term(idf, tf, dl, avgdl float64) float64 {
	return idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avgdl))
}

// docIndex is a term's postings by doc number: a bitmap of its docs, the
// number of docs before each word of it, its postings sorted by doc, a
// bitmap of the docs where the term occurs more than once, and bounds of
// tf and document length among them: maxTF ≥ every tf, minDL ≤ every
// length ≤ maxDL (exact when built; a delta's removal leaves them, still
// bounds).
//
// INVARIANT: byDoc[rank[w] + popcount(bits[w] below d)] is the posting of
// doc d (d = 64w + bit) when the bit is set; a term has one posting per
// doc; multi holds exactly the docs of bits whose tf is above 1 (lower
// bounds rest on it: insert and remove keep it).
type docIndex struct {
	bits  []uint64
	multi []uint64 // docs with tf > 1
	rank  []uint32
	byDoc []cachedPosting
	maxTF float64
	minDL float64
	maxDL float64
	// dup: a doc has two postings (never, by the index's invariant): the
	// index is not used
	dup bool
}

// index returns the term's doc index: a cached entry's, or one built for
// a private read on first use (a private read serves one query).
func (e *termPostings) index() *docIndex {
	if e.x == nil {
		e.x = buildIndex(e.ps)
	}
	return e.x
}

// buildIndex indexes postings ps by doc.
func buildIndex(ps []cachedPosting) *docIndex {
	x := &docIndex{byDoc: slices.Clone(ps), minDL: math.Inf(1)}
	slices.SortFunc(x.byDoc, func(a, b cachedPosting) int { return int(a.doc) - int(b.doc) })
	n := 0
	if len(x.byDoc) > 0 {
		n = int(x.byDoc[len(x.byDoc)-1].doc)/64 + 1
	}
	x.bits, x.multi, x.rank = make([]uint64, n), make([]uint64, n), make([]uint32, n+1)
	for _, p := range x.byDoc {
		if p.tf > 1 {
			x.multi[p.doc/64] |= 1 << (p.doc % 64)
		}
		x.dup = x.dup || x.bits[p.doc/64]&(1<<(p.doc%64)) != 0
		x.bits[p.doc/64] |= 1 << (p.doc % 64)
		x.maxTF, x.minDL, x.maxDL = max(x.maxTF, float64(p.tf)), min(x.minDL, float64(p.dl)), max(x.maxDL, float64(p.dl))
	}
	for w := range x.bits {
		x.rank[w+1] = x.rank[w] + uint32(bits.OnesCount64(x.bits[w]))
	}
	return x
}

// has reports whether doc d holds the term.
func (x *docIndex) has(d uint32) bool {
	w := int(d / 64)
	return w < len(x.bits) && x.bits[w]&(1<<(d%64)) != 0
}

// posting is doc d's posting (d must hold the term).
func (x *docIndex) posting(d uint32) *cachedPosting {
	w := d / 64
	below := x.bits[w] & (1<<(d%64) - 1)
	return &x.byDoc[x.rank[w]+uint32(bits.OnesCount64(below))]
}

// boundSlack widens bounds against rounding: a bound computed in floats
// may only be raised, never lowered below the exact value.
const boundSlack = 1 + 1e-9

// prunedPool returns what the full scan of Rank would leave in sc for
// the pool's choice, restricted to docs that can be in the pool: sc.s,
// sc.meta and sc.touched hold the exact score, the meta of the first
// posting (in term order) and the doc for every doc whose score may reach
// the pool's n-th best; every doc left out scores strictly below it. ok
// is false when no bound prunes enough (the caller then scans).
//
// INVARIANT: the pool chosen from the docs kept (topCandidates) equals
// the one chosen from every doc: a doc is left out only when an upper
// bound of its score is below θ, the n-th best exact score of a set of
// docs, so below the n-th best score of all docs; ties cannot straddle.
func prunedPool(sc *scratch, lists []*termPostings, idfs []float64, avgdl float64, n int) (ok bool) {
	m := len(lists)
	if m == 0 || m > 62 || n <= 0 {
		return false
	}
	xs := sc.xs[:0]
	ub := slices.Grow(sc.ub[:0], m)[:m]   // an upper bound of each term's weight
	ub1 := slices.Grow(sc.ub1[:0], m)[:m] // the same where the term occurs once (tf 1)
	// lower bounds of each term's weight, where it occurs once (lb1) and
	// more than once (lbM)
	lb1 := slices.Grow(sc.lb1[:0], m)[:m]
	lbM := slices.Grow(sc.lbM[:0], m)[:m]
	defer func() {
		clear(xs) // the entries are the cache's: not kept past the query
		sc.xs, sc.ub, sc.ub1, sc.lb1, sc.lbM = xs[:0], ub, ub1, lb1, lbM
		sc.wt.idfs = nil
	}()
	clear(ub)
	clear(ub1)
	clear(lb1)
	clear(lbM)
	words, total := 0, 0
	for j, l := range lists {
		xs = append(xs, l.index())
		if xs[j].dup {
			return false
		}
		words = max(words, len(xs[j].bits))
		total += len(xs[j].byDoc)
		if len(xs[j].byDoc) > 0 {
			ub[j] = bm25Term(idfs[j], xs[j].maxTF, xs[j].minDL, avgdl) * boundSlack
			ub1[j] = bm25Term(idfs[j], 1, xs[j].minDL, avgdl) * boundSlack
			// the weight grows with tf and falls with the length
			lb1[j] = bm25Term(idfs[j], 1, xs[j].maxDL, avgdl) / boundSlack
			lbM[j] = bm25Term(idfs[j], 2, xs[j].maxDL, avgdl) / boundSlack
		}
	}
	if total <= 4*n {
		return false // small: the scan is as cheap
	}
	// Bit-sliced counters: plane k holds bit k of the number of query
	// terms each doc holds.
	k := bits.Len(uint(m))
	sc.words = slices.Grow(sc.words[:0], (k+2)*words)[:(k+2)*words]
	clear(sc.words)
	planes := sc.planes[:0]
	for i := range k {
		planes = append(planes, sc.words[i*words:(i+1)*words])
	}
	sc.planes = planes
	wt := sc.weights(idfs, avgdl)
	for _, x := range xs {
		for w, b := range x.bits {
			carry := b
			for i := 0; i < k && carry != 0; i++ {
				t := planes[i][w] & carry
				planes[i][w] ^= carry
				carry = t
			}
		}
	}
	// atLeast(c, w): the docs of word w holding c terms or more.
	atLeast := func(c, w int) uint64 {
		gt, eq := uint64(0), ^uint64(0)
		for i := k - 1; i >= 0; i-- {
			p := planes[i][w]
			if c>>i&1 == 1 {
				eq &= p
			} else {
				gt |= eq & p
				eq &^= p
			}
		}
		return gt | eq
	}
	// c: the largest count that n docs reach; top[w]: the docs of word w
	// holding c terms or more.
	top := sc.words[(k+1)*words : (k+2)*words]
	c, cnt := m, 0
	for ; c >= 1; c-- {
		cnt = 0
		for w := range words {
			top[w] = atLeast(c, w)
			cnt += bits.OnesCount64(top[w])
		}
		if cnt >= n {
			break
		}
	}
	if c < 1 {
		return false
	}
	// scoreWord scores exactly the docs of mask b in word w: each doc's
	// weights summed from 0 in the query's term order (the terms are
	// visited in order, each adding to the docs of b it holds; the sums
	// are kept for the 64 docs of the word, then stored), with the meta of
	// its first term's posting. A doc is scored once (the levels are
	// disjoint): its score in sc is 0 before.
	var (
		acc   [64]float64
		first [64]uint32
	)
	scoreWord := func(w int, b uint64) {
		if b == 0 {
			return
		}
		met := uint64(0)
		for j, x := range xs {
			if w >= len(x.bits) {
				continue
			}
			xb := x.bits[w]
			base := x.rank[w]
			for hb := xb & b; hb != 0; hb &= hb - 1 {
				i := bits.TrailingZeros64(hb)
				p := &x.byDoc[base+uint32(bits.OnesCount64(xb&(uint64(1)<<i-1)))]
				if met&(uint64(1)<<i) == 0 {
					met |= uint64(1) << i
					acc[i], first[i] = 0, p.meta
				}
				acc[i] += wt.get(j, p.tf, p.dl)
			}
		}
		for hb := met; hb != 0; hb &= hb - 1 {
			i := bits.TrailingZeros64(hb)
			d := uint32(w*64 + i)
			sc.seen[d], sc.meta[d], sc.s[d] = true, first[i], acc[i]
			sc.touched = append(sc.touched, d)
		}
	}
	// The docs holding c terms or more: each bounded above (hi, as the
	// levels below) and below (lo: its terms' weights at the largest
	// length, at tf 1 or 2); θlo, the n-th best lower bound, is at most
	// the n-th best score, so a doc whose upper bound is below it is out;
	// the others (the n of the best lower bounds among them) are scored.
	var lo, hi [64]float64
	his := sc.his[:0]
	if cnt > n {
		sc.vals = sc.vals[:0]
		for w := range words {
			b := top[w]
			if b == 0 {
				continue
			}
			for j, x := range xs {
				if w >= len(x.bits) {
					continue
				}
				for hb := x.bits[w] & b; hb != 0; hb &= hb - 1 {
					i := bits.TrailingZeros64(hb)
					if x.multi[w]&(uint64(1)<<i) != 0 {
						hi[i] += ub[j]
						lo[i] += lbM[j]
					} else {
						hi[i] += ub1[j]
						lo[i] += lb1[j]
					}
				}
			}
			for hb := b; hb != 0; hb &= hb - 1 {
				i := bits.TrailingZeros64(hb)
				sc.vals = append(sc.vals, lo[i])
				his = append(his, hi[i])
				lo[i], hi[i] = 0, 0
			}
		}
		sc.his = his
		thetaLo := nthLargest(sc.vals, n-1)
		at := 0
		for w := range words {
			b := top[w]
			keep := uint64(0)
			for hb := b; hb != 0; hb &= hb - 1 {
				if his[at]*boundSlack >= thetaLo {
					keep |= hb & -hb
				}
				at++
			}
			scoreWord(w, keep)
		}
	} else {
		for w := range words {
			scoreWord(w, top[w])
		}
	}
	// θ: the n-th best score of the docs scored (n at least).
	sc.vals = sc.vals[:0]
	for _, d := range sc.touched {
		sc.vals = append(sc.vals, sc.s[d])
	}
	theta := nthLargest(sc.vals, n-1)
	// The others hold fewer than c terms. Level by level (the docs
	// holding exactly l terms), the sum of the l largest term bounds
	// bounds the whole level, and the sum of the l largest bounds at tf 1
	// bounds its docs that hold every term once; the docs these do not
	// rule out are bounded one by one by the sum of the bounds of their
	// terms (at their tf: once, or more).
	tops, tops1 := sumLargest(ub), sumLargest(ub1)
	multi := sc.words[k*words : (k+1)*words] // docs holding some term more than once
	for _, x := range xs {
		for w, b := range x.multi {
			multi[w] |= b
		}
	}
	var bound [64]float64 // per doc of a word
	for l := c - 1; l >= 1; l-- {
		if tops[l]*boundSlack < theta {
			break // and every level below
		}
		once := tops1[l]*boundSlack < theta // the docs holding every term once are out
		for w := range words {
			b := atLeast(l, w) &^ atLeast(l+1, w)
			if once {
				b &= multi[w]
			}
			if b == 0 {
				continue
			}
			// each doc's bound: its terms' bounds, at its tf (once, or
			// more), summed term by term over the word
			for j, x := range xs {
				if w >= len(x.bits) {
					continue
				}
				for hb := x.bits[w] & b; hb != 0; hb &= hb - 1 {
					i := bits.TrailingZeros64(hb)
					if x.multi[w]&(uint64(1)<<i) != 0 {
						bound[i] += ub[j]
					} else {
						bound[i] += ub1[j]
					}
				}
			}
			keep := uint64(0)
			for hb := b; hb != 0; hb &= hb - 1 {
				i := bits.TrailingZeros64(hb)
				if bound[i]*boundSlack >= theta {
					keep |= uint64(1) << i
				}
				bound[i] = 0
			}
			scoreWord(w, keep)
		}
	}
	return true
}

// sumLargest returns, for each l, the sum of the l largest of us (index
// 0: 0).
func sumLargest(us []float64) []float64 {
	s := slices.Clone(us)
	slices.Sort(s)
	slices.Reverse(s)
	out := make([]float64, len(s)+1)
	for i, u := range s {
		out[i+1] = out[i] + u
	}
	return out
}

// weights memoises a query's BM25 weights by term, tf and document
// length: bm25Term of the same arguments, computed once per query (the
// same float operations, so the same value).
type weights struct {
	tab   []float64 // term j, tf, dl at j·wTF·wDL + tf·wDL + dl; 0: not computed yet
	idfs  []float64
	avgdl float64
}

// The tf and document lengths weights memoises (the others are computed
// each time).
const (
	wTF = 4
	wDL = 128
)

// weights returns the scratch's memo of the weights of terms idfs, empty.
func (sc *scratch) weights(idfs []float64, avgdl float64) *weights {
	n := len(idfs) * wTF * wDL
	sc.wt.tab = slices.Grow(sc.wt.tab[:0], n)[:n]
	clear(sc.wt.tab)
	sc.wt.idfs, sc.wt.avgdl = idfs, avgdl
	return &sc.wt
}

// get is bm25Term(idfs[j], tf, dl, avgdl).
//
// INVARIANT: a weight is > 0 (idf > 0 as df ≤ N, tf ≥ 1), so 0 marks an
// entry not computed; a weight that were 0 would only be computed again.
func (w *weights) get(j int, tf, dl uint32) float64 {
	if tf >= wTF || dl >= wDL {
		return bm25Term(w.idfs[j], float64(tf), float64(dl), w.avgdl)
	}
	i := (j*wTF+int(tf))*wDL + int(dl)
	if v := w.tab[i]; v != 0 {
		return v
	}
	v := bm25Term(w.idfs[j], float64(tf), float64(dl), w.avgdl)
	w.tab[i] = v
	return v
}
