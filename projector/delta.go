package projector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Deltas: what a store's commits wrote over a stretch of the log, kept as
// a table an audit ingests into a copy of an older checkpoint instead of
// folding the stretch again.
//
// A delta over (From, To] holds, for every key the commits of the events
// From+1..To wrote, its value after the last of them (or its deletion).
// Applied to the state at any sequence s with From <= s <= To, it gives the
// state at To: a key written after s takes its value at To, and a key last
// written at or before s already holds it. So a checkpoint at b and the
// deltas that follow it without a hole bring a copy of b to the end of any
// of them, whatever the boundaries.
//
// INVARIANT: a delta carries every write of the commits it covers except
// the outbox (an audit announces nothing, and the live store clears its
// outbox with writes no delta records); a Reset drops what was recorded and
// starts again from its own writes. Nothing else writes the read models, the
// checkpoint or the indexes an audit reads (MarkAnnounced writes the outbox
// and the live-from mark only).

// Delta is the recorded writes over (From, To] and the mark of the state
// at To.
type Delta struct {
	From, To uint64
	Mark     AuditMark
	vals     map[string]overlayVal
	wo       sstable.WriterOptions
}

// WriteTable writes the delta as a table at path (synced): every key in
// order, its last value or its deletion.
func (d *Delta) WriteTable(path string) error {
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("delta table: %w", err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), d.wo)
	keys := make([]string, 0, len(d.vals))
	for k := range d.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := d.vals[k]
		if v.del {
			err = w.Delete([]byte(k))
		} else {
			err = w.Set([]byte(k), v.v)
		}
		if err != nil {
			_ = w.Close()
			return fmt.Errorf("delta table %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil { // syncs and closes the file
		return fmt.Errorf("delta table %s: %w", path, err)
	}
	return nil
}

// Keys calls fn with every key of the delta under prefix (store keys:
// ModelKeyPrefix and a model's own key), written or deleted.
func (d *Delta) Keys(prefix string, fn func(key string)) {
	for k := range d.vals {
		if strings.HasPrefix(k, prefix) {
			fn(k)
		}
	}
}

// deltaRecorder collects a store's commits into deltas and hands each to
// cut, in commit order, at the first commit at or past each multiple of
// every (a runtime with CommitEvery commits there).
type deltaRecorder struct {
	every uint64
	cut   func(*Delta)

	mu   sync.Mutex
	from uint64
	vals map[string]overlayVal
}

// RecordDeltas makes the store record its commits from its checkpoint on
// and hand cut a delta at the first commit at or past each multiple of
// every (cut runs on the committing goroutine: it should hand the delta
// off). Call it before the commits it records; StopDeltas ends it.
func (s *Store) RecordDeltas(every uint64, cut func(*Delta)) error {
	cp, err := s.Checkpoint()
	if err != nil {
		return err
	}
	s.deltas.Store(&deltaRecorder{every: max(every, 1), cut: cut, from: cp, vals: map[string]overlayVal{}})
	return nil
}

// StopDeltas stops recording; what was recorded since the last cut is
// dropped.
func (s *Store) StopDeltas() { s.deltas.Store(nil) }

// ApplyDelta brings the store from a state at s (From <= s <= To) to the
// state at the delta's To by ingesting its table at path, which it takes:
// the file is moved into the store (link a kept table to path first).
func (s *Store) ApplyDelta(path string) error {
	// The table writes ids no folder recorded: the filter would no
	// longer hold the index.
	s.ids.Store(nil)
	if err := s.db.Ingest(context.Background(), []string{path}); err != nil {
		return fmt.Errorf("%w: apply delta %s: %v", ErrStorage, path, err)
	}
	return nil
}

// record adds a visible commit at seq to the delta under way and cuts it
// when it spans every sequences.
func (r *deltaRecorder) record(s *Store, overlays []*batchOverlay, ids map[string]uint64, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range overlays {
		for k, v := range o.vals {
			r.vals[k] = overlayVal{v: append([]byte(nil), v.v...), del: v.del}
		}
	}
	for id, at := range ids {
		r.vals[eventIDKey(id)] = overlayVal{v: u64(at)}
	}
	r.vals[sysCheckpoint] = overlayVal{v: u64(seq)}
	if seq/r.every == r.from/r.every {
		return // no multiple of every crossed
	}
	d := &Delta{From: r.from, To: seq, vals: r.vals, wo: s.opts.MakeWriterOptions(1, s.db.TableFormat())}
	r.from, r.vals = seq, map[string]overlayVal{}
	m, err := s.AuditMark() // the store holds exactly the state at seq: its one writer is here
	if err != nil || m.Seq != seq {
		return // a hole in the deltas: audits start from a checkpoint past it
	}
	d.Mark = m
	r.cut(d)
}

// reset drops what was recorded: the store was emptied and holds the
// format and the live-from mark alone (Reset), the state at sequence 0.
func (r *deltaRecorder) reset(version string, liveFrom uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.from, r.vals = 0, map[string]overlayVal{
		sysVersion:  {v: []byte(version)},
		sysLiveFrom: {v: u64(liveFrom)},
	}
}
