package knowledge

import (
	"cmp"
	"sync"
	"sync/atomic"
)

// keptSet is the merged pool's candidates left by the dedup, in pool
// order, as injections rank them. Read-only once shared, but for its
// ranking index (rankindex.go), built or taken over once, on first use.
type keptSet struct {
	sums []*summary

	// prev is the set the same merged view gave before this one (nil:
	// none): its ranking index, when built, becomes this set's, moved by
	// the summaries the two do not share. Read and dropped on the first
	// use (so a chain of sets never holds more than one other).
	prev atomic.Pointer[keptSet]
	// delta lists the positions whose summary differs from deltaFrom's
	// (nil: not known), a list of the same length: the same entries, some
	// saved again (mergedView.patchedKept).
	deltaFrom *keptSet
	delta     []int32

	uses atomic.Int32 // injections asked for the index so far
	once sync.Once
	idx  atomic.Pointer[rankIndex] // nil until built, or when it cannot be
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
	if from == nil && n < 2 {
		return nil
	}
	ks.once.Do(func() {
		var ix *rankIndex
		if from != nil {
			if fx := from.idx.Load(); fx != nil {
				fx.mu.Lock()
				moved := false
				if ks.deltaFrom == from {
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
