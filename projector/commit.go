package projector

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	json "github.com/goccy/go-json"
)

// writing is a batch CommitAsync hands to a goroutine of its own: until it
// is written (and waitWriting has seen it), its writes stay readable from
// the folder (lane.writing, writing.sys, writing.ids), so folding the
// next events never waits for it.
type writing struct {
	done    chan struct{}
	err     error        // set before done closes
	durable func() error // set before done closes
	seq     uint64
	sys     *batchOverlay
	ids     map[string]uint64
	lanes   []*batchOverlay
}

// CommitAsync is Commit without waiting: everything folded since the last
// commit is handed to a goroutine that writes it (with the checkpoint) in
// one Pebble batch, and folding goes on at once; its writes stay visible
// to the folds until it is written. The next commit (CommitAsync, Commit)
// or Close first waits for it and for its fsync, so batches are written
// and made durable in order, and a write failure is returned there.
//
// It is for folders that announce nothing (rebuilds, audits): their
// commits have no outbox. Settle must have been called (Parallel).
func (f *Folder) CommitAsync() error {
	if f.announce {
		return fmt.Errorf("commit: a folder that announces commits with Commit")
	}
	if f.unsettled {
		return errUnsettled
	}
	if err := f.waitWriting(); err != nil {
		return err
	}
	writes := f.sys.len() + len(f.ids)
	for _, l := range f.lanes {
		writes += l.batch.len()
	}
	if f.seq == f.committed && writes == 0 {
		return nil
	}
	w := &writing{done: make(chan struct{}), seq: f.seq, sys: f.sys, ids: f.ids}
	// INVARIANT: the lanes are idle here (Settle passed their barrier and
	// nothing was handed to them since), so swapping their overlays races
	// with nothing; from now on they only read w's overlays, as the
	// writer does.
	for _, l := range f.lanes {
		w.lanes = append(w.lanes, l.batch)
		l.writing = l.batch
		l.batch, l.spare = l.spare, nil
		if l.batch == nil {
			l.batch = newBatchOverlay()
		}
	}
	f.writing = w
	f.sys, f.ids = newBatchOverlay(), map[string]uint64{}
	clear(f.queue)
	f.queue, f.settled = f.queue[:0], 0
	f.pending = 0
	go func() {
		defer close(w.done)
		w.durable, _, w.err = f.store.writeBatch(append([]*batchOverlay{w.sys}, w.lanes...), w.ids, nil, w.seq)
	}()
	return nil
}

// waitWriting waits until the batch CommitAsync handed over is written and
// durable, then drops its overlays (keeping one per lane for reuse).
// Called only while the lanes are idle.
func (f *Folder) waitWriting() error {
	w := f.writing
	if w == nil {
		return nil
	}
	<-w.done
	f.writing = nil
	for _, l := range f.lanes {
		l.writing.clear()
		l.spare, l.writing = l.writing, nil
	}
	if w.err != nil {
		return w.err
	}
	if err := w.durable(); err != nil {
		return err
	}
	f.committed = w.seq
	return nil
}

// writeBatch writes overlays, the id index entries ids, the outbox and the
// checkpoint seq in one Pebble batch, and returns once it is visible to
// readers; durable returns once it is durable (the WAL fsync'd when the
// store syncs) and must be called once, in commit order. size is the
// batch's bytes, held until durable returns.
func (s *Store) writeBatch(overlays []*batchOverlay, ids map[string]uint64, outbox []outboxEntry, seq uint64) (durable func() error, size int, err error) {
	est := 64
	for _, o := range overlays {
		for k, v := range o.vals {
			est += len(k) + len(v.v) + 16
		}
	}
	for id := range ids {
		est += len(sysEventID) + len(id) + 24
	}
	b := s.db.NewBatchWithSize(est)
	closeBatch := true
	defer func() {
		if closeBatch {
			b.Close()
		}
	}()
	for _, o := range overlays {
		for k, v := range o.vals {
			var err error
			if v.del {
				err = b.Delete([]byte(k), nil)
			} else {
				err = b.Set([]byte(k), v.v, nil)
			}
			if err != nil {
				return noWait, 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
			}
		}
	}
	for id, seq := range ids {
		if err := b.Set([]byte(eventIDKey(id)), u64(seq), nil); err != nil {
			return noWait, 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
		}
	}
	for i, e := range outbox {
		raw, err := json.Marshal(e)
		if err != nil {
			return noWait, 0, fmt.Errorf("outbox: %w", err)
		}
		if err := b.Set(outboxKey(e.Cause, i), raw, nil); err != nil {
			return noWait, 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
		}
	}
	if err := b.Set([]byte(sysCheckpoint), u64(seq), nil); err != nil {
		return noWait, 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
	}
	if !s.sync {
		if err := b.Commit(pebble.NoSync); err != nil {
			return noWait, 0, fmt.Errorf("%w: commit: %v", ErrStorage, err)
		}
		if r := s.deltas.Load(); r != nil {
			r.record(s, overlays, ids, seq)
		}
		return noWait, 0, nil
	}
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		return noWait, 0, fmt.Errorf("%w: commit: %v", ErrStorage, err)
	}
	if r := s.deltas.Load(); r != nil {
		r.record(s, overlays, ids, seq)
	}
	closeBatch = false
	return func() error {
		defer b.Close()
		if err := b.SyncWait(); err != nil {
			return fmt.Errorf("%w: commit sync: %v", ErrStorage, err)
		}
		return nil
	}, b.Len(), nil
}
