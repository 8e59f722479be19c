package projector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Folder folds events into the models of a Store, in memory, until Commit
// writes everything folded since the last commit in one Pebble batch,
// together with the checkpoint and the outbox of derived events.
//
// INVARIANT: the checkpoint committed with a batch equals the stream
// sequence of the last event folded into it; an event with seq <=
// checkpoint is skipped, never folded twice.
//
// A Folder is used by one goroutine at a time.
type Folder struct {
	store    *Store
	models   []Model
	prefixes [][]byte

	committed uint64        // checkpoint on disk
	seq       uint64        // last sequence folded (>= committed)
	liveFrom  uint64        // events with seq <= liveFrom are not announced
	batch     *batchOverlay // writes of folded, uncommitted events, the current one's included
	undo      []undoEntry   // how to take the current event's writes back out of batch
	curEmits  []Derived
	outbox    []outboxEntry // announcements of folded, uncommitted events
	// committedOutbox is what the last Commit wrote to the outbox, in key
	// order (its i-th entry is at outboxKey(Cause, i)).
	committedOutbox []outboxEntry
	pending         int // events folded since the last commit
	announce        bool
}

// outboxEntry is a derived event waiting to be published.
// NB: must not change: stored in the outbox.
type outboxEntry struct {
	MsgID   string          `json:"msg_id"`
	Type    string          `json:"type"`
	Project string          `json:"project"`
	Subject string          `json:"subject"`
	Cause   uint64          `json:"cause_seq"`
	Time    string          `json:"time"`
	Data    json.RawMessage `json:"data"`
}

// NewFolder prepares to fold into store. announce=false never writes the
// outbox (audit replays); with announce=true, events above the store's
// live-from mark announce their derived events.
func NewFolder(store *Store, models []Model, announce bool) (*Folder, error) {
	cp, err := store.Checkpoint()
	if err != nil {
		return nil, err
	}
	lf, err := store.LiveFrom()
	if err != nil {
		return nil, err
	}
	f := &Folder{store: store, models: models, committed: cp, seq: cp, liveFrom: lf,
		batch: newBatchOverlay(), announce: announce}
	for _, m := range models {
		f.prefixes = append(f.prefixes, []byte(modelPrefix+m.Name()+"/"))
	}
	return f, nil
}

// Seq is the last sequence folded (committed or not).
func (f *Folder) Seq() uint64 { return f.seq }

// Pending is the number of events folded since the last commit.
func (f *Folder) Pending() int { return f.pending }

// SetLiveFrom marks events up to seq as rebuild-only: they fold without
// announcing. It is committed with the next batch.
func (f *Folder) SetLiveFrom(seq uint64) {
	f.liveFrom = seq
	f.batch.set(sysLiveFrom, overlayVal{v: u64(seq)})
}

// ErrPoison wraps the reason an event could not be folded.
var ErrPoison = errors.New("lore: poison event")

// Fold applies one stored event (ev.Seq set) to every model. It returns
// (skipped=true) for an event at or below the checkpoint. A poison event
// returns an error wrapping ErrPoison: the sequence still advances, its
// writes are discarded, and the caller must dead-letter it before Commit.
// Any other error is a storage failure.
func (f *Folder) Fold(ev *events.Event) (skipped bool, err error) {
	if ev.Seq <= f.seq {
		return true, nil
	}
	data, derr := decodePayload(ev)
	return f.foldDecoded(ev, data, derr)
}

// foldDecoded is Fold of an event whose payload was decoded already (derr:
// why it could not be).
func (f *Folder) foldDecoded(ev *events.Event, data events.Payload, derr error) (skipped bool, err error) {
	if ev.Seq <= f.seq {
		return true, nil
	}
	f.seq = ev.Seq
	f.pending++
	f.undo = f.undo[:0]
	f.curEmits = f.curEmits[:0]

	if derr != nil {
		return false, fmt.Errorf("%w: seq %d: decode: %v", ErrPoison, ev.Seq, derr)
	}
	for i, m := range f.models {
		tx := modelTx{f: f, prefix: f.prefixes[i]}
		if err := foldSafely(m, tx, ev, data); err != nil {
			f.rollback()
			f.curEmits = f.curEmits[:0]
			if errors.Is(err, ErrStorage) {
				return false, err
			}
			return false, fmt.Errorf("%w: seq %d: %s: %v", ErrPoison, ev.Seq, m.Name(), err)
		}
	}
	if f.announce && ev.Seq > f.liveFrom {
		n := len(f.outbox)
		for _, d := range f.curEmits {
			raw, err := json.Marshal(d.Data)
			if err != nil {
				f.rollback()
				f.outbox = f.outbox[:n]
				return false, fmt.Errorf("%w: seq %d: derived %s: %v", ErrPoison, ev.Seq, d.Type, err)
			}
			f.outbox = append(f.outbox, outboxEntry{
				MsgID: fmt.Sprintf("%s:%d:%s", d.Type, ev.Seq, d.Key),
				Type:  d.Type, Project: d.Project, Subject: d.Subject, Cause: ev.Seq,
				Time: ev.Time.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), Data: raw,
			})
		}
	}
	return false, nil
}

// undoEntry is a key's value in the batch before the current event wrote
// it (had=false: the key was not in the batch).
type undoEntry struct {
	key  string
	prev overlayVal
	had  bool
}

// write puts one write of the current event into the batch, remembering
// how to take it back.
func (f *Folder) write(k string, v overlayVal) {
	prev, had := f.batch.get(k)
	f.undo = append(f.undo, undoEntry{key: k, prev: prev, had: had})
	f.batch.set(k, v)
}

