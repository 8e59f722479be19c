package projector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Folder folds events into the models of a Store, in memory, until Commit
// writes everything folded since the last commit in one Pebble batch,
// together with the checkpoint and the outbox of derived events.
//
// Each model folds in a lane of its own (its writes, their undo log, its
// announcements): models never read each other's keys, so lanes can fold
// on goroutines of their own (Parallel) and the result is the same as
// folding model after model.
//
// INVARIANT: the checkpoint committed with a batch equals the stream
// sequence of the last event folded into it; an event with seq <=
// checkpoint is skipped, never folded twice. An event whose id was folded
// before (at any sequence: a copy re-sent after JetStream's duplicate
// window, or published without Nats-Msg-Id) is passed over too, and the
// batch records the id of every event it folds (see sysEventID).
//
// A Folder is used by one goroutine at a time.
type Folder struct {
	store *Store
	lanes []*lane

	committed uint64        // checkpoint on disk
	seq       uint64        // last sequence folded (>= committed)
	liveFrom  uint64        // events with seq <= liveFrom are not announced
	sys       *batchOverlay // the folder's own uncommitted writes (live-from)
	outbox    []outboxEntry // announcements of folded, uncommitted events
	// committedOutbox is what the last Commit wrote to the outbox, in key
	// order (its i-th entry is at outboxKey(Cause, i)).
	committedOutbox []outboxEntry
	pending         int // events folded since the last commit
	announce        bool
	// ids are the ids of the events folded since the last commit, with
	// their sequences; Commit writes them to the id index.
	ids  map[string]uint64
	dups uint64 // events passed over as duplicates (see Duplicates)
	// dupOf is the sequence of the event whose id the last duplicate held
	// (DuplicateOf).
	dupOf uint64
	// times is the folder's side of the time index (timeindex.go).
	times timeIndex
	// poisoned are the events to pass over as poison without folding
	// them (SetPoisoned; nil: none).
	poisoned map[uint64]bool
	// foreign collects the sequences of the events none of the models
	// folds (SetForeign; nil: off).
	foreign map[uint64]bool
	// auditIDs answers the id look-ups instead of the store's index
	// (SetAuditIDs; nil: off).
	auditIDs *AuditIDs

	// With Parallel: the events handed to the lanes since the last
	// commit, in order; Settle waits for the lanes and checks them.
	parallel  bool
	lanesDone sync.WaitGroup // the lanes' goroutines
	queue     []*queued
	settled   int // queue[:settled] was checked by Settle
	unsettled bool
	// ahead is the payload bytes handed to the lanes since they were last
	// waited for (drainLanes, Settle).
	ahead int

	// writing is the batch CommitAsync handed to its writer (nil: none).
	writing *writing
}

// lane is one model's side of a Folder.
type lane struct {
	i      int
	model  Model
	prefix []byte
	store  *Store
	live   bool          // the folder announces: the live store's (see LiveFold)
	batch  *batchOverlay // writes of folded, uncommitted events, the current one's included
	// writing is the batch CommitAsync is writing (nil when none), read
	// under batch; spare is an empty overlay kept for the next swap.
	writing, spare *batchOverlay
	undo           []undoEntry // how to take the current event's writes back out of batch
	emits          []Derived   // the current event's announcements
	seq            uint64      // the event folding

	in     chan laneWork // Parallel only
	failed bool          // Parallel: an event failed since the last settle
	closed *atomic.Bool  // Parallel: the folder is closing, skip what is left
}

// queued is an event handed to the lanes (Parallel), with what each lane
// made of it; lane i writes only its own slots.
type queued struct {
	ev    *events.Event
	data  events.Payload
	errs  []error
	emits [][]Derived
	// dup: an event with this id was folded before; the lanes never see
	// it (Settle decides again when it folds the batch again).
	dup bool
}

// laneWork is an event to fold, or a barrier to pass.
type laneWork struct {
	q       *queued
	barrier *sync.WaitGroup
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
	if err := store.useIDFilter(); err != nil {
		return nil, err
	}
	f := &Folder{store: store, committed: cp, seq: cp, liveFrom: lf, sys: newBatchOverlay(), announce: announce,
		ids: map[string]uint64{}}
	for i, m := range models {
		f.lanes = append(f.lanes, &lane{i: i, model: m, prefix: []byte(modelPrefix + m.Name() + "/"),
			store: store, live: announce, batch: newBatchOverlay()})
	}
	return f, nil
}

