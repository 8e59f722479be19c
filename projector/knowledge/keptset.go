package knowledge

import (
	"cmp"
	"math"
	"sync"
	"sync/atomic"
)

// keptSet is the merged pool's candidates left by the dedup, in pool
// order, as injections score them. Read-only once shared, but for its
// compact rows, built once on first use.
type keptSet struct {
	sums []*summary

	// prev is the set the same merged view gave before this one (nil:
	// none): its rows, when built, are this set's for the summaries both
	// hold. Read and dropped on the first use (so a chain of sets never
	// holds more than one other).
	prev atomic.Pointer[keptSet]

	uses  atomic.Int32 // injections asked for the rows so far
	once  sync.Once
	built atomic.Pointer[compactRows] // nil until built
}

// compactRows is what scoring reads of a kept set, by position in sums,
// in flat arrays, so a pass over thousands of candidates reads memory in
// order.
type compactRows struct {
	rows []keptRow
	// words holds the rows' word ids. Append-only and shared with the
	// rows derived from these (buildRows), which append beyond its length:
	// at most one set derives from another (keptSet.prev is taken once).
	words  []uint32
	unused int         // words no row refers to (rows dropped since the last full build)
	vocabs []*relVocab // the vocabs of the summaries' word ids
}

// keptRow is what scoring reads of one summary (no pointers: copying rows
// is a plain copy).
type keptRow struct {
	conf, maturity float64
	shown, helpful int
	off, end       uint32 // the summary's word ids (its relw): words[off:end]
	vocab          uint8  // index in vocabs
}

// compact returns the rows and vocabs of the set, or nil rows when it is
// scored without them:
//
//   - a set following another (the same view, its pool changed by a few
//     summaries, as after every injection record or addition) builds them
//     on first use, copying the rows of the summaries both hold when the
//     other's are built: a pool that changes between injections pays one
//     build, then a copy per change, instead of scoring through the
//     summaries every time (memory out of order);
//   - any other set builds them on its second use (a set injected once
//     is scored without them: building them costs a pass of its own).
//
// Rows are nil when a summary has no word ids (not read through a
// cachedPool) or the set spans too many vocabs.
func (ks *keptSet) compact() ([]keptRow, []uint32, []*relVocab) {
	n := ks.uses.Add(1)
	if c := ks.built.Load(); c != nil {
		return c.rows, c.words, c.vocabs
	}
	var from *keptSet
	if n == 1 {
		from = ks.prev.Swap(nil)
	}
	var base *compactRows
	if from != nil {
		base = from.built.Load()
	}
	if from == nil && n < 2 {
		return nil, nil, nil
	}
	ks.once.Do(func() {
		c := buildRows(ks.sums, from, base)
		if c != nil && c.unused > len(c.words)/2 {
			c = buildRows(ks.sums, nil, nil) // mostly words of dropped rows: start again
		}
		if c != nil {
			ks.built.Store(c)
		}
	})
	if c := ks.built.Load(); c != nil {
		return c.rows, c.words, c.vocabs
	}
	return nil, nil, nil
}

// buildRows builds the rows of sums, copying those of the summaries from
// (with rows base; nil: none) holds: both lists are in merged pool order
// (mergedOrder), so one walk finds them.
func buildRows(sums []*summary, from *keptSet, base *compactRows) *compactRows {
	c := &compactRows{rows: make([]keptRow, len(sums))}
	var old []*summary
	if base != nil {
		old = from.sums
		c.vocabs = append(c.vocabs, base.vocabs...)
		// The rows built here append their words after base's (a copied
		// row's summary is not read: memory out of order).
		c.words, c.unused = base.words, base.unused
	} else {
		n := 0
		for _, s := range sums {
			n += len(s.relw)
		}
		c.words = make([]uint32, 0, n)
	}
	j := 0
	drop := func(r *keptRow) { c.unused += int(r.end - r.off) }
	for i := 0; i < len(sums); i++ {
		s := sums[i]
		for j < len(old) && old[j] != s && mergedOrder(old[j], s) < 0 {
			drop(&base.rows[j])
			j++
		}
		if j < len(old) && old[j] == s {
			// A run of summaries both hold: one copy.
			n := 1
			for i+n < len(sums) && j+n < len(old) && old[j+n] == sums[i+n] {
				n++
			}
			copy(c.rows[i:i+n], base.rows[j:j+n])
			i, j = i+n-1, j+n
			continue
		}
		if s.vocab == nil {
			return nil
		}
		vi := -1
		for k, v := range c.vocabs {
			if v == s.vocab {
				vi = k
				break
			}
		}
		if vi < 0 {
			if len(c.vocabs) == 256 {
				return nil
			}
			vi = len(c.vocabs)
			c.vocabs = append(c.vocabs, s.vocab)
		}
		if len(c.words)+len(s.relw) > math.MaxUint32 {
			return nil
		}
		off := uint32(len(c.words))
		c.words = append(c.words, s.relw...)
		c.rows[i] = keptRow{conf: s.Confidence, maturity: maturity(s.Status), shown: s.Outcomes.Shown,
			helpful: s.Outcomes.Helpful, off: off, end: uint32(len(c.words)), vocab: uint8(vi)}
	}
	for ; j < len(old); j++ {
		drop(&base.rows[j])
	}
	return c
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
