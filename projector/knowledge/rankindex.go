package knowledge

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// The ranking index: the k best candidates of a kept set for a task
// without scoring every candidate.
//
// With a task of nt terms, a candidate's score is
// taskScore(c/nt, q): c the task terms its relevance text matches, q its
// quality (qualityOf). For a fixed c the score does not decrease with q,
// and for a fixed q it does not decrease with c (IEEE rounding is
// monotone). The index keeps, per candidate, a stable slot, its quality,
// and per word of the candidates' relevance texts the slots holding it
// (a list, or a bitmap once common). A query ORs, per term, the slots of
// the words the term matches (one bitmap per term), adds the bitmaps into
// bit-sliced counts, and visits the levels c = nt … 0, each as a bitmap
// of its slots, scoring only the candidates of a level that can still
// enter the k best: a level c is skipped with every level below it once
// taskScore(c/nt, qmax) is below the k-th score, qmax bounding every
// candidate's quality. The result is the exhaustive ranking's
// (rankSummaries): the same scores, computed by the same functions, and
// the same order, ties included (rankBefore).
//
// The index follows a merged view's kept sets: the set after another takes
// its index over and applies the difference between the two kept lists
// (moveTo), so a pool changed by a few summaries (an injection record's
// shown counts, an addition) costs what changed and one walk of pointer
// comparisons, not a rebuild.

// rankIndex is the ranking index of one kept set at a time (owner).
// Guarded by mu: queries hold it shared, moves and quality updates
// exclusively.
type rankIndex struct {
	mu    sync.RWMutex
	owner *keptSet // the set described; others must not use the index

	minRet int // cfg.MinRetrievalsForUtility the qualities are computed for

	sums   []*summary // by slot; nil when free
	q      []float64  // by slot: qualityOf the summary
	live   []uint64   // bitmap of the slots in use
	free   []int32
	slotOf map[*summary]int32
	// qmax is at least every live slot's quality (an upper bound: not
	// lowered when a slot's quality drops; exact after a build).
	qmax float64

	ids   map[string]int32 // word → word id
	strs  []string         // word id → word
	byStr []int32          // word ids in string order (prefix ranges)
	post  [][]int32        // word id → slots holding it, while sparse (nil once dense)
	dense [][]uint64       // word id → bitmap of slots holding it, once common
	seen  []uint32         // word id → gen when last met in a row (distinct words)
	gen   uint32
	trans map[*relVocab][]int32 // a vocab's word id → word id + 1 (0: not known yet)
	// lastV and lastTr are the vocab wordsOf read last and its trans.
	lastV  *relVocab
	lastTr []int32
	snaps  map[*relVocab][]string
	wbuf   []int32
}

// quality is the part of the score that does not depend on the task.
func quality(s *summary, minRet int) float64 {
	return qualityOf(s.Confidence, s.Outcomes.Shown, s.Outcomes.Helpful, maturity(s.Status), minRet)
}

// buildRankIndex indexes the candidates of ks, or returns nil when its
// list is not strictly in merged pool order (the rank order's last key).
func buildRankIndex(ks *keptSet, minRet int) *rankIndex {
	sums := ks.list()
	for i := 1; i < len(sums); i++ {
		if mergedOrder(sums[i-1], sums[i]) >= 0 {
			return nil
		}
	}
	ix := &rankIndex{owner: ks, minRet: minRet, slotOf: make(map[*summary]int32, len(sums)),
		ids: map[string]int32{}, trans: map[*relVocab][]int32{}, snaps: map[*relVocab][]string{}}
	ix.sums = make([]*summary, 0, len(sums))
	ix.q = make([]float64, 0, len(sums))
	ix.live = make([]uint64, 0, (len(sums)+63)/64)
	for _, s := range sums {
		ix.add(s)
	}
	ix.snaps = map[*relVocab][]string{} // drop the snapshots: a later one may be longer
	return ix
}

