package projector

import (
	"encoding/binary"
	"errors"
	"fmt"

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
	return getSeq(f.store.db, eventIDKey(id))
}

// Duplicates is the number of events this folder passed over because an
// event with the same id was folded before (committed or not).
func (f *Folder) Duplicates() uint64 { return f.dups }