// SetPoisoned makes the folder pass over the events at these sequences as
// poison, folding none of their writes and recording none of their ids:
// with the store's poison index (Store.Poisoned) over the events it
// folds, a folder of some of the models reaches the state the fold of
// every model gives them. Set it before the first Fold.
func (f *Folder) SetPoisoned(seqs map[uint64]bool) { f.poisoned = seqs }

// Parallel makes every model fold on a goroutine of its own: Fold hands an
// event to the lanes and returns at once (a poison event is then reported
// by Settle, not Fold). A folder of one model gains too: the folder's own
// work for the next events (their id look-ups, the time index) goes on
// while the model folds. Close stops the goroutines. It takes effect only
// before the first Fold.
func (f *Folder) Parallel() {
	if f.parallel || len(f.lanes) == 0 || f.seq != f.committed {
		return
	}
	f.parallel = true
	closed := new(atomic.Bool)
	for _, l := range f.lanes {
		l.in, l.closed = make(chan laneWork, 1024), closed
		f.lanesDone.Add(1)
		go func() {
			defer f.lanesDone.Done()
			l.run()
		}()
	}
}

// Close stops the lanes' goroutines (Parallel) and waits for them, then
// for a batch CommitAsync is writing: events not folded yet are dropped
// (they were not committed). The folder is not used after.
//
// INVARIANT: the lanes are stopped before the written batch's overlays
// are dropped: a folder closed with events still handed to its lanes (a
// replay cancelled between two commits) has lanes reading those overlays
// (lane.pending) until they stop.
func (f *Folder) Close() {
	if f.parallel {
		f.lanes[0].closed.Store(true)
		for _, l := range f.lanes {
			close(l.in)
		}
		f.lanesDone.Wait()
		f.parallel = false
	}
	_ = f.waitWriting() // a failure was (or will never be) reported by a commit
}

// Seq is the last sequence folded (committed or not).
func (f *Folder) Seq() uint64 { return f.seq }

// Pending is the number of events folded since the last commit.
func (f *Folder) Pending() int { return f.pending }

// maxBatchBytes bounds the writes a batch holds before its commit. A batch
// is held twice in memory while it commits (the overlays the folds read,
// the Pebble batch written from them), and a few events can write a lot:
// a patterns import of thousands of patterns, a pool rewritten. Pebble
// also keeps a batch larger than half a memtable as a memtable of its own
// until it is flushed.
const maxBatchBytes = 8 << 20

// Full reports whether the batch is due for its commit: maxEvents events
// folded since the last one, or maxBatchBytes of writes. Folds in
// parallel lanes may not have counted their writes yet (at most
// maxLanesAhead of payload): a later event's check sees them.
func (f *Folder) Full(maxEvents int) bool {
	if f.pending >= maxEvents {
		return true
	}
	n := f.sys.size.Load()
	for _, l := range f.lanes {
		n += l.batch.size.Load()
	}
	return n >= maxBatchBytes
}

// SetLiveFrom marks events up to seq as rebuild-only: they fold without
// announcing. It is committed with the next batch.
func (f *Folder) SetLiveFrom(seq uint64) {
	f.liveFrom = seq
	f.sys.set(sysLiveFrom, overlayVal{v: u64(seq)})
}

// ErrPoison wraps the reason an event could not be folded.
var ErrPoison = errors.New("lore: poison event")

// Fold applies one stored event (ev.Seq set) to every model. It returns
// (skipped=true) for an event at or below the checkpoint and for an event
// whose id was folded before (a duplicate: the sequence advances, nothing
// is written but the checkpoint, Duplicates counts it). A poison event
// returns an error wrapping ErrPoison: the sequence still advances, its
// writes are discarded, and the caller must dead-letter it before Commit.
// Any other error is a storage failure. With Parallel, a poison event is
// reported by Settle instead (only an undecodable one by Fold).
func (f *Folder) Fold(ev *events.Event) (skipped bool, err error) {
	if ev.Seq <= f.seq {
		return true, nil
	}
	data, derr := decodePayload(ev)
	return f.foldDecoded(ev, data, derr, false)
}

