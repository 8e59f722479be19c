package projector

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"
)

// sysEventID is the index of folded event ids: sys/id/<event id> → the
// stream sequence (uint64 BE) at which the event was folded.
// NB: must not change: it is part of the read-model format.
//
// INVARIANT: the index holds exactly the ids of the events folded into the
// read models, and is written in the batch that commits their fold; an
// event whose id it holds is never folded again, whatever its sequence
// (exactly once by event id, beyond JetStream's duplicate window).
const sysEventID = "sys/id/"

func eventIDKey(id string) string { return sysEventID + id }

// EventSeq returns the stream sequence at which the event with id was
// folded into the read models; ok is false when no event with that id was
// (not yet projected, dead-lettered, or never appended).
func (s *Store) EventSeq(id string) (seq uint64, ok bool, err error) {
	if id == "" {
		return 0, false, nil
	}
	return getSeq(s.db, eventIDKey(id))
}

// getSeq reads a uint64 BE value of r at key.
func getSeq(r pebble.Reader, key string) (uint64, bool, error) {
	v, closer, err := r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("%w: get %s: %v", ErrStorage, key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("%w: %s: bad length %d", ErrStorage, key, len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// foldedSeq returns the sequence at which an event with id was folded:
// by this folder since its last commit, or before (the store).
func (f *Folder) foldedSeq(id string) (uint64, bool, error) {
	if seq, ok := f.ids[id]; ok {
		return seq, true, nil
	}
	if f.writing != nil {
		if seq, ok := f.writing.ids[id]; ok {
			return seq, true, nil
		}
	}
	if f.idFilter != nil && !f.idFilter.TestString(id) {
		return 0, false, nil // never folded by this folder, the only one that wrote the index
	}
	return getSeq(f.store.db, eventIDKey(id))
}

// Duplicates is the number of events this folder passed over because an
// event with the same id was folded before (committed or not).
func (f *Folder) Duplicates() uint64 { return f.dups }

// idFilterSize is the number of ids a folder's filter is sized for (1 %
// false positives, 1.2 MB); beyond it false positives grow, answers do not
// change.
const idFilterSize = 1 << 20

// newIDFilter returns a filter of the ids this folder folds when the
// store's id index is empty (a new store, a rebuild, an audit from the
// start of the log), else nil. With it, an id the filter never saw was
// never folded: no read of the index (most ids are new, and a read of an
// absent key costs more as the store grows).
//
// INVARIANT: every id the folder records (f.ids) is added to the filter
// (noteID), so a filter answers "absent" only for ids the index lacks.
func newIDFilter(db *pebble.DB) (*bloom.BloomFilter, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(sysEventID), UpperBound: prefixEnd([]byte(sysEventID))})
	if err != nil {
		return nil, fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	defer it.Close()
	if it.First() {
		return nil, nil
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	return bloom.NewWithEstimates(idFilterSize, 0.01), nil
}

// noteID records that the event with id folds at seq (committed with the
// next batch).
func (f *Folder) noteID(id string, seq uint64) {
	f.ids[id] = seq
	if f.idFilter != nil {
		f.idFilter.AddString(id)
	}
}
