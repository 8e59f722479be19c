package projector

import (
	"fmt"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"
)

// idFilter is a filter of the ids in a store's event id index (sysEventID),
// kept with the Store rather than with one Folder: every folder into the
// store — each window of a replay, the live runtime's after its loop
// restarts — reads the index only for the ids the filter may hold. Most
// ids are new, and a read of an absent key costs more as the store grows.
//
// INVARIANT: the filter holds every id the store's index holds (it may
// hold more: ids of events rolled back, of a batch not yet written).
// Between resets the index only gains ids, and every id a folder records
// is added here (Folder.noteID) before the commit that writes it; a table
// ingested (ApplyDelta) drops the filter.
//
// A scalable Bloom filter (Almeida et al., 2007): a chain of filters, each
// with twice the capacity of the one before and half its false-positive
// rate, so it never fills and never needs the store again; false positives
// stay below idFilterFP in all. Safe for concurrent use.
type idFilter struct {
	mu    sync.Mutex
	parts []idPart
}

// idPart is one filter of the chain, sized for capacity ids at rate fp.
type idPart struct {
	bf              *bloom.BloomFilter
	capacity, added uint64
	fp              float64
}

const (
	// idFilterFP bounds the false positives of the whole chain: the first
	// filter takes half of it, each next one half of the one before.
	idFilterFP = 0.01
	// idFilterFirst is the capacity of the first filter of a store whose
	// index was empty (≈ 300 KB of bits).
	idFilterFirst = 1 << 18
)

// newIDFilter returns an empty filter for about n ids.
func newIDFilter(n uint64) *idFilter { return newIDChain(max(n, idFilterFirst)) }

// newIDChain returns an empty filter whose first part holds c ids.
func newIDChain(c uint64) *idFilter {
	return &idFilter{parts: []idPart{{bf: bloom.NewWithEstimates(uint(c), idFilterFP/2), capacity: c, fp: idFilterFP / 2}}}
}

func (f *idFilter) add(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &f.parts[len(f.parts)-1]
	if p.added >= p.capacity {
		c, fp := 2*p.capacity, p.fp/2
		f.parts = append(f.parts, idPart{bf: bloom.NewWithEstimates(uint(c), fp), capacity: c, fp: fp})
		p = &f.parts[len(f.parts)-1]
	}
	p.bf.AddString(id)
	p.added++
}

// mayHold reports whether id may be in the index (false: it is not).
func (f *idFilter) mayHold(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.parts {
		if f.parts[i].bf.TestString(id) {
			return true
		}
	}
	return false
}

// scanIDFilter builds a filter of every id in db's index, sized for twice
// n ids.
func scanIDFilter(db *pebble.DB, n uint64) (*idFilter, error) {
	it, err := idIter(db)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	f := newIDFilter(2 * n)
	for ok := it.First(); ok; ok = it.Next() {
		f.add(string(it.Key()[len(sysEventID):]))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("%w: id index: %v", ErrStorage, err)
	}
	return f, nil
}

// indexEmpty reports whether db's id index holds no id.
func indexEmpty(db *pebble.DB) (bool, error) {
	it, err := idIter(db)
	if err != nil {
		return false, err
	}
	defer it.Close()
	if it.First() {
		return false, nil
	}
	if err := it.Error(); err != nil {
		return false, fmt.Errorf("%w: id index: %v", ErrStorage, err)
	}
	return true, nil
}

// idIter iterates over db's id index.
func idIter(db *pebble.DB) (*pebble.Iterator, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(sysEventID), UpperBound: prefixEnd([]byte(sysEventID))})
	if err != nil {
		return nil, fmt.Errorf("%w: id index: %v", ErrStorage, err)
	}
	return it, nil
}
