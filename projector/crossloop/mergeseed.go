package crossloop

import (
	"fmt"
	"strings"
	"sync"

	"github.com/loredev/lore/projector"
)

// MergeKeys is the merge lists of every state of a store's log over a
// stretch of it: the lists present at its start (scanned) and every list
// a commit wrote after it, present or deleted (fed from the store's
// deltas, projector.Delta.Keys). Handed to the fold of an audit's copy of
// a state in that stretch (Model.SeedMergeFilter), it is a filter of the
// copy's merge lists, so the merge check reads only the lists that may be
// present instead of every merge key of a signature (most name no list,
// and the copy, a state no filter of the model was kept for, would read
// them all).
//
// INVARIANT: the filter holds every merge key present at From and every
// merge key written by a commit in (From, To]; so every merge list present
// in a state of the store at a sequence in [From, To]. Safe for concurrent
// use.
type MergeKeys struct {
	mu       sync.Mutex
	f        *keyFilter
	from, to uint64
}

// mergeKeysSpare is the room a MergeKeys filter keeps for the distinct
// keys fed after its scan (beyond the lists scanned), at 1 % false
// positives (≈ 4.8 MB of bits).
const mergeKeysSpare = 4 << 20

// NewMergeKeys scans the merge lists of r, a store's crossloop model at
// its checkpoint at (nothing commits to it meanwhile).
func NewMergeKeys(r projector.Reader, at uint64) (*MergeKeys, error) {
	ks, err := loadMergeKeySet(r)
	if err != nil {
		return nil, fmt.Errorf("merge keys: %w", err)
	}
	// added counts every key, the scanned ones included: the filter is
	// full (its false positives above 1 %) past its capacity.
	f := newKeyFilter(ks.n/2 + mergeKeysSpare/2)
	err = r.Scan([]byte(prefMerge), func(k, _ []byte) error {
		f.add(k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("merge keys: scan: %w", err)
	}
	return &MergeKeys{f: f, from: at, to: at}, nil
}

// storePrefMerge is where the model's merge lists lie among a store's
// keys (what a delta holds).
var storePrefMerge = projector.ModelKeyPrefix(ModelName) + prefMerge

// Feed adds the merge keys a delta over (from, to] wrote (keys: its keys
// under a prefix, deleted ones too: a list written and deleted
// within the delta was present in a state inside it). It reports false,
// adding nothing, when the delta does not start where the last one fed
// ended: a hole, whose writes are unknown.
func (mk *MergeKeys) Feed(from, to uint64, keys func(prefix string, fn func(key string))) bool {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	if from != mk.to || to < from {
		return false
	}
	keys(storePrefMerge, func(k string) {
		// added counts distinct keys (a list is rewritten at many commits).
		if !mk.f.bf.TestAndAdd([]byte(strings.TrimPrefix(k, projector.ModelKeyPrefix(ModelName)))) {
			mk.f.added++
		}
	})
	mk.to = to
	return true
}

// Covers reports whether the states at base and at (base <= at) lie in
// the stretch the keys cover.
func (mk *MergeKeys) Covers(base, at uint64) bool {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	return mk.from <= base && base <= at && at <= mk.to
}

// SeedMergeFilter gives the model's folds into the store r reads (the
// crossloop model of an audit's copy, at a state mk covers) a copy of
// mk's filter as the filter of that store's merge lists (drop nil: none
// given, mk being past its capacity). drop removes it from the model once
// the store is done with (the model keeps a few filters: an audit's would
// push out the live store's).
func (m *Model) SeedMergeFilter(r projector.Reader, mk *MergeKeys) (drop func(), err error) {
	ks, err := loadMergeKeySet(r)
	if err != nil {
		return nil, fmt.Errorf("seed merge filter: %w", err)
	}
	mk.mu.Lock()
	if mk.f.full() {
		// Past its capacity its false positives grow, and the fold would
		// build a filter of the copy's lists by a scan: none given.
		mk.mu.Unlock()
		return nil, nil
	}
	f := &keyFilter{bf: mk.f.bf.Copy(), capacity: mk.f.capacity, added: mk.f.added}
	mk.mu.Unlock()
	m.filters.put(ks, f)
	return func() { m.filters.drop(f) }, nil
}