// foldDecoded is Fold of an event whose payload was decoded already (derr:
// why it could not be). alone says nothing is known to follow the event
// yet (the live pipeline ran dry): with Parallel and the lanes settled it
// folds on this goroutine, model after model, as without Parallel, and a
// poison event is reported here rather than by Settle. One event gains
// nothing from the lanes and would pay a handoff to each and back, which
// is most of a lone command's wait for its write.
func (f *Folder) foldDecoded(ev *events.Event, data events.Payload, derr error, alone bool) (skipped bool, err error) {
	if ev.Seq <= f.seq {
		return true, nil
	}
	f.seq = ev.Seq
	f.pending++
	if err := f.noteTime(ev.Seq, ev.Time); err != nil {
		return false, err
	}
	if derr != nil {
		return false, fmt.Errorf("%w: seq %d: decode: %v", ErrPoison, ev.Seq, derr)
	}
	if first, dup, err := f.foldedSeq(ev.ID, ev.Seq); err != nil {
		return false, err
	} else if dup {
		if err := f.foreignFirst(ev, data, first); err != nil {
			return false, err
		}
		f.dups++
		f.dupOf = first
		f.noteDup(ev.Seq, first)
		if f.parallel {
			f.queue = append(f.queue, &queued{ev: ev, data: data, dup: true})
		}
		return true, nil
	}
	if f.poisoned[ev.Seq] {
		// Refused when every model folded it (the poison index): passed
		// over as then, writes and id alike. Nothing is queued, as for an
		// undecodable event.
		err := fmt.Errorf("%w: seq %d: refused by a model when every model folded it", ErrPoison, ev.Seq)
		f.notePoison(ev.Seq, err)
		return false, err
	}
	if f.isForeign(data) {
		// Folded by no model: only its id is noted. Queued (Parallel) so
		// that a batch folded again decides its id again in order.
		f.foreign[ev.Seq] = true
		if f.parallel {
			f.queue = append(f.queue, &queued{ev: ev, data: data})
		}
		f.noteID(ev.ID, ev.Seq)
		return false, nil
	}
	if f.parallel && alone && !f.unsettled {
		// INVARIANT: every event since the last commit is in the queue (a
		// failed Settle folds them all again); this one is settled now.
		f.queue = append(f.queue, &queued{ev: ev, data: data})
		f.settled = len(f.queue)
		return false, f.foldInline(ev, data)
	}
	if f.parallel {
		q := &queued{ev: ev, data: data, errs: make([]error, len(f.lanes)), emits: make([][]Derived, len(f.lanes))}
		f.queue = append(f.queue, q)
		f.unsettled = true
		// Recorded when handed over: Settle takes it back if a lane refuses it.
		f.noteID(ev.ID, ev.Seq)
		for _, l := range f.lanes {
			l.in <- laneWork{q: q}
		}
		if f.ahead += len(ev.Data); f.ahead >= maxLanesAhead {
			f.drainLanes()
		}
		return false, nil
	}
	return false, f.foldInline(ev, data)
}

// maxLanesAhead bounds the payload bytes handed to the lanes and not yet
// folded by them. The batch's writes are counted as the lanes fold
// (Full), so without it a loop running ahead of slow lanes could hand a
// whole batch of large events (imports of thousands of patterns) before
// the first one's writes showed. Small events never reach it within a
// batch of 1 000.
const maxLanesAhead = 1 << 20

// drainLanes waits until every lane has folded what it was handed.
func (f *Folder) drainLanes() {
	var wg sync.WaitGroup
	wg.Add(len(f.lanes))
	for _, l := range f.lanes {
		l.in <- laneWork{barrier: &wg}
	}
	wg.Wait()
	f.ahead = 0
}

