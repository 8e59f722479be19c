package crossloop

import (
	"math/bits"
	"slices"
)

// The fold's deltas of the cached terms: what an event removed from and
// added to a term's postings, from the fingerprint it found to the one it
// left. A query brings a cached entry forward by applying, in the order
// the fold logged them, the deltas from the entry's fingerprint to its
// record's (postingCache.catchUp): an update of a pattern's meta changes
// one posting in place, a pattern added or removed one posting and the
// bits and ranks after it. The deltas are logged as the fold writes, before
// its batch is committed; a query applies only the ones up to the
// fingerprint its record shows (committed), and the others wait.

// postingOp is one change of a term's postings: the posting removed (old,
// encoded as appendPosting does; nil: none) and the one added (now; nil:
// none). A meta refreshed is both, for the same pattern.
type postingOp struct{ old, now []byte }

// termDelta takes a term's postings of fingerprint from to fingerprint to.
type termDelta struct {
	from, to fingerprint
	ops      []postingOp
	bytes    int
}

// termLog is the deltas logged for a term and not yet applied, in fold
// order.
type termLog struct {
	ds    []termDelta
	bytes int
}

// logMax and logMaxBytes bound a term's log: past them the oldest deltas
// are forgotten (an entry that needed them is read again); past
// logBudget, the logs of all terms together, whole logs are forgotten
// until half of it is left (the deltas of terms no query asked for lately
// do not pile up).
const (
	logMax      = 1024
	logMaxBytes = 256 << 10
	logBudget   = 16 << 20
)

// record logs the delta of term (from → to, ops) when the cache holds the
// term. The fold calls it for every term an event changed; a rebuild or a
// refold of the same events logs deltas that are true of the fingerprints
// they name too (see the invariant of postingCache).
func (c *postingCache) record(term string, from, to fingerprint, ops []postingOp) {
	if c == nil || from == to {
		return
	}
	c.mu.RLock()
	cached := c.gen.terms[term] != nil
	c.mu.RUnlock()
	if !cached {
		return
	}
	d := termDelta{from: from, to: to, ops: ops}
	for _, op := range ops {
		d.bytes += len(op.old) + len(op.now) + 48
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	l := c.log[term]
	if l == nil {
		l = &termLog{}
		c.log[term] = l
	}
	l.ds = append(l.ds, d)
	l.bytes += d.bytes
	c.logBytes += d.bytes
	n := 0
	for len(l.ds)-n > logMax || (l.bytes > logMaxBytes && n < len(l.ds)) {
		l.bytes -= l.ds[n].bytes
		c.logBytes -= l.ds[n].bytes
		n++
	}
	if n > 0 {
		l.ds = slices.Delete(l.ds, 0, n)
	}
	if c.logBytes > logBudget {
		for t, l := range c.log {
			if c.logBytes <= logBudget/2 {
				break
			}
			c.logBytes -= l.bytes
			delete(c.log, t)
		}
	}
}

// catchUp brings the entry of term forward to fingerprint to with the
// logged deltas, and reports whether it is there. The first delta from the
// entry's fingerprint is applied, then the first after it from the next
// fingerprint, and so on; the deltas applied are forgotten. An entry a
// delta does not fit (never, barring a collision) is dropped. The cache's
// lock must be held.
func (c *postingCache) catchUp(term string, to fingerprint) bool {
	g := c.gen
	e := g.terms[term]
	if e == nil {
		return false
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	l := c.log[term]
	if l == nil {
		return false
	}
	// the path of deltas, without applying (an entry is changed only when
	// it reaches to)
	var path []int
	cur := e.fp
	for i := range l.ds {
		if cur == to {
			break
		}
		if l.ds[i].from == cur {
			path = append(path, i)
			cur = l.ds[i].to
		}
	}
	if cur != to || len(path) == 0 {
		return cur == to
	}
	for _, i := range path {
		g.bytes -= e.cost(term)
		ok := g.apply(e, &l.ds[i])
		g.bytes += e.cost(term)
		if !ok {
			g.drop(term, e)
			return false
		}
	}
	last := path[len(path)-1]
	for _, d := range l.ds[:last+1] {
		l.bytes -= d.bytes
		c.logBytes -= d.bytes
	}
	l.ds = slices.Delete(l.ds, 0, last+1)
	return true
}

// apply applies delta d to entry e (of fingerprint d.from), in place. It
// returns false when a posting to remove is not the entry's (e is then
// partly changed, its metas counted: the caller drops it).
func (g *cacheGen) apply(e *termPostings, d *termDelta) bool {
	x := e.x
	if x.dup {
		return false
	}
	for _, op := range d.ops {
		var nid []byte
		var ntf, ndl uint64
		var nmeta []byte
		if op.now != nil {
			var err error
			if nid, ntf, ndl, nmeta, _, err = nextPosting(op.now); err != nil || !fits32(ntf, ndl) {
				return false
			}
		}
		if op.old != nil {
			id, tf, dl, meta, _, err := nextPosting(op.old)
			if err != nil {
				return false
			}
			doc, ok := g.docs[string(id)]
			if !ok || !x.has(doc) {
				return false
			}
			p := x.posting(doc)
			if uint64(p.tf) != tf || uint64(p.dl) != dl || string(g.metas[p.meta]) != string(meta) {
				return false
			}
			if op.now != nil && string(nid) == string(id) && ntf == tf && ndl == dl {
				m := g.metaNum(nmeta) // the meta refreshed: in place
				g.unref(p.meta)
				p.meta = m
				continue
			}
			g.unref(p.meta)
			x.remove(doc)
		}
		if op.now != nil {
			doc := g.docNum(nid)
			if x.has(doc) {
				return false
			}
			x.insert(cachedPosting{doc: doc, meta: g.metaNum(nmeta), tf: uint32(ntf), dl: uint32(ndl)})
		}
	}
	e.ps = x.byDoc
	e.fp = d.to
	return true
}

// insert adds posting p (its doc absent). The bounds only widen.
func (x *docIndex) insert(p cachedPosting) {
	w := int(p.doc / 64)
	for len(x.bits) <= w {
		x.bits = append(x.bits, 0)
		x.multi = append(x.multi, 0)
		x.rank = append(x.rank, x.rank[len(x.rank)-1])
	}
	bit := uint64(1) << (p.doc % 64)
	at := x.rank[w] + uint32(bits.OnesCount64(x.bits[w]&(bit-1)))
	x.byDoc = slices.Insert(x.byDoc, int(at), p)
	x.bits[w] |= bit
	if p.tf > 1 {
		x.multi[w] |= bit
	}
	for i := w + 1; i < len(x.rank); i++ {
		x.rank[i]++
	}
	x.maxTF, x.minDL, x.maxDL = max(x.maxTF, float64(p.tf)), min(x.minDL, float64(p.dl)), max(x.maxDL, float64(p.dl))
}

// remove removes doc d's posting (d present). The bounds stay: bounds of
// a superset are bounds still.
func (x *docIndex) remove(d uint32) {
	w := int(d / 64)
	bit := uint64(1) << (d % 64)
	at := x.rank[w] + uint32(bits.OnesCount64(x.bits[w]&(bit-1)))
	x.byDoc = slices.Delete(x.byDoc, int(at), int(at)+1)
	x.bits[w] &^= bit
	x.multi[w] &^= bit
	for i := w + 1; i < len(x.rank); i++ {
		x.rank[i]--
	}
}