// wordsOf is the distinct word ids of s's relevance text (added to the
// index when new), in ix.wbuf.
func (ix *rankIndex) wordsOf(s *summary) []int32 {
	ix.gen++
	out := ix.wbuf[:0]
	note := func(w int32) {
		if ix.seen[w] != ix.gen {
			ix.seen[w] = ix.gen
			out = append(out, w)
		}
	}
	if v := s.vocab; v != nil {
		var tr []int32
		if v == ix.lastV {
			tr = ix.lastTr
		} else {
			tr = ix.trans[v]
		}
		for _, id := range s.relw {
			if int(id) < len(tr) && tr[id] != 0 {
				note(tr[id] - 1)
				continue
			}
			snap := ix.snaps[v]
			if int(id) >= len(snap) {
				snap = v.snapshot()
				ix.snaps[v] = snap
			}
			w := ix.word(snap[id])
			if int(id) >= len(tr) {
				tr = append(tr, make([]int32, int(id)+1-len(tr))...)
			}
			tr[id] = w + 1
			note(w)
		}
		if v != ix.lastV || len(tr) != len(ix.lastTr) {
			ix.trans[v] = tr
		}
		ix.lastV, ix.lastTr = v, tr
	} else {
		rel := s.rel
		for {
			w, rest, more := strings.Cut(rel, " ")
			note(ix.word(w))
			if !more {
				break
			}
			rel = rest
		}
	}
	ix.wbuf = out
	return out
}

// word is the id of w, added when new.
func (ix *rankIndex) word(w string) int32 {
	if id, ok := ix.ids[w]; ok {
		return id
	}
	id := int32(len(ix.strs))
	ix.ids[w] = id
	ix.strs = append(ix.strs, w)
	ix.post = append(ix.post, nil)
	ix.dense = append(ix.dense, nil)
	ix.seen = append(ix.seen, 0)
	i, _ := slices.BinarySearchFunc(ix.byStr, w, func(x int32, w string) int { return strings.Compare(ix.strs[x], w) })
	ix.byStr = slices.Insert(ix.byStr, i, id)
	return id
}

// denseAt is the length of a word's slot list from which it becomes a
// bitmap: then the bitmap is at most 32 times smaller than the list.
func (ix *rankIndex) denseAt() int { return max(64, len(ix.sums)/32) }

// add gives s a slot.
func (ix *rankIndex) add(s *summary) {
	var slot int32
	if n := len(ix.free); n > 0 {
		slot, ix.free = ix.free[n-1], ix.free[:n-1]
		ix.sums[slot], ix.q[slot] = s, quality(s, ix.minRet)
	} else {
		slot = int32(len(ix.sums))
		ix.sums, ix.q = append(ix.sums, s), append(ix.q, quality(s, ix.minRet))
		if int(slot)/64 >= len(ix.live) {
			ix.live = append(ix.live, 0)
		}
	}
	ix.live[slot/64] |= 1 << (slot % 64)
	ix.slotOf[s] = slot
	ix.qmax = max(ix.qmax, ix.q[slot])
	at := ix.denseAt()
	for _, w := range ix.wordsOf(s) {
		if b := ix.dense[w]; b != nil {
			for int(slot)/64 >= len(b) {
				b = append(b, 0)
			}
			b[slot/64] |= 1 << (slot % 64)
			ix.dense[w] = b
			continue
		}
		ix.post[w] = append(ix.post[w], slot)
		if len(ix.post[w]) > at {
			b := make([]uint64, len(ix.live), cap(ix.live))
			for _, x := range ix.post[w] {
				b[x/64] |= 1 << (x % 64)
			}
			ix.dense[w], ix.post[w] = b, nil
		}
	}
}

// remove frees the slot of s.
func (ix *rankIndex) remove(s *summary) {
	slot := ix.slotOf[s]
	delete(ix.slotOf, s)
	for _, w := range ix.wordsOf(s) {
		if b := ix.dense[w]; b != nil {
			b[slot/64] &^= 1 << (slot % 64)
			continue
		}
		p := ix.post[w]
		if i := slices.Index(p, slot); i >= 0 {
			p[i] = p[len(p)-1]
			ix.post[w] = p[:len(p)-1]
		}
	}
	ix.sums[slot] = nil
	ix.live[slot/64] &^= 1 << (slot % 64)
	ix.free = append(ix.free, slot)
}