// foldInline folds one event into every lane, model after model, and adds
// its announcements to the outbox; on a poison event it takes the event's
// writes back out of every lane.
func (f *Folder) foldInline(ev *events.Event, data events.Payload) error {
	for i, l := range f.lanes {
		if err := l.fold(ev, data); err != nil {
			for _, done := range f.lanes[:i+1] {
				done.rollback()
			}
			if errors.Is(err, ErrStorage) {
				return err
			}
			err = fmt.Errorf("%w: seq %d: %s: %v", ErrPoison, ev.Seq, l.model.Name(), err)
			f.notePoison(ev.Seq, err)
			return err
		}
	}
	if f.announce && ev.Seq > f.liveFrom {
		n := len(f.outbox)
		for _, l := range f.lanes {
			if err := f.addOutbox(ev, l.emits); err != nil {
				for _, l := range f.lanes {
					l.rollback()
				}
				f.outbox = f.outbox[:n]
				f.notePoison(ev.Seq, err)
				return err
			}
		}
	}
	f.noteID(ev.ID, ev.Seq)
	return nil
}

// addOutbox appends one event's announcements by one model to the outbox.
func (f *Folder) addOutbox(ev *events.Event, emits []Derived) error {
	for _, d := range emits {
		raw, err := json.Marshal(d.Data)
		if err != nil {
			return fmt.Errorf("%w: seq %d: derived %s: %v", ErrPoison, ev.Seq, d.Type, err)
		}
		f.outbox = append(f.outbox, outboxEntry{
			MsgID: fmt.Sprintf("%s:%d:%s", d.Type, ev.Seq, d.Key),
			Type:  d.Type, Project: d.Project, Subject: d.Subject, Cause: ev.Seq,
			Time: ev.Time.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), Data: raw,
		})
	}
	return nil
}

var errUnsettled = errors.New("commit: events handed to the lanes since Settle: settle (and dead-letter its poison) first")

// Poisoned is an event Settle found could not be folded.
type Poisoned struct {
	Seq uint64
	Err error // wraps ErrPoison
}

// Settle waits until the lanes (Parallel) folded every event handed to
// them and returns the poison events among them, in order. When a lane
// failed, every lane's uncommitted writes are discarded and the events
// since the last commit are folded again model after model, which takes
// exactly the poison events' writes back out: the result is that of
// folding without Parallel. The poison must be dead-lettered before Commit.
func (f *Folder) Settle() ([]Poisoned, error) {
	if !f.unsettled {
		return nil, nil
	}
	f.unsettled = false
	f.drainLanes()
	failed := false
	for _, l := range f.lanes {
		failed = failed || l.failed
		l.failed = false
	}
	if !failed && f.announce {
	outbox:
		for _, q := range f.queue[f.settled:] {
			if q.dup || q.ev.Seq <= f.liveFrom {
				continue
			}
			for _, es := range q.emits {
				if err := f.addOutbox(q.ev, es); err != nil {
					failed = true
					break outbox
				}
			}
		}
	}
	settled := f.settled
	f.settled = len(f.queue)
	if !failed {
		return nil, nil
	}
	// Fold again from the committed state, model after model: every event
	// since the last commit is in the queue (an undecodable one has no
	// writes and no announcements). Poison settled before was reported then.
	f.outbox = f.outbox[:0]
	for _, l := range f.lanes {
		l.batch.clear()
	}
	for _, q := range f.queue {
		if !q.dup {
			f.forgetID(q.ev.ID, q.ev.Seq)
		}
	}
	var poison []Poisoned
	for i, q := range f.queue {
		// Which copy of an id folds is decided again: a copy passed over
		// folds when the first one turns out to be poison.
		first, dup, err := f.foldedSeq(q.ev.ID, q.ev.Seq)
		if err != nil {
			return poison, err
		}
		if dup {
			if err := f.foreignFirst(q.ev, q.data, first); err != nil {
				return poison, err
			}
			f.noteDup(q.ev.Seq, first)
		} else {
			f.unnoteDup(q.ev.Seq)
		}
		if dup != q.dup {
			if dup {
				f.dups++
			} else {
				f.dups--
			}
			q.dup = dup
		}
		if dup {
			continue
		}
		if err := f.foldInline(q.ev, q.data); err != nil {
			if !errors.Is(err, ErrPoison) {
				return poison, err
			}
			if i >= settled {
				poison = append(poison, Poisoned{Seq: q.ev.Seq, Err: err})
			}
		}
	}
	return poison, nil
}

