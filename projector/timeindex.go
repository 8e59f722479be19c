package projector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The time index lets an audit "as of a time" start from a checkpoint of the
// read model and fold only the events after it whose time is early enough.
// Event times may be backfilled, so the state as of a time is not a prefix
// of the log: an audit needs, for a checkpoint, the latest event time it
// folded, and, for the log after it, where events of early times lie.
//
// Keys (sys/, outside every model: the digest does not see them):
//
//	sys/audit/from      uint64 BE: the first sequence the index covers (1:
//	                    the whole log); an older store gets it at cp+1.
//	sys/audit/max       int64 BE unix ns: the latest time of every event at
//	                    or below the checkpoint (from 1 on).
//	sys/audit/blk/<b>   int64 BE unix ns: the earliest time of the events of
//	                    block b (sequences b<<AuditBlockShift...) folded.
//
// INVARIANT: written in the batch that commits the events they describe, so
// the index of a store (or of a checkpoint of it) covers exactly the events
// at or below its checkpoint, from sys/audit/from on. Every event the folder
// is handed counts, duplicates and poison included: an audit replay up to a
// checkpoint whose latest time is <= T sees the same events as the live fold.
const (
	sysAuditFrom = "sys/audit/from"
	sysAuditMax  = "sys/audit/max"
	sysAuditBlk  = "sys/audit/blk/"
	// AuditBlockShift sizes the index's blocks: 256 sequences.
	AuditBlockShift = 8
)

func auditBlkKey(b uint64) string {
	return sysAuditBlk + string(binary.BigEndian.AppendUint64(nil, b))
}

func i64(v int64) []byte { return u64(uint64(v)) }

// timeIndex is a folder's side of the time index.
type timeIndex struct {
	loaded bool
	max    int64
	hasMax bool
	blk    uint64 // block whose minimum is in blkMin
	blkMin int64
	hasBlk bool
}

// noteTime records the time of the event at seq (see the index invariant).
func (f *Folder) noteTime(seq uint64, t time.Time) error {
	x := &f.times
	if !x.loaded {
		// The poison and duplicate indexes start where the time
		// index is first loaded by a folder: at its first event.
		if err := f.noteIndexFrom(sysPoisonFrom); err != nil {
			return err
		}
		if err := f.noteIndexFrom(sysDupFrom); err != nil {
			return err
		}
		from, ok, err := getSeq(f.store.db, sysAuditFrom)
		if err != nil {
			return err
		}
		if !ok {
			// A store folded before the index existed covers from here on.
			from = f.committed + 1
			f.sys.set(sysAuditFrom, overlayVal{v: u64(from)})
		}
		m, ok, err := getSeq(f.store.db, sysAuditMax)
		if err != nil {
			return err
		}
		x.max, x.hasMax, x.loaded = int64(m), ok, true
	}
	ns := t.UnixNano()
	if !x.hasMax || ns > x.max {
		x.max, x.hasMax = ns, true
		f.sys.set(sysAuditMax, overlayVal{v: i64(ns)})
	}
	b := seq >> AuditBlockShift
	if !x.hasBlk || b != x.blk {
		m, ok, err := getSeq(f.store.db, auditBlkKey(b))
		if err != nil {
			return err
		}
		if f.writing != nil {
			if v, staged := f.writing.sys.get(auditBlkKey(b)); staged {
				m, ok = binary.BigEndian.Uint64(v.v), true
			}
		}
		if v, staged := f.sys.get(auditBlkKey(b)); staged {
			m, ok = binary.BigEndian.Uint64(v.v), true
		}
		x.blk, x.blkMin, x.hasBlk = b, int64(m), ok
		if !ok {
			x.blkMin = ns
			x.hasBlk = true
			f.sys.set(auditBlkKey(b), overlayVal{v: i64(ns)})
			return nil
		}
	}
	if ns < x.blkMin {
		x.blkMin = ns
		f.sys.set(auditBlkKey(b), overlayVal{v: i64(ns)})
	}
	return nil
}

