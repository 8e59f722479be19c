package crossloop

import "strings"

// A bound of the bigram Jaccard of task and pattern from the query terms
// the pattern holds, known from the postings before its scoring record is
// read: a task bigram is in the pattern's text only if each of its words
// is, and a word that is a query term is in the pattern's text exactly
// when the pattern has a posting of it (both come from SearchText's
// Words: the postings from its terms, the scoring record from its
// bigrams). A bigram holding a term the candidate lacks, or a term no
// pattern holds, is none of the candidate's; the others may be.

// queryTerms are the query's terms as Rank read them: listed (with
// postings; term i is the candidates' list i, termBit(i)) and absent (no
// pattern holds them: document frequency 0). The query's other words
// (stop words, over-long ones, terms held by more than half of a large
// registry) are not known to be held or not.
type queryTerms struct {
	listed []string
	absent []string
}

func (q *query) terms() queryTerms { return queryTerms{listed: q.names, absent: q.absent} }

// taskBigrams are the task's bigrams (Bigrams(task)) and, for each that
// some pattern may hold, the query terms (termBit) a pattern needs to hold
// it.
type taskBigrams struct {
	set  map[string]struct{}
	need []uint64
}

func newTaskBigrams(task string, qt queryTerms) taskBigrams {
	tb := taskBigrams{set: Bigrams(task)}
	bits := make(map[string]uint64, len(qt.listed))
	for i, t := range qt.listed {
		bits[t] = termBit(i)
	}
	absent := make(map[string]bool, len(qt.absent))
	for _, t := range qt.absent {
		absent[t] = true
	}
	for bg := range tb.set {
		var need uint64
		held := true
		for w := range strings.SplitSeq(bg, " ") { // one word (a one-word task) or two
			if absent[w] {
				held = false
				break
			}
			need |= bits[w] // 0: a word not known to be held or not
		}
		if held {
			tb.need = append(tb.need, need)
		}
	}
	return tb
}

// bound is an upper bound of the Jaccard of the task's bigrams and the nb
// bigrams of a pattern holding the query terms held: at most u of the
// task's bigrams are shared (those whose terms it holds all, and no more
// than either set), and the Jaccard of u shared, u/(|A|+|B|−u), grows
// with u (the same float division the exact Jaccard makes, of a larger
// numerator and a smaller denominator).
func (tb taskBigrams) bound(held uint64, nb int) float64 {
	u := 0
	for _, need := range tb.need {
		if need&^held == 0 {
			u++
		}
	}
	nt := len(tb.set)
	u = min(u, nt, nb)
	if nt+nb-u == 0 {
		return 1 // both empty: Jaccard's rule
	}
	return float64(u) / float64(nt+nb-u)
}