// run folds what the folder hands the lane until it is closed. After a
// failed event it only passes barriers: Settle folds everything again.
func (l *lane) run() {
	for w := range l.in {
		if w.barrier != nil {
			w.barrier.Done()
			continue
		}
		if l.failed || l.closed.Load() {
			continue
		}
		if err := l.fold(w.q.ev, w.q.data); err != nil {
			w.q.errs[l.i] = err
			l.failed = true
			continue
		}
		if len(l.emits) > 0 {
			w.q.emits[l.i] = append([]Derived(nil), l.emits...)
		}
	}
}

// fold folds one event into the lane's model.
func (l *lane) fold(ev *events.Event, data events.Payload) error {
	l.undo = l.undo[:0]
	l.emits = l.emits[:0]
	l.seq = ev.Seq
	return foldSafely(l.model, modelTx{l: l}, ev, data)
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
func (l *lane) write(k string, v overlayVal) {
	prev, had := l.batch.get(k)
	l.undo = append(l.undo, undoEntry{key: k, prev: prev, had: had})
	l.batch.set(k, v)
}

// rollback takes the current event's writes back out of the batch, newest
// first, so the batch is as it was before the event.
func (l *lane) rollback() {
	for i := len(l.undo) - 1; i >= 0; i-- {
		u := l.undo[i]
		if u.had {
			l.batch.set(u.key, u.prev)
		} else {
			l.batch.remove(u.key)
		}
	}
	l.undo = l.undo[:0]
	l.emits = l.emits[:0]
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
// checkpoint in one Pebble batch, and returns once it is durable (fsync'd
// when the store syncs). It reports how many outbox entries it wrote.
func (f *Folder) Commit() (int, error) {
	n, durable, _, err := f.commitVisible()
	if err != nil {
		return n, err
	}
	return n, durable()
}

// noWait is the durability wait of a commit that wrote nothing or did not
// ask for an fsync.
func noWait() error { return nil }

// commitVisible writes the batch like Commit and returns as soon as it is
// visible to readers; durable returns once it is durable (the WAL fsync'd
// when the store syncs); it must be called once, in commit order. size is
// the memory the batch holds until then (0 when it waits for nothing).
//
// INVARIANT: readers see a batch before its fsync in any case (Pebble
// publishes a batch to readers before its WAL sync completes), so
// returning here weakens nothing: a batch lost by a machine crash before
// its fsync is lost with its checkpoint, and is folded again from the log.
func (f *Folder) commitVisible() (n int, durable func() error, size int, err error) {
	if f.unsettled {
		// Settle may report poison events the caller must dead-letter
		// before their batch commits.
		return 0, noWait, 0, errUnsettled
	}
	if err := f.waitWriting(); err != nil {
		return 0, noWait, 0, err
	}
	writes := f.sys.len() + len(f.ids)
	for _, l := range f.lanes {
		writes += l.batch.len()
	}
	if f.seq == f.committed && writes == 0 {
		return 0, noWait, 0, nil
	}
	durable, size, err = f.store.writeBatch(append([]*batchOverlay{f.sys}, f.laneBatches()...), f.ids, f.outbox, f.seq)
	if err != nil {
		return 0, noWait, 0, err
	}
	n = len(f.outbox)
	f.committed = f.seq
	f.sys.clear()
	f.ids = emptied(f.ids)
	for _, l := range f.lanes {
		l.batch.clear()
	}
	clear(f.queue)
	f.queue, f.settled = f.queue[:0], 0
	f.committedOutbox = append(f.committedOutbox[:0], f.outbox...)
	f.outbox = f.outbox[:0]
	f.pending = 0
	return n, durable, size, nil
}

func (f *Folder) laneBatches() []*batchOverlay {
	bs := make([]*batchOverlay, len(f.lanes))
	for i, l := range f.lanes {
		bs[i] = l.batch
	}
	return bs
}

func outboxKey(seq uint64, n int) []byte {
	k := make([]byte, 0, len(sysOutbox)+12)
	k = append(k, sysOutbox...)
	k = binary.BigEndian.AppendUint64(k, seq)
	return binary.BigEndian.AppendUint32(k, uint32(n))
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

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
