package crossloop

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
)

// The filter of merge keys present. A merge check looks up every merge
// key of a signature (up to 153 for a long one), and most of them name no
// list: each such read walks the store's memtables and levels, a cost that
// grows as the store deepens. The fold holds, per store state, a Bloom
// filter of the merge lists present, so an absent list is (almost always)
// known without a read.
//
// A filter is not tied to a store but to a set of merge keys: the store
// records the fingerprint of its set of merge lists (keyMergeKeys), which
// every change of the set updates in the same batch, and a filter is kept
// under the fingerprint of the set it holds every key of. An event takes
// the filter of its store's fingerprint, if the model holds one, and gives
// it back under the fingerprint the event leaves. Whatever store the model
// folds into (the live one, a rebuild, an audit's replay), and whatever
// batches are discarded after a filter was given back, a filter answers
// "absent" only for a key its set does not hold, so the store's does not
// either (barring a collision of 192-bit fingerprints).
//
// INVARIANT: a filter kept under fingerprint F holds every key of the set
// of merge lists whose fingerprint is F (it may hold more: keys are never
// removed from a Bloom filter).

// keyMergeKeys is the fingerprint of the set of merge lists present
// (mergeKeySet).
const keyMergeKeys = "ix/mk"

// mergeKeySet is the fingerprint of a set of merge list keys: their
// number and the sums (mod 2^64) of two hashes of each key. Adding and
// removing a key are O(1) and commute.
type mergeKeySet struct{ n, a, b uint64 }

func (s *mergeKeySet) add(k []byte) { s.n++; s.a += hash(string(k)); s.b += xxhash.Sum64(k) }
func (s *mergeKeySet) sub(k []byte) { s.n--; s.a -= hash(string(k)); s.b -= xxhash.Sum64(k) }

// loadMergeKeySet reads the fingerprint of the store's merge lists (zero:
// none).
func loadMergeKeySet(s getter) (mergeKeySet, error) {
	v, ok, err := s.Get([]byte(keyMergeKeys))
	if err != nil || !ok {
		return mergeKeySet{}, err
	}
	if len(v) != 24 {
		return mergeKeySet{}, fmt.Errorf("merge key set: corrupt (%d bytes)", len(v))
	}
	return mergeKeySet{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:])}, nil
}

func storeMergeKeySet(s Store, ks mergeKeySet) error {
	if ks == (mergeKeySet{}) {
		return s.Delete([]byte(keyMergeKeys))
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 24), ks.n)
	v = binary.BigEndian.AppendUint64(v, ks.a)
	return s.Set([]byte(keyMergeKeys), binary.BigEndian.AppendUint64(v, ks.b))
}

// keyFilter is a Bloom filter of merge keys, sized for capacity keys (at
// 1 % false positives); added counts the keys added since it was built.
type keyFilter struct {
	bf              *bloom.BloomFilter
	capacity, added uint64
}

func newKeyFilter(n uint64) *keyFilter {
	c := max(2*n, 1<<14)
	return &keyFilter{bf: bloom.NewWithEstimates(uint(c), 0.01), capacity: c}
}

func (f *keyFilter) add(k []byte)          { f.bf.Add(k); f.added++ }
func (f *keyFilter) mayHold(k []byte) bool { return f.bf.Test(k) }

// full: the filter holds more keys than it was sized for (its false
// positives grow): it is built again from the store.
func (f *keyFilter) full() bool { return f.added > f.capacity }

// filterPool holds a model's filters by fingerprint. Safe for concurrent
// use (a model folds into several stores at once: the live one, audits).
type filterPool struct {
	mu      sync.Mutex
	filters []pooled // the most recently given back last
	// misses counts the merge-list reads made without a filter since the
	// last build: a filter is built once they reach a share of the keys
	// to scan (build), so a short replay never pays for a scan.
	misses uint64
}

type pooled struct {
	ks mergeKeySet
	f  *keyFilter
}

// poolSize bounds the filters kept (the live store's, a rebuild's, an
// audit's or two).
const poolSize = 4

// take removes and returns the filter kept under ks (nil: none).
func (p *filterPool) take(ks mergeKeySet) *keyFilter {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.filters) - 1; i >= 0; i-- {
		if p.filters[i].ks == ks {
			f := p.filters[i].f
			p.filters = append(p.filters[:i], p.filters[i+1:]...)
			return f
		}
	}
	return nil
}