// replace puts s, the same entry saved again with the same relevance
// text, in o's slot.
func (ix *rankIndex) replace(o, s *summary) {
	slot := ix.slotOf[o]
	delete(ix.slotOf, o)
	ix.slotOf[s] = slot
	ix.sums[slot], ix.q[slot] = s, quality(s, ix.minRet)
	ix.qmax = max(ix.qmax, ix.q[slot])
}

// moveTo makes the index, which describes from, describe ks: both lists
// are in merged pool order, so one walk finds the summaries they do not
// share. False (the index then describes nothing) when ks's list is not
// strictly in that order.
//
// REQUIRES: ix.mu held exclusively.
func (ix *rankIndex) moveTo(from, ks *keptSet) bool {
	if ix.owner != from {
		return false
	}
	ix.owner = nil
	old, sums := from.list(), ks.list()
	ordered := func(i int) bool {
		return (i == 0 || mergedOrder(sums[i-1], sums[i]) < 0) && (i+1 == len(sums) || mergedOrder(sums[i], sums[i+1]) < 0)
	}
	i, j := 0, 0
	for i < len(sums) || j < len(old) {
		if i < len(sums) && j < len(old) && old[j] == sums[i] {
			i, j = i+1, j+1
			continue
		}
		c := 0
		switch {
		case j == len(old):
			c = 1
		case i == len(sums):
			c = -1
		default:
			c = mergedOrder(old[j], sums[i])
		}
		switch {
		case c < 0:
			ix.remove(old[j])
			j++
			continue
		case c == 0 && old[j].rel == sums[i].rel:
			ix.replace(old[j], sums[i])
			j++
		case c == 0:
			ix.remove(old[j])
			ix.add(sums[i])
			j++
		default:
			ix.add(sums[i])
		}
		if !ordered(i) {
			return false
		}
		i++
	}
	ix.snaps = map[*relVocab][]string{}
	ix.owner = ks
	return true
}

// moveBy is moveTo when ks's list is from's with the summaries at the
// positions delta replaced by the same entries' (keptSet.delta): only
// those are read.
//
// REQUIRES: ix.mu held exclusively.
func (ix *rankIndex) moveBy(from, ks *keptSet, delta []int32) bool {
	if ix.owner != from || from.size() != ks.size() {
		return false
	}
	ix.owner = nil
	for _, p := range delta {
		o, s := from.at(int(p)), ks.at(int(p))
		switch {
		case o == s:
		case mergedOrder(o, s) != 0:
			return false // not the same entry
		case o.rel == s.rel:
			ix.replace(o, s)
		default:
			ix.remove(o)
			ix.add(s)
		}
	}
	ix.snaps = map[*relVocab][]string{}
	ix.owner = ks
	return true
}

// setMinRet recomputes the qualities for another minimum of retrievals.
//
// REQUIRES: ix.mu held exclusively.
func (ix *rankIndex) setMinRet(minRet int) {
	ix.minRet, ix.qmax = minRet, 0
	for slot, s := range ix.sums {
		if s != nil {
			ix.q[slot] = quality(s, minRet)
			ix.qmax = max(ix.qmax, ix.q[slot])
		}
	}
}

// rankScratch is a query's bitmaps, reused between queries.
type rankScratch struct{ words []uint64 }

var rankScratchPool = sync.Pool{New: func() any { return new(rankScratch) }}

