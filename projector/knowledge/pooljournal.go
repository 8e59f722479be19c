package knowledge

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The pool journal: the recent changes of every pool's summaries, by the
// version each produced, so that a reader holding a pool at one version
// reaches a later one by applying the changes in between (a few
// summaries) instead of reading and decoding the whole pool again.
//
// A step is recorded under the version it produced, v' = H(v ‖ change)
// (bumpPoolVersion): the record is a fact about versions, true in every
// store the model folds or serves, whether or not the fold's batch is
// committed (a version that never reaches a store is never asked for).

// poolStep is one change of a pool's summaries: the version before, the
// summary set (setKey "" for none) and the summary key deleted ("" for
// none).
type poolStep struct {
	prev     string
	setKey   string
	setValue []byte
	deleted  string
}

// poolJournal is a bounded map of steps by the version they produced.
// Safe for concurrent use.
type poolJournal struct {
	mu    sync.Mutex
	steps map[string]poolStep // guarded by mu
	order []string            // versions in recording order, a ring; guarded by mu
	next  int                 // the ring's oldest slot once full; guarded by mu
}

// journalMax bounds the steps kept (each holds one encoded summary).
const journalMax = 4096

// maxReplay bounds the steps a reader applies instead of reading the pool.
const maxReplay = 256

// record keeps step under version v. A nil journal records nothing.
func (j *poolJournal) record(v string, step poolStep) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.steps == nil {
		j.steps = make(map[string]poolStep, journalMax)
	}
	if _, ok := j.steps[v]; ok {
		return
	}
	if len(j.order) < journalMax {
		j.order = append(j.order, v)
	} else {
		delete(j.steps, j.order[j.next])
		j.order[j.next] = v
		j.next = (j.next + 1) % journalMax
	}
	j.steps[v] = step
}

// path returns the steps leading from version from to version to, oldest
// first, or false when the journal does not hold all of them (or more
// than maxReplay would be needed).
func (j *poolJournal) path(from, to string) ([]poolStep, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []poolStep
	for v := to; v != from; {
		st, ok := j.steps[v]
		if !ok || len(out) == maxReplay {
			return nil, false
		}
		out = append(out, st)
		v = st.prev
	}
	slices.Reverse(out)
	return out, true
}

// replay returns the pool of summary scope scope at version to: p (at an
// earlier version) with steps applied. p is not changed; unchanged
// summaries are shared with it.
func replay(p *cachedPool, scope, to string, steps []poolStep) (*cachedPool, error) {
	active := pfxSum + scope + "a/"
	sums := slices.Clone(p.sums)
	var fresh []*summary
	// bytes follows p.bytes (memCost of every summary) through the steps,
	// so storing the pool does not add up every summary again.
	bytes := p.bytes
	drop := func(o *summary) {
		if i := slices.Index(fresh, o); i >= 0 {
			fresh = slices.Delete(fresh, i, i+1) // added by an earlier step: not counted yet
		} else {
			bytes -= o.memCost()
		}
	}
	for _, st := range steps {
		if strings.HasPrefix(st.deleted, active) {
			if i, ok := findSummary(sums, st.deleted[len(active):]); ok {
				drop(sums[i])
				sums = slices.Delete(sums, i, i+1)
			}
		}
		if strings.HasPrefix(st.setKey, active) {
			s, err := decodeSummary(st.setValue)
			if err != nil {
				return nil, fmt.Errorf("%w: %s", err, st.setKey)
			}
			i, ok := findSummary(sums, st.setKey[len(active):])
			if ok {
				drop(sums[i])
				sums[i] = s
			} else {
				sums = slices.Insert(sums, i, s)
			}
			fresh = append(fresh, s)
		}
	}
	p.vocab.index(fresh)
	for _, s := range fresh {
		bytes += s.memCost() // with its word ids
	}
	p.mu.Lock()
	p.from = nil // one step of history is enough to derive an index
	p.mu.Unlock()
	return &cachedPool{version: to, sums: sums, vocab: p.vocab, from: p, bytes: bytes}, nil
}

// findSummary is the position of the summary with key suffix rest
// ("<seq hex>/<id>") in sums, in (CreatedSeq, id) order, and whether it
// is there.
func findSummary(sums []*summary, rest string) (int, bool) {
	hex, id, _ := strings.Cut(rest, "/")
	seq, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		// Not a key saveEntry writes; sorts by the text of the key.
		return slices.BinarySearchFunc(sums, rest, func(s *summary, rest string) int {
			return strings.Compare(fmt.Sprintf("%016x/%s", s.CreatedSeq, s.ID), rest)
		})
	}
	return slices.BinarySearchFunc(sums, seq, func(s *summary, seq uint64) int {
		if c := cmp.Compare(s.CreatedSeq, seq); c != 0 {
			return c
		}
		return strings.Compare(s.ID, id)
	})
}