// put keeps f under ks (the oldest filter is dropped beyond poolSize).
func (p *filterPool) put(ks mergeKeySet, f *keyFilter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.filters {
		if p.filters[i].ks == ks {
			p.filters = append(p.filters[:i], p.filters[i+1:]...)
			break
		}
	}
	p.filters = append(p.filters, pooled{ks, f})
	if len(p.filters) > poolSize {
		p.filters = append(p.filters[:0], p.filters[1:]...)
	}
}

// drop removes f wherever it is kept (a fold may have given it back
// under another fingerprint).
func (p *filterPool) drop(f *keyFilter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.filters = slices.DeleteFunc(p.filters, func(x pooled) bool { return x.f == f })
}

// miss counts reads made without a filter and reports whether a filter
// of a set of n keys is worth building now: once the reads since the last
// build reach n/4 (a scan reads a key several times faster than a point
// read of an absent one).
func (p *filterPool) miss(reads, n uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.misses += reads
	if p.misses >= n/4 {
		p.misses = 0
		return true
	}
	return false
}

type scanner interface {
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// buildFilter scans the store's merge lists into a new filter; ok is
// false when the lists scanned are not the set ks (the record is not the
// store's: no filter is used).
func buildFilter(s scanner, ks mergeKeySet) (*keyFilter, bool, error) {
	f := newKeyFilter(ks.n)
	var got mergeKeySet
	err := s.Scan([]byte(prefMerge), func(k, _ []byte) error {
		f.add(k)
		got.add(k)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("scan merge lists: %w", err)
	}
	f.added = 0
	return f, got == ks, nil
}

// mergeFilterState is an event's side of the filter (in its memo): the
// fingerprint of the store's merge lists as the event leaves them, and
// the filter it took.
type mergeFilterState struct {
	pool   *filterPool // the model's (nil: no filter)
	tried  bool        // the filter was looked for
	ks     mergeKeySet // as the event leaves the set (loaded: ksOK)
	ksOK   bool
	from   mergeKeySet // the set the event found (and f holds)
	f      *keyFilter
	reads  uint64 // merge-list reads made without a filter
	closed bool
}

// acquire looks for the filter of the store's set of merge lists, or
// builds one (see filterPool.miss), at the event's first merge-list read.
func (m *memo) acquire(s getter) error {
	fs := &m.filter
	fs.tried = true
	if err := m.loadKeySet(s); err != nil {
		return err
	}
	fs.from = fs.ks
	if fs.f = fs.pool.take(fs.ks); fs.f != nil && !fs.f.full() {
		return nil
	}
	sc, ok := s.(scanner)
	if !ok || (fs.f == nil && !fs.pool.miss(0, fs.ks.n)) {
		fs.f = nil
		return nil
	}
	f, ok, err := buildFilter(sc, fs.ks)
	if err != nil || !ok {
		fs.f = nil
		return err
	}
	fs.f = f
	return nil
}

func (m *memo) loadKeySet(s getter) error {
	if m.filter.ksOK {
		return nil
	}
	ks, err := loadMergeKeySet(s)
	if err != nil {
		return err
	}
	m.filter.ks, m.filter.ksOK = ks, true
	return nil
}

// mayHold reports whether the merge list at k may be present (false: it
// is not, no read needed). m must not be nil.
func (m *memo) mayHold(s getter, k []byte) (bool, error) {
	fs := &m.filter
	if fs.pool == nil {
		return true, nil
	}
	if !fs.tried {
		if err := m.acquire(s); err != nil {
			return false, err
		}
	}
	if fs.f == nil {
		fs.reads++
		return true, nil
	}
	return fs.f.mayHold(k), nil
}

// listChanged records that the list at k appeared (now) or disappeared
// in the store, in the fingerprint and the filter.
func (m *memo) listChanged(s getter, k []byte, now bool) error {
	if err := m.loadKeySet(s); err != nil {
		return err
	}
	if now {
		m.filter.ks.add(k)
		if m.filter.f != nil {
			m.filter.f.add(k)
		}
	} else {
		m.filter.ks.sub(k)
	}
	return nil
}

// release gives the event's filter back to the pool: under the set the
// event leaves when it folded (ok), else under the set it found (a filter
// only gains keys, so it still holds that set). Reads made without a
// filter are counted towards building one.
func (m *memo) release(ok bool) {
	fs := &m.filter
	if fs.closed || fs.pool == nil {
		return
	}
	fs.closed = true
	if fs.f == nil {
		if fs.reads > 0 {
			fs.pool.miss(fs.reads, ^uint64(0))
		}
		return
	}
	if ok {
		fs.pool.put(fs.ks, fs.f)
	} else {
		fs.pool.put(fs.from, fs.f)
	}
}