// top is the k first candidates of ks for task in rank order (all of them
// when fewer), as rankSummaries gives them, and true; false when the index
// does not describe ks.
//
// REQUIRES: k > 0.
func (ix *rankIndex) top(ks *keptSet, task []string, k int, cfg Config) ([]scored, bool) {
	ix.mu.RLock()
	if ix.owner == ks && ix.minRet != cfg.MinRetrievalsForUtility {
		ix.mu.RUnlock()
		ix.mu.Lock()
		if ix.owner == ks {
			ix.setMinRet(cfg.MinRetrievalsForUtility)
		}
		ix.mu.Unlock()
		ix.mu.RLock()
	}
	defer ix.mu.RUnlock()
	if ix.owner != ks || ix.minRet != cfg.MinRetrievalsForUtility {
		return nil, false
	}
	top := make([]scored, 0, k)
	visit := func(bm uint64, base int, rel float64, hasTask bool) {
		for bm != 0 {
			slot := base + bits.TrailingZeros64(bm)
			bm &= bm - 1
			val := ix.q[slot]
			if hasTask {
				val = taskScore(rel, val)
			}
			if len(top) == k && val < top[k-1].val {
				continue
			}
			top = insertBy(top, scored{e: ix.sums[slot], rel: rel, val: val}, k, rankBefore)
		}
	}
	nw := len(ix.live)
	if len(task) == 0 {
		for w, bm := range ix.live {
			visit(bm, 64*w, 0, false)
		}
		return top, true
	}
	nt := len(task)
	planes := bits.Len(uint(nt))
	sc := rankScratchPool.Get().(*rankScratch)
	defer rankScratchPool.Put(sc)
	need := (planes + 2) * nw
	if cap(sc.words) < need {
		sc.words = make([]uint64, need)
	}
	buf := sc.words[:need]
	clear(buf)
	counts, term, level := buf[:planes*nw], buf[planes*nw:(planes+1)*nw], buf[(planes+1)*nw:]
	cmax := 0
	for _, t := range task {
		if !ix.termSlots(t, term) {
			continue
		}
		cmax++
		// counts += term, bit-sliced: plane p holds bit p of each count.
		for w, carry := range term {
			for p := 0; carry != 0; p++ {
				x := &counts[p*nw+w]
				*x, carry = *x^carry, *x&carry
			}
		}
		clear(term)
	}
	for c := cmax; c >= 0; c-- {
		rel := float64(c) / float64(nt)
		if len(top) == k && taskScore(rel, ix.qmax) < top[k-1].val {
			break // no candidate of this level or below can enter
		}
		copy(level, ix.live)
		for p := range planes {
			pl := counts[p*nw : (p+1)*nw]
			if c&(1<<p) != 0 {
				for w := range level {
					level[w] &= pl[w]
				}
			} else {
				for w := range level {
					level[w] &^= pl[w]
				}
			}
		}
		for w, bm := range level {
			visit(bm, 64*w, rel, true)
		}
	}
	return top, true
}

// termSlots sets in out the slots whose relevance text has a word the
// task term t matches (termMatches), and reports whether there is one.
func (ix *rankIndex) termSlots(t string, out []uint64) bool {
	found := false
	mark := func(w int32) {
		if b := ix.dense[w]; b != nil {
			for i, x := range b[:min(len(b), len(out))] {
				out[i] |= x
			}
			found = true
			return
		}
		for _, slot := range ix.post[w] {
			out[slot/64] |= 1 << (slot % 64)
			found = true
		}
	}
	// w == t, or t a prefix of w (len(t) >= 4): the words from t on in
	// string order, while t prefixes them.
	i, _ := slices.BinarySearchFunc(ix.byStr, t, func(x int32, t string) int { return strings.Compare(ix.strs[x], t) })
	for ; i < len(ix.byStr); i++ {
		w := ix.strs[ix.byStr[i]]
		if w != t && !(len(t) >= 4 && strings.HasPrefix(w, t)) {
			break
		}
		mark(ix.byStr[i])
	}
	// w a proper prefix of t with len(w) >= 4.
	for n := 4; n < len(t); n++ {
		if id, ok := ix.ids[t[:n]]; ok {
			mark(id)
		}
	}
	return found
}

// termMatches is relevanceIn's test of a task term t against a word w.
func termMatches(t, w string) bool {
	return w == t || (len(t) >= 4 && strings.HasPrefix(w, t)) || (len(w) >= 4 && strings.HasPrefix(t, w))
}

// rankBefore is ranksBefore for candidates of a list strictly in merged
// pool order: its last key, the pool position, is that order.
func rankBefore(a, c scored) bool {
	if r := rankCmp(a, c); r != 0 {
		return r < 0
	}
	return mergedOrder(a.e, c.e) < 0
}

// insertBy adds s to top (at most k, k > 0) in the order before, dropping
// the last when it no longer is among the k first.
func insertBy(top []scored, s scored, k int, before func(a, c scored) bool) []scored {
	n := len(top)
	if n == k {
		if !before(s, top[n-1]) {
			return top
		}
		n--
	} else {
		top = append(top, s)
	}
	j := n
	for j > 0 && before(s, top[j-1]) {
		top[j] = top[j-1]
		j--
	}
	top[j] = s
	return top
}