// rollback takes the current event's writes back out of the batch, newest
// first, so the batch is as it was before the event.
func (f *Folder) rollback() {
	for i := len(f.undo) - 1; i >= 0; i-- {
		u := f.undo[i]
		if u.had {
			f.batch.set(u.key, u.prev)
		} else {
			f.batch.remove(u.key)
		}
	}
	f.undo = f.undo[:0]
}

// Skip advances past a sequence that holds no event for this projector
// (for example a message the consumer filtered), so the checkpoint moves.
func (f *Folder) Skip(seq uint64) {
	if seq > f.seq {
		f.seq = seq
		f.pending++
	}
}

// Commit writes every write folded since the last commit, the outbox and the
// checkpoint in one Pebble batch. It reports how many outbox entries it wrote.
func (f *Folder) Commit() (int, error) {
	if f.seq == f.committed && f.batch.len() == 0 {
		return 0, nil
	}
	b := f.store.db.NewBatch()
	defer b.Close()
	for k, v := range f.batch.vals {
		var err error
		if v.del {
			err = b.Delete([]byte(k), nil)
		} else {
			err = b.Set([]byte(k), v.v, nil)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
		}
	}
	n := len(f.outbox)
	for i, e := range f.outbox {
		raw, err := json.Marshal(e)
		if err != nil {
			return 0, fmt.Errorf("outbox: %w", err)
		}
		if err := b.Set(outboxKey(e.Cause, i), raw, nil); err != nil {
			return 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
		}
	}
	if err := b.Set([]byte(sysCheckpoint), u64(f.seq), nil); err != nil {
		return 0, fmt.Errorf("%w: batch: %v", ErrStorage, err)
	}
	wo := pebble.NoSync
	if f.store.sync {
		wo = pebble.Sync
	}
	if err := b.Commit(wo); err != nil {
		return 0, fmt.Errorf("%w: commit: %v", ErrStorage, err)
	}
	f.committed = f.seq
	f.batch.clear()
	f.committedOutbox = append(f.committedOutbox[:0], f.outbox...)
	f.outbox = f.outbox[:0]
	f.pending = 0
	return n, nil
}

func outboxKey(seq uint64, n int) []byte {
	k := make([]byte, 0, len(sysOutbox)+12)
	k = append(k, sysOutbox...)
	k = binary.BigEndian.AppendUint64(k, seq)
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// modelTx is the Tx of one model while one event folds.
type modelTx struct {
	f      *Folder
	prefix []byte
}

var _ Tx = modelTx{}

func (t modelTx) full(key []byte) string { return string(t.prefix) + string(key) }

func (t modelTx) Get(key []byte) ([]byte, bool, error) {
	k := t.full(key)
	if v, ok := t.f.batch.get(k); ok {
		return v.v, !v.del, nil
	}
	return dbReader{r: t.f.store.db, prefix: t.prefix}.Get(key)
}

func (t modelTx) Set(key, value []byte) error {
	t.f.write(t.full(key), overlayVal{v: append([]byte(nil), value...)})
	return nil
}

func (t modelTx) Delete(key []byte) error {
	t.f.write(t.full(key), overlayVal{del: true})
	return nil
}

func (t modelTx) Emit(d Derived) { t.f.curEmits = append(t.f.curEmits, d) }

func (t modelTx) Seq() uint64 { return t.f.seq }

// Scan merges the committed keys with the batch's writes, in key order.
func (t modelTx) Scan(prefix []byte, fn func(k, v []byte) error) error {
	full := append(append([]byte{}, t.prefix...), prefix...)
	// The batch's keys are listed before the walk: fn may write.
	oks := t.f.batch.keysWithPrefix(full)
	it, err := t.f.store.db.NewIter(&pebble.IterOptions{LowerBound: full, UpperBound: prefixEnd(full)})
	if err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	defer it.Close()
	call := func(k []byte, v []byte) error {
		err := fn(k[len(t.prefix):], v)
		return err
	}
	it.First()
	i := 0
	for it.Valid() || i < len(oks) {
		var err error
		switch {
		case i < len(oks) && (!it.Valid() || bytes.Compare([]byte(oks[i]), it.Key()) <= 0):
			k := oks[i]
			if it.Valid() && bytes.Equal([]byte(k), it.Key()) {
				it.Next() // shadowed by the batch
			}
			i++
			if ov, _ := t.f.batch.get(k); !ov.del {
				err = call([]byte(k), ov.v)
			}
		default:
			v, verr := it.ValueAndErr()
			if verr != nil {
				return fmt.Errorf("%w: iter value: %v", ErrStorage, verr)
			}
			err = call(it.Key(), v)
			it.Next()
		}
		if err != nil {
			if errors.Is(err, ErrStopScan) {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	return nil
}

// FoldEvents folds evs (with Seq set, increasing) into store's models and
// commits, without announcing. It is the runtime's own fold path without a
// consumer: audit replays and tests of folds use it.
func FoldEvents(store *Store, models []Model, evs []*events.Event) (poison []error, err error) {
	f, err := NewFolder(store, models, false)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if _, err := f.Fold(ev); err != nil {
			if !errors.Is(err, ErrPoison) {
				return poison, err
			}
			poison = append(poison, err)
		}
	}
	_, err = f.Commit()
	return poison, err
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// foldSafely runs one model's fold; a panic (a fold bug met by some input)
// becomes a poison error for that event instead of stopping the projector.
func foldSafely(m Model, tx Tx, ev *events.Event, data events.Payload) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("fold panicked: %v", r)
		}
	}()
	return m.Fold(tx, ev, data)
}
