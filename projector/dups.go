package projector

import (
	"encoding/binary"
	"fmt"
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

func dupKey(seq uint64) string { return seqKey(sysDup, seq) }

// noteDup records that the event at seq was passed over as a duplicate of
// the event at first; unnoteDup takes it back (Settle decided again).
func (f *Folder) noteDup(seq, first uint64) { f.sys.set(dupKey(seq), overlayVal{v: u64(first)}) }
func (f *Folder) unnoteDup(seq uint64)      { f.sys.remove(dupKey(seq)) }

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
	a := &AuditIDs{from: from, dups: map[uint64]uint64{}, own: map[string]uint64{}}
	covered, err := s.scanSeqIndex(sysDupFrom, sysDup, from, upTo, func(seq uint64, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: duplicate index: bad value at %d", ErrStorage, seq)
		}
		a.dups[seq] = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil || !covered {
		return nil, err
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
