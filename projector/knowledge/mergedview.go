package knowledge

import (
	"cmp"
	"container/heap"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync"
)

// A merged view keeps the dedup of one project's swarm after the hive
// (keptMerged) across versions of the swarm: moving it to another version
// costs what changed, not the size of the pool.
//
// The dedup is greedy in pool order: a candidate (active, in scope) is
// kept iff no kept candidate before it is a near-duplicate of it (the
// hive's kept entries come before every swarm entry). The view records,
// for each swarm candidate that is not kept, one kept swarm candidate
// before it that absorbed it (none when a hive entry did), and indexes
// the kept ones by the prefix of their bigram hashes (dedupper). A change
// then re-decides only the candidates it can affect, in pool order:
//
//   - an added candidate, and when it is kept, the kept candidates after
//     it that are its near-duplicates (found through the index: prefix
//     filtering is symmetric);
//   - a removed kept candidate: the candidates it had absorbed;
//   - a candidate whose decision flips: from kept to absorbed, the ones it
//     had absorbed; from absorbed to kept, its near-duplicates kept after
//     it.
//
// Deciding in pool order makes every decision final when taken: a flip
// only affects candidates after the one flipped. The kept list is then
// the one a dedup of the whole pool gives.

// viewKey names a merged view: the swarm's summary scope and the dedup.
type viewKey struct {
	scope string
	dedupKey
}

// maxViews bounds the merged views a poolCache keeps.
const maxViews = 64

// mergedView is the dedup of one swarm pool after one hive version.
// Guarded by mu.
type mergedView struct {
	mu        sync.Mutex
	threshold float64
	scopes    map[string]bool
	hive      string      // the hive's version ("" when not shown)
	base      *dedupIndex // the hive's dedup; read-only
	sums      []*summary  // the swarm pool the view is at
	nodes     []*vnode    // the swarm's candidates, in pool order
	byID      map[string]*vnode
	post      map[uint64][]vpost // prefix hash → kept nodes
	empties   []*vnode           // kept nodes without bigrams
	gen       uint32
	baseSeen  []uint32 // by index of base.kept: gen when last probed
	work      vheap
	prefix    []hashRank
	last      *keptSet // the set the view gave last
	// What the current move changed: structural when a candidate was
	// added, removed or re-decided (or the view reset); else replaced
	// lists the kept nodes whose summary was replaced in place (saved
	// again with the same bigrams, candidacy and decision).
	structural bool
	replaced   []*vnode
}

// vnode is one swarm candidate of a view.
type vnode struct {
	s        *summary
	kept     bool
	dead     bool     // removed from the view
	queued   bool     // in the work heap
	absorber *vnode   // when not kept: a kept swarm node before it that is a near-duplicate; nil: a hive entry
	absorbed []*vnode // nodes whose absorber this is, or was (checked on use)
	prefix   []uint64 // when kept: the hashes it is indexed by
	mark     uint32
}

func (a *vnode) before(b *vnode) bool {
	if a.s.CreatedSeq != b.s.CreatedSeq {
		return a.s.CreatedSeq < b.s.CreatedSeq
	}
	return a.s.ID < b.s.ID
}

type vheap []*vnode