// AuditMark is what an audit needs to know of a store (or a checkpoint of
// it): the sequence it holds and the latest event time folded up to it.
type AuditMark struct {
	Seq uint64 `json:"seq"`
	// MaxTime is the latest event time at or below Seq; Complete is false
	// when the index does not cover the whole log (a store folded by an
	// older lore), and MaxTime then says nothing.
	MaxTime  time.Time `json:"max_time"`
	Complete bool      `json:"complete"`
	Format   string    `json:"format"`
}

// UsableFor reports whether the state at this mark is the state of an
// audit at atSeq (0: any) as of asOf (nil: no time bound): every event it
// folded is at or below atSeq and no later than asOf.
func (m AuditMark) UsableFor(asOf *time.Time, atSeq uint64) bool {
	if atSeq > 0 && m.Seq > atSeq {
		return false
	}
	if asOf == nil || m.Seq == 0 {
		return true
	}
	return m.Complete && !m.MaxTime.After(*asOf)
}

// AuditMark reads the store's mark.
func (s *Store) AuditMark() (AuditMark, error) { return auditMark(s.db) }

// auditMark reads the mark of the store r reads (the DB or a snapshot).
func auditMark(r pebble.Reader) (AuditMark, error) {
	var m AuditMark
	var err error
	if m.Seq, _, err = getSeq(r, sysCheckpoint); err != nil {
		return m, err
	}
	if m.Format, err = storedVersion(r); err != nil {
		return m, err
	}
	from, okFrom, err := getSeq(r, sysAuditFrom)
	if err != nil {
		return m, err
	}
	mx, okMax, err := getSeq(r, sysAuditMax)
	if err != nil {
		return m, err
	}
	m.Complete = m.Seq == 0 || (okFrom && from <= 1 && okMax)
	if okMax {
		m.MaxTime = time.Unix(0, int64(mx)).UTC()
	}
	return m, nil
}

// SeqRange is a closed range of stream sequences.
type SeqRange struct{ From, To uint64 }

// AuditRanges returns the ranges of (after, upTo] an audit as of asOf (nil:
// no time bound) must read from the log, in order: the whole interval
// without a time bound; with one, every block of the index whose earliest
// time is <= asOf, every block the index does not cover (before its from,
// after its checkpoint) and nothing else. It reads one consistent view of s.
func (s *Store) AuditRanges(after, upTo uint64, asOf *time.Time) ([]SeqRange, error) {
	if upTo <= after {
		return nil, nil
	}
	if asOf == nil {
		return []SeqRange{{after + 1, upTo}}, nil
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	cp, _, err := getSeq(snap, sysCheckpoint)
	if err != nil {
		return nil, err
	}
	from, ok, err := getSeq(snap, sysAuditFrom)
	if err != nil {
		return nil, err
	}
	if !ok {
		from = cp + 1 // nothing indexed
	}
	bound := asOf.UnixNano()
	var out []SeqRange
	add := func(a, b uint64) {
		if n := len(out); n > 0 && out[n-1].To+1 >= a {
			out[n-1].To = max(out[n-1].To, b)
			return
		}
		out = append(out, SeqRange{a, b})
	}
	lo := after + 1
	if lo < from {
		add(lo, min(upTo, from-1))
		lo = from
	}
	// Indexed: [lo, min(upTo, cp)].
	if hi := min(upTo, cp); lo <= hi {
		it, err := snap.NewIter(&pebble.IterOptions{
			LowerBound: []byte(auditBlkKey(lo >> AuditBlockShift)),
			UpperBound: []byte(auditBlkKey(hi>>AuditBlockShift + 1)),
		})
		if err != nil {
			return nil, fmt.Errorf("%w: audit index: %v", ErrStorage, err)
		}
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()[len(sysAuditBlk):]
			v := it.Value()
			if len(k) != 8 || len(v) != 8 {
				it.Close()
				return nil, fmt.Errorf("%w: audit index: bad entry", ErrStorage)
			}
			if int64(binary.BigEndian.Uint64(v)) > bound {
				continue // every event of the block is later than asOf
			}
			b := binary.BigEndian.Uint64(k)
			add(max(lo, b<<AuditBlockShift), min(hi, (b+1)<<AuditBlockShift-1))
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return nil, fmt.Errorf("%w: audit index: %v", ErrStorage, err)
		}
		lo = hi + 1
	}
	if lo <= upTo {
		add(lo, upTo)
	}
	return out, nil
}
