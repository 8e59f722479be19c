package projector

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The duplicate index names the events a fold passed over as duplicates
// (their id was in the id index), each with the sequence of the event
// that holds the id. It spares an audit the reads of its copy's id index:
// a copy of the live store's state at P is cold, and its fold read the
// index once per event, almost always for an id it does not hold.
//
// Keys (sys/, outside every model):
//
//	sys/dup-from        uint64 BE: the first sequence the index covers
//	                    (1: the whole log); an older store gets it at cp+1.
//	sys/dup/<seq BE8>   uint64 BE: the sequence whose event holds the id.
//
// INVARIANT: written in the batch that commits the event it names (as the
// poison index), so the index of a store covers exactly the events at or
// below its checkpoint, from sys/dup-from on.
const (
	sysDupFrom = "sys/dup-from"
	sysDup     = "sys/dup/"
)

func dupKey(seq uint64) string { return sysDup + string(binary.BigEndian.AppendUint64(nil, seq)) }

// noteDup records that the event at seq was passed over as a duplicate of
// the event at first; unnoteDup takes it back (Settle decided again).
func (f *Folder) noteDup(seq, first uint64) { f.sys.set(dupKey(seq), overlayVal{v: u64(first)}) }
func (f *Folder) unnoteDup(seq uint64)      { f.sys.remove(dupKey(seq)) }

// noteDupFrom marks, on a store without a duplicate index, that the index
// covers the events from the folder's next one on.
func (f *Folder) noteDupFrom() error {
	_, ok, err := getSeq(f.store.db, sysDupFrom)
	if err != nil || ok {
		return err
	}
	f.sys.set(sysDupFrom, overlayVal{v: u64(f.committed + 1)})
	return nil
}

// AuditIDs answers the id look-ups of the folds of one audit on a copy of
// a store's state at a sequence P (from), without reading the copy's id
// index. The copy's index holds exactly the ids the store's index maps to
// a sequence <= P. So an event at seq > P with id x is a duplicate in the
// audit's fold iff the audit noted x itself (own), or the store's fold
// passed that event over as a duplicate of an event at or below P (the
// duplicate index): if the store held x at some s <= P, it held it at seq;
// if it passed seq over for an event at s <= P, the copy holds x.
//
// One AuditIDs serves every folder of one audit (FoldRanges' ranges), on
// one goroutine at a time.
type AuditIDs struct {
	from uint64
	dups map[uint64]uint64 // the store's duplicates after from: seq → the seq holding the id
	own  map[string]uint64 // the ids the audit's folds noted, with their seqs
}

// AuditIDs returns the look-ups of an audit that folds events in
// (from, upTo] on a copy of s's state at from; nil when s's duplicate
// index does not cover them (a store folded by an older lore, or upTo
// beyond its checkpoint): the folds then read the copy's index.
func (s *Store) AuditIDs(from, upTo uint64) (*AuditIDs, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	cp, _, err := getSeq(snap, sysCheckpoint)
	if err != nil {
		return nil, err
	}
	covers, ok, err := getSeq(snap, sysDupFrom)
	if err != nil || !ok || covers > from+1 || upTo > cp {
		return nil, err
	}
	a := &AuditIDs{from: from, dups: map[uint64]uint64{}, own: map[string]uint64{}}
	if upTo <= from {
		return a, nil
	}
	it, err := snap.NewIter(&pebble.IterOptions{
		LowerBound: []byte(dupKey(from + 1)),
		UpperBound: []byte(dupKey(upTo + 1)),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: duplicate index: %v", ErrStorage, err)
	}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key()[len(sysDup):], it.Value()
		if len(k) != 8 || len(v) != 8 {
			it.Close()
			return nil, fmt.Errorf("%w: duplicate index: bad entry %q", ErrStorage, it.Key())
		}
		a.dups[binary.BigEndian.Uint64(k)] = binary.BigEndian.Uint64(v)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("%w: duplicate index: %v", ErrStorage, err)
	}
	return a, nil
}

// folded is Folder.foldedSeq for the event at seq with id.
func (a *AuditIDs) folded(id string, seq uint64) (uint64, bool) {
	if s, ok := a.own[id]; ok {
		return s, true
	}
	if s, ok := a.dups[seq]; ok && s <= a.from {
		return s, true
	}
	return 0, false
}

// SetAuditIDs makes the folder answer its id look-ups with a (nil: with
// the store's id index). Set it before the first Fold.
func (f *Folder) SetAuditIDs(a *AuditIDs) { f.auditIDs = a }