func (h vheap) Len() int           { return len(h) }
func (h vheap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h vheap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *vheap) Push(x any)        { *h = append(*h, x.(*vnode)) }
func (h *vheap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergedKept is keptMerged through the view of (scope, k): the view is
// moved to the two pools' versions (rebuilt when the hive's differs) and
// its kept list returned, as a set following the one the view gave before
// (keptSet.prev: its scoring rows carry over).
//
// REQUIRES: k.threshold > 0; swarm.version != ""; hive nil or versioned.
func (c *poolCache) mergedKept(scope string, hive, swarm *cachedPool, scopes map[string]bool, k dedupKey) *keptSet {
	vk := viewKey{scope, k}
	c.mu.Lock()
	if c.views == nil {
		c.views = map[viewKey]*mergedView{}
	}
	v := c.views[vk]
	if v == nil {
		if len(c.views) >= maxViews {
			for x := range c.views {
				delete(c.views, x) // any one: views are rebuilt on demand
				break
			}
		}
		v = &mergedView{}
		c.views[vk] = v
	}
	c.mu.Unlock()

	v.mu.Lock()
	defer v.mu.Unlock()
	hv := ""
	if hive != nil {
		hv = hive.version
	}
	oldBase := v.base
	v.structural, v.replaced = false, v.replaced[:0]
	if v.byID == nil || v.hive != hv {
		base := &dedupIndex{}
		if hive != nil {
			base = hive.dedupIndexFor(scopes, k)
		}
		if v.byID != nil && base.lineage != nil && base.lineage == v.base.lineage {
			// The same hive entries kept, with the same bigrams: every
			// decision stands.
			v.hive, v.base = hv, base
		} else {
			v.reset(base, hv, scopes, k)
		}
	}
	v.moveTo(swarm.sums)
	ks := v.patchedKept(oldBase) // its delta is relative to v.last, its prev
	if ks == nil {
		ks = &keptSet{sums: v.keptList()}
	}
	ks.viewed = true
	if v.last != nil {
		// One link at most: a set never scored (an empty budget, a small
		// pool) does not hold the ones before it.
		v.last.prev.Store(nil)
		ks.prev.Store(v.last)
	}
	v.last = ks
	return ks
}

// reset empties the view for the hive at version hv, with dedup base.
func (v *mergedView) reset(base *dedupIndex, hv string, scopes map[string]bool, k dedupKey) {
	v.threshold, v.scopes, v.hive, v.base = k.threshold, scopes, hv, base
	v.structural = true
	v.sums, v.nodes, v.empties, v.work = nil, nil, nil, nil
	v.byID, v.post, v.baseSeen = map[string]*vnode{}, map[uint64][]vpost{}, make([]uint32, len(base.kept))
}

func (v *mergedView) candidate(s *summary) bool { return s.active() && v.scopes[s.Scope] }

// moveTo brings the view to the swarm pool sums (in pool order).
func (v *mergedView) moveTo(sums []*summary) {
	if v.nodes == nil && len(v.sums) == 0 {
		// From scratch: every candidate in order, each decided once.
		v.structural = true
		for _, s := range sums {
			if v.candidate(s) {
				n := &vnode{s: s}
				v.nodes = append(v.nodes, n)
				v.byID[s.ID] = n
			}
		}
		for _, n := range v.nodes {
			v.decide(n)
		}
		v.sums = sums
		return
	}
	for o, s := range summaryChanges(v.sums, sums) {
		v.change(o, s)
	}
	v.sums = sums
	for v.work.Len() > 0 {
		n := heap.Pop(&v.work).(*vnode)
		n.queued = false
		if !n.dead {
			v.decide(n)
		}
	}
}

// summaryChanges walks two pool lists in pool order (cmpSummary) and
// yields each change from old to sums: (o, nil) removed, (nil, s) added,
// (o, s) the same entry saved again as another summary. Summaries held by
// both lists (the same pointer) are unchanged and not yielded.
func summaryChanges(old, sums []*summary) iter.Seq2[*summary, *summary] {
	return func(yield func(o, s *summary) bool) {
		i, j := 0, 0
		for i < len(old) || j < len(sums) {
			var o, s *summary
			switch {
			case j == len(sums):
				o = old[i]
			case i == len(old):
				s = sums[j]
			case old[i] == sums[j]:
				i, j = i+1, j+1
				continue
			default:
				switch c := cmpSummary(old[i], sums[j]); {
				case c < 0:
					o = old[i]
				case c > 0:
					s = sums[j]
				default:
					o, s = old[i], sums[j]
				}
			}
			if o != nil {
				i++
			}
			if s != nil {
				j++
			}
			if !yield(o, s) {
				return
			}
		}
	}
}

func cmpSummary(a, b *summary) int {
	if c := cmp.Compare(a.CreatedSeq, b.CreatedSeq); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// change applies one summary's change: o replaced by s (same entry), o
// removed (s nil) or s added (o nil).
func (v *mergedView) change(o, s *summary) {
	var n *vnode
	if o != nil {
		n = v.byID[o.ID]
	}
	if n != nil && s != nil && v.candidate(s) && sameBigrams(n.s, s) {
		n.s = s // the same decision: it depends on the bigrams only
		if n.kept {
			v.replaced = append(v.replaced, n)
		}
		return
	}
	v.structural = true
	if n != nil {
		v.remove(n)
	}
	if s != nil && v.candidate(s) {
		n := &vnode{s: s}
		i, _ := slices.BinarySearchFunc(v.nodes, n, func(a, b *vnode) int { return cmpSummary(a.s, b.s) })
		v.nodes = slices.Insert(v.nodes, i, n)
		v.byID[s.ID] = n
		v.queue(n)
	}
}

func sameBigrams(a, b *summary) bool { return slices.Equal(a.bghash, b.bghash) }

func (v *mergedView) remove(n *vnode) {
	i, ok := slices.BinarySearchFunc(v.nodes, n, func(a, b *vnode) int { return cmpSummary(a.s, b.s) })
	if ok {
		v.nodes = slices.Delete(v.nodes, i, i+1)
	}
	delete(v.byID, n.s.ID)
	n.dead = true
	if n.kept {
		v.unkeep(n)
	}
}

func (v *mergedView) queue(n *vnode) {
	if !n.queued && !n.dead {
		n.queued = true
		heap.Push(&v.work, n)
	}
}

// unkeep un-indexes the kept node n and queues the nodes it absorbed.
func (v *mergedView) unkeep(n *vnode) {
	n.kept = false
	if len(n.s.bghash) == 0 {
		v.empties = slices.DeleteFunc(v.empties, func(x *vnode) bool { return x == n })
	}
	for _, h := range n.prefix {
		v.post[h] = slices.DeleteFunc(v.post[h], func(x vpost) bool { return x.n == n })
		if len(v.post[h]) == 0 {
			delete(v.post, h)
		}
	}
	n.prefix = nil
	for _, z := range n.absorbed {
		if z.absorber == n {
			z.absorber = nil
			v.queue(z)
		}
	}
	n.absorbed = nil
}

// decide re-decides n, every node before it being decided.
func (v *mergedView) decide(n *vnode) {
	dup, by := v.duplicateOf(n)
	if !dup {
		if n.kept {
			return
		}
		n.kept, n.absorber = true, nil
		if len(n.s.bghash) == 0 {
			// Its near-duplicates kept after it are the empty ones.
			for _, y := range v.empties {
				if n.before(y) && 1 >= v.threshold {
					v.queue(y)
				}
			}
			v.empties = append(v.empties, n)
			return
		}
		// v.prefix holds n's prefix (duplicateOf).
		n.prefix = make([]uint64, len(v.prefix))
		for i, r := range v.prefix {
			n.prefix[i] = r.h
		}
		v.gen++
		lx := len(n.s.bghash)
		for i, h := range n.prefix {
			for _, p := range v.post[h] {
				if y := p.n; y.mark != v.gen && n.before(y) {
					y.mark = v.gen
					if !apart(lx, i, len(y.s.bghash), int(p.pos), v.threshold) && nearDuplicate(n.s.features, y.s.features, v.threshold) {
						v.queue(y)
					}
				}
			}
			if i == 0 || h != n.prefix[i-1] { // a hash's first occurrence only
				v.post[h] = append(v.post[h], vpost{n, int32(i)})
			}
		}
		return
	}
	if n.kept {
		v.unkeep(n)
	}
	n.absorber = by
	if by != nil {
		by.absorbed = append(by.absorbed, n)
	}
}

// duplicateOf reports whether a kept candidate before n (a hive entry, or
// a swarm node: by) is a near-duplicate of n, and leaves n's prefix in
// v.prefix.
func (v *mergedView) duplicateOf(n *vnode) (bool, *vnode) {
	if len(n.s.bghash) == 0 {
		if 1 < v.threshold {
			return false, nil
		}
		if v.base.emptyKept {
			return true, nil
		}
		for _, y := range v.empties {
			if y != n && y.before(n) {
				return true, y
			}
		}
		return false, nil
	}
	v.prefix = rarest(n.s.bghash, v.base.df, prefixLen(len(n.s.bghash), v.threshold), v.prefix[:0])
	v.gen++
	lx := len(n.s.bghash)
	for i, r := range v.prefix {
		for x := v.base.post.first(r.h); x >= 0; x = v.base.post.next[x] {
			if k := v.base.post.kept[x]; v.baseSeen[k] != v.gen {
				v.baseSeen[k] = v.gen
				b := v.base.kept[k]
				if !apart(lx, i, len(b.bghash), int(v.base.post.pos[x]), v.threshold) && nearDuplicate(n.s.features, b.features, v.threshold) {
					return true, nil
				}
			}
		}
	}
	for i, r := range v.prefix {
		for _, p := range v.post[r.h] {
			if y := p.n; y.mark != v.gen && y != n && y.before(n) {
				y.mark = v.gen
				if !apart(lx, i, len(y.s.bghash), int(p.pos), v.threshold) && nearDuplicate(n.s.features, y.s.features, v.threshold) {
					return true, y
				}
			}
		}
	}
	return false, nil
}

// vpost is a kept node in the postings of one of its prefix hashes, with
// the position of that hash's first occurrence in its order (apart).
type vpost struct {
	n   *vnode
	pos int32
}

// patchedKept is the kept list after a move that changed no decision: the
// list the view gave last with the summaries replaced since (the hive's,
// at the same positions when its dedup was carried over, and the swarm's
// kept nodes saved again), as a patched set (keptSet.root) recording
// those positions (keptSet.delta). Nil when the move changed more, or the
// hive's dedup is another's (oldBase: the one before the move).
func (v *mergedView) patchedKept(oldBase *dedupIndex) *keptSet {
	if v.structural || v.last == nil || oldBase == nil || len(oldBase.kept) != len(v.base.kept) {
		return nil
	}
	last := v.last
	nb, n := len(v.base.kept), last.size()
	if n < nb {
		return nil
	}
	var ch []keptPatch
	if v.base != oldBase {
		for p, s := range v.base.kept {
			if s != oldBase.kept[p] {
				if last.at(p) != oldBase.kept[p] {
					return nil
				}
				ch = append(ch, keptPatch{int32(p), s})
			}
		}
	}
	for _, x := range v.replaced {
		i, ok := sort.Find(n-nb, func(i int) int { return cmpSummary(x.s, last.at(nb+i)) })
		if !ok {
			return nil
		}
		ch = append(ch, keptPatch{int32(nb + i), x.s})
	}
	slices.SortFunc(ch, func(a, b keptPatch) int { return cmp.Compare(a.pos, b.pos) })
	ks := &keptSet{patched: true, delta: make([]int32, len(ch))}
	for i, p := range ch {
		ks.delta[i] = p.pos
	}
	root, over := last.root, last.over
	if root == nil {
		root = last.sums
	}
	// The patches of last, then these (a later one wins at a position).
	merged := make([]keptPatch, 0, len(over)+len(ch))
	i, j := 0, 0
	for i < len(over) || j < len(ch) {
		switch {
		case j == len(ch) || i < len(over) && over[i].pos < ch[j].pos:
			merged = append(merged, over[i])
			i++
		case i == len(over) || ch[j].pos < over[i].pos:
			merged = append(merged, ch[j])
			j++
		default:
			merged = append(merged, ch[j])
			i, j = i+1, j+1
		}
	}
	if len(merged) > len(root)/16 {
		// Patches are read by binary search: past a share of the list,
		// a flat copy.
		out := slices.Clone(root)
		for _, p := range merged {
			out[p.pos] = p.s
		}
		ks.sums = out
		return ks
	}
	ks.root, ks.over = root, merged
	return ks
}

// keptList is the hive's kept entries, then the swarm's, in pool order.
func (v *mergedView) keptList() []*summary {
	out := make([]*summary, 0, len(v.base.kept)+len(v.nodes))
	out = append(out, v.base.kept...)
	for _, n := range v.nodes {
		if n.kept {
			out = append(out, n.s)
		}
	}
	return out[:len(out):len(out)]
}
