package knowledge

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// keptSet is the merged pool's candidates left by the dedup, in pool
// order, as injections rank them. Read-only once shared, but for its
// ranking index (rankindex.go), built or taken over once, on first use.
type keptSet struct {
	// sums is the list, or nil for a patched set (root not nil): read it
	// through list, size and at.
	sums []*summary
	// A patched set is root (another set's flat list, shared) with the
	// summaries at the positions of over (ascending) replaced: the same
	// entries, saved again. Its flat list is built on demand (list).
	root     []*summary
	over     []keptPatch
	flatOnce sync.Once
	flat     []*summary

	// prev is the set the same merged view gave before this one (nil:
	// none): its ranking index, when built, becomes this set's, moved by
	// the summaries the two do not share. Read and dropped on the first
	// use (so a chain of sets never holds more than one other).
	prev atomic.Pointer[keptSet]
	// When patched, delta lists the positions whose summary differs from
	// those of the set in prev when this one was made, a list of the same
	// length: the same entries, some saved again (mergedView.patchedKept).
	patched bool
	delta   []int32

	// viewed is set for the sets a merged view gives (mergedKept): they
	// get their index on first use, as the view's next sets take it over.
	viewed bool

	uses atomic.Int32 // injections asked for the index so far
	once sync.Once
	idx  atomic.Pointer[rankIndex] // nil until built, or when it cannot be
}

// keptPatch is a summary replacing the one at pos.
type keptPatch struct {
	pos int32
	s   *summary
}

// list is the set's flat list (built once for a patched set).
func (ks *keptSet) list() []*summary {
	if ks.root == nil {
		return ks.sums
	}
	ks.flatOnce.Do(func() {
		out := slices.Clone(ks.root)
		for _, p := range ks.over {
			out[p.pos] = p.s
		}
		ks.flat = out
	})
	return ks.flat
}

// size is len(ks.list()).
func (ks *keptSet) size() int {
	if ks.root == nil {
		return len(ks.sums)
	}
	return len(ks.root)
}

// at is ks.list()[i].
func (ks *keptSet) at(i int) *summary {
	if ks.root == nil {
		return ks.sums[i]
	}
	if k, ok := slices.BinarySearchFunc(ks.over, int32(i), func(p keptPatch, i int32) int { return cmp.Compare(p.pos, i) }); ok {
		return ks.over[k].s
	}
	return ks.root[i]
}

// index returns the set's ranking index, or nil when it is ranked without
// one:
//
//   - a set following another (the same view, its pool changed by a few
//     summaries, as after every injection record or addition) gets one on
//     first use: the other's, moved to this set (rankIndex.moveTo), when
//     the other has one; else one built from scratch. A pool that changes
//     between injections pays one build, then the changes;
//   - any other set builds one on its second use (a set injected once is
//     ranked from its summaries: building costs a pass of its own).
//
// The index returned may have moved on to a later set meanwhile
// (rankIndex.top then declines it).
func (ks *keptSet) index(minRet int) *rankIndex {
	n := ks.uses.Add(1)
	if ix := ks.idx.Load(); ix != nil {
		return ix
	}
	var from *keptSet
	if n == 1 {
		from = ks.prev.Swap(nil)
	}
	if from == nil && n < 2 && !ks.viewed {
		return nil
	}
	ks.once.Do(func() {
		var ix *rankIndex
		if from != nil {
			if fx := from.idx.Load(); fx != nil {
				fx.mu.Lock()
				moved := false
				if ks.patched {
					moved = fx.moveBy(from, ks, ks.delta)
				} else {
					moved = fx.moveTo(from, ks)
				}
				if moved {
					ix = fx
				}
				fx.mu.Unlock()
			}
		}
		if ix == nil {
			ix = buildRankIndex(ks, minRet)
		}
		if ix != nil {
			ks.idx.Store(ix)
		}
	})
	return ks.idx.Load()
}

// mergedOrder is the order of a merged pool's kept list (keptMerged): the
// hive's entries, then the swarm's, each in pool order (cmpSummary).
func mergedOrder(a, b *summary) int {
	if c := cmp.Compare(tierRank(a), tierRank(b)); c != 0 {
		return c
	}
	return cmpSummary(a, b)
}

func tierRank(s *summary) int {
	if s.Tier == TierHive {
		return 0
	}
	return 1
}
