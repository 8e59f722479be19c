package knowledge

import (
	"sync"
	"sync/atomic"
)

// keptSet is the merged pool's candidates left by the dedup, in pool
// order, as injections score them. Read-only once shared, but for its
// compact rows, built once on first use.
type keptSet struct {
	sums []*summary

	uses   atomic.Int32 // injections asked for the rows so far
	once   sync.Once
	rows   []keptRow   // by position in sums; nil when not built
	words  []uint32    // the relw of every summary, one after the other
	vocabs []*relVocab // the vocabs of the summaries' word ids
}

// keptRow is what scoring reads of one summary, in one flat array, so a
// pass over thousands of candidates reads memory in order.
type keptRow struct {
	conf, maturity float64
	shown, helpful int
	off, end       uint32 // the summary's word ids: words[off:end]
	vocab          uint8  // index in vocabs
}

// compact returns the rows, words and vocabs of the set, building them on
// the second use (a set injected once, as after every change of a pool,
// is scored without them: building them costs a pass of its own); rows is
// nil until then, or when a summary has no word ids (not read through a
// cachedPool) or the set spans too many vocabs.
func (ks *keptSet) compact() ([]keptRow, []uint32, []*relVocab) {
	if ks.uses.Add(1) < 2 {
		return nil, nil, nil
	}
	ks.once.Do(func() {
		rows := make([]keptRow, len(ks.sums))
		n := 0
		for _, s := range ks.sums {
			n += len(s.relw)
		}
		words := make([]uint32, 0, n)
		var vocabs []*relVocab
		for i, s := range ks.sums {
			if s.vocab == nil {
				return
			}
			vi := -1
			for j, v := range vocabs {
				if v == s.vocab {
					vi = j
					break
				}
			}
			if vi < 0 {
				if len(vocabs) == 256 {
					return
				}
				vi = len(vocabs)
				vocabs = append(vocabs, s.vocab)
			}
			off := uint32(len(words))
			words = append(words, s.relw...)
			rows[i] = keptRow{conf: s.Confidence, maturity: maturity(s.Status), shown: s.Outcomes.Shown,
				helpful: s.Outcomes.Helpful, off: off, end: uint32(len(words)), vocab: uint8(vi)}
		}
		ks.rows, ks.words, ks.vocabs = rows, words, vocabs
	})
	return ks.rows, ks.words, ks.vocabs
}
