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
// by this folder since its last commit, or before (the store); seq is the
// sequence of the event asking (SetAuditIDs).
func (f *Folder) foldedSeq(id string, seq uint64) (uint64, bool, error) {
	if f.auditIDs != nil {
		first, ok := f.auditIDs.folded(id, seq)
		return first, ok, nil
	}
	if first, ok := f.ids[id]; ok {
		return first, true, nil
	}
	if f.writing != nil {
		if first, ok := f.writing.ids[id]; ok {
			return first, true, nil
		}
	}
	filter := f.store.ids.Load()
	if filter != nil && !filter.mayHold(id) {
		return 0, false, nil // the filter holds every id of the index
	}
	first, ok, err := getSeq(f.store.db, eventIDKey(id))
	if err != nil || ok || filter != nil {
		return first, ok, err
	}
	return 0, false, f.missedID()
}

// missedID counts a read of the index for an id it lacks, made without a
// filter, and builds the store's filter by a scan of the index once such
// reads reach a quarter of the ids it may hold (a scan reads a key several
// times faster than a point read of an absent one, so a short replay never
// pays for one and a long one pays for it once).
func (f *Folder) missedID() error {
	n := f.committed // the index holds at most an id per event folded
	if f.store.idMisses.Add(1) < max(n/4, 1) {
		return nil
	}
	filter, err := scanIDFilter(f.store.db, n)
	if err != nil {
		return err
	}
	// What the scan may not see: the batch being written, and this
	// folder's ids since (noteID adds to the filter once it is set).
	if f.writing != nil {
		for id := range f.writing.ids {
			filter.add(id)
		}
	}
	for id := range f.ids {
		filter.add(id)
	}
	f.store.ids.Store(filter)
	return nil
}

// Duplicates is the number of events this folder passed over because an
// event with the same id was folded before (committed or not).
func (f *Folder) Duplicates() uint64 { return f.dups }

// DuplicateOf is the sequence of the event folded with the id of the last
// event this folder passed over as a duplicate (0: none yet).
func (f *Folder) DuplicateOf() uint64 { return f.dupOf }

// useIDFilter gives the store an empty id filter when it has none and its
// index is empty (a new store, a rebuild, an audit from the start of the
// log): every id it will hold is then one a folder records.
func (s *Store) useIDFilter() error {
	if s.ids.Load() != nil {
		return nil
	}
	empty, err := indexEmpty(s.db)
	if err != nil || !empty {
		return err
	}
	s.ids.Store(newIDFilter(0))
	return nil
}

// noteID records that the event with id folds at seq (committed with the
// next batch).
//
// INVARIANT: every id the folder records (f.ids) is added to the store's
// filter, if it has one, before the commit that writes it.
func (f *Folder) noteID(id string, seq uint64) {
	f.ids[id] = seq
	if f.auditIDs != nil {
		f.auditIDs.own[id] = seq
	}
	if filter := f.store.ids.Load(); filter != nil {
		filter.add(id)
	}
}

// forgetID takes back the id the event at seq noted (Settle folds the
// events since the last commit again).
func (f *Folder) forgetID(id string, seq uint64) {
	delete(f.ids, id)
	if f.auditIDs != nil && f.auditIDs.own[id] == seq {
		delete(f.auditIDs.own, id)
	}
}
