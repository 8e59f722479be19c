package projector

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The poison index names the events a model refused while every model
// folded them. An event one model refuses leaves no trace in any model
// (Folder.foldInline takes its writes out of every lane) and its id is not
// recorded, so the state of one model depends on what the others refused:
// a model folded alone over a part of the log (an audit that reads one
// model) reaches the state the fold of every model reaches only if it
// passes over exactly these events (ReplayOptions.Poisoned).
//
// Keys (sys/, outside every model):
//
//	sys/poison-from         uint64 BE: the first sequence the index covers
//	                        (1: the whole log); an older store gets it at cp+1.
//	sys/poisoned/<seq BE8>  the refusal's reason, text.
//
// INVARIANT: written in the batch that commits the event it names, so the
// index of a store covers exactly the events at or below its checkpoint,
// from sys/poison/from on. Events refused for what every fold refuses alike
// (an undecodable envelope or payload) are not in it: a model folded alone
// refuses them too.
const (
	sysPoisonFrom = "sys/poison-from"
	sysPoison     = "sys/poisoned/"
)

func poisonKey(seq uint64) string { return seqKey(sysPoison, seq) }

// seqKey is the key of seq in an index of sequences under prefix (the
// poison and duplicate indexes): prefix + seq, uint64 BE.
func seqKey(prefix string, seq uint64) string {
	return prefix + string(binary.BigEndian.AppendUint64(nil, seq))
}

// notePoison records that the event at seq was refused by a model (see the
// poison index).
func (f *Folder) notePoison(seq uint64, reason error) {
	f.sys.set(poisonKey(seq), overlayVal{v: []byte(reason.Error())})
}

// noteIndexFrom marks, on a store without the index whose coverage starts
// at the sequence under fromKey (the poison index, the duplicate index),
// that the index covers the events from the folder's next one on.
func (f *Folder) noteIndexFrom(fromKey string) error {
	_, ok, err := getSeq(f.store.db, fromKey)
	if err != nil || ok {
		return err
	}
	f.sys.set(fromKey, overlayVal{v: u64(f.committed + 1)})
	return nil
}

// Poisoned returns the sequences in (after, upTo] whose events a model
// refused when every model folded them; covered is false when the store's
// poison index does not cover all of (after, upTo] (a store folded by an
// older lore, or upTo beyond its checkpoint), and the set then says
// nothing.
func (s *Store) Poisoned(after, upTo uint64) (set map[uint64]bool, covered bool, err error) {
	set = map[uint64]bool{}
	covered, err = s.scanSeqIndex(sysPoisonFrom, sysPoison, after, upTo, func(seq uint64, _ []byte) error {
		set[seq] = true
		return nil
	})
	if err != nil || !covered {
		return nil, false, err
	}
	return set, true, nil
}

// scanSeqIndex calls fn for each entry of the index under prefix (keys
// prefix + seq BE8) in (after, upTo], from one consistent view of s.
// covered is false, and fn not called, when the index (its coverage
// starting at the sequence under fromKey) does not cover all of
// (after, upTo]: a store folded by an older lore, or upTo beyond its
// checkpoint.
func (s *Store) scanSeqIndex(fromKey, prefix string, after, upTo uint64, fn func(seq uint64, v []byte) error) (covered bool, err error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	cp, _, err := getSeq(snap, sysCheckpoint)
	if err != nil {
		return false, err
	}
	from, ok, err := getSeq(snap, fromKey)
	if err != nil || !ok || from > after+1 || upTo > cp {
		return false, err
	}
	if upTo <= after {
		return true, nil
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte(seqKey(prefix, after+1)), UpperBound: []byte(seqKey(prefix, upTo+1))})
	if err != nil {
		return false, fmt.Errorf("%w: index %s: %v", ErrStorage, prefix, err)
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(prefix):]
		if len(k) != 8 {
			it.Close()
			return false, fmt.Errorf("%w: index %s: bad key %q", ErrStorage, prefix, it.Key())
		}
		if err := fn(binary.BigEndian.Uint64(k), it.Value()); err != nil {
			it.Close()
			return false, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("%w: index %s: %v", ErrStorage, prefix, err)
	}
	return true, nil
}
