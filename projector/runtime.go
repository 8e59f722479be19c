package projector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/semaphore"

	"github.com/loredev/lore/events"
)

// Headers lore sets on derived and dead-lettered messages.
// NB: must not change: subscribers read them.
const (
	HeaderCauseSeq = "Lore-Cause-Seq" // stream sequence of the event that caused it
	HeaderReason   = "Lore-Reason"    // why an event was dead-lettered
	HeaderSubject  = "Lore-Subject"   // original subject of a dead letter
)

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// Durable is the name of the projector's durable consumer; each replica
	// needs its own. NB: must not change for a replica.
	Durable string
	// BatchSize commits after this many events (default 1000).
	BatchSize int
	// FlushInterval is how often a partial batch is looked at while a
	// backlog drains (5 ms): it is committed once nothing more is
	// delivered or its oldest event waited maxFlushDelay. A batch is
	// committed at once when the pipeline runs dry, so an idle log
	// commits every event as soon as it is folded.
	FlushInterval time.Duration
	Logger        *slog.Logger
	// OnCommit, when set, is called with the checkpoint as each commit
	// becomes visible to readers (before its fsync).
	OnCommit func(seq uint64)
	// OnPoison, when set, is called for each dead-lettered event.
	OnPoison func(seq uint64, reason string)
	// OnDelivered, when set, is called with each event's sequence as the
	// fold loop receives it (decoded), and OnDurable with the checkpoint
	// as each commit's fsync ends: with OnCommit they split an event's
	// lag into waiting for its delivery, for its fold and commit, and the
	// fsyncs meanwhile (lore bench's lag episodes).
	OnDelivered func(seq uint64)
	OnDurable   func(seq uint64)
	// Sealer, when set, verifies the seals of the messages read: a sealed
	// message is not checked again (events.CheckSealed).
	Sealer *events.Sealer
	// CommitEvery, when set, commits a batch at every multiple of it
	// (the sequence folded), so the deltas recorded for audits
	// (Store.RecordDeltas with the same interval) end there.
	CommitEvery uint64
}

func (o *RuntimeOptions) setDefaults() {
	if o.Durable == "" {
		o.Durable = "lore-projector"
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 5 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Runtime drives a durable pull consumer of the log, folds each event into
// the store's models, and commits every batch together with the stream
// sequence reached; then it acknowledges (AckAll) and publishes the batch's
// announcements from the outbox.
//
// INVARIANT: after a crash the runtime resumes at checkpoint+1 whatever the
// consumer's state (the consumer is recreated there), so the read model is
// what one clean run produces.
type Runtime struct {
	js     jetstream.JetStream
	store  *Store
	models []Model
	opts   RuntimeOptions
	// log is the log stream's handle, for the reads of the fold loop
	// (otherContent); set at its first use, on that goroutine only.
	log jetstream.Stream

	seq      atomic.Uint64 // committed checkpoint
	poisoned atomic.Uint64 // poison events this runtime passed (dead-lettered)
	dups     atomic.Uint64 // duplicate event ids this runtime passed over
	mu       sync.Mutex
	waiters  []waiter
	// ann is set by runOnce before its syncer starts (announce.go).
	ann announcer
}

type waiter struct {
	seq uint64
	ch  chan struct{}
}

// NewRuntime returns a runtime folding the log into store's models.
func NewRuntime(js jetstream.JetStream, store *Store, models []Model, o RuntimeOptions) *Runtime {
	o.setDefaults()
	r := &Runtime{js: js, store: store, models: models, opts: o}
	if cp, err := store.Checkpoint(); err == nil {
		r.seq.Store(cp)
	}
	return r
}

// Seq is the last committed stream sequence.
func (r *Runtime) Seq() uint64 { return r.seq.Load() }

// Poisoned is the number of poison events this runtime passed; each is in
// the dead-letter stream once, whichever replica wrote it.
func (r *Runtime) Poisoned() uint64 { return r.poisoned.Load() }

// Duplicates is the number of events this runtime passed over because an
// event with the same id was folded before (committed batches only).
func (r *Runtime) Duplicates() uint64 { return r.dups.Load() }

// WaitFor blocks until the checkpoint reaches seq or ctx ends.
func (r *Runtime) WaitFor(ctx context.Context, seq uint64) error {
	r.mu.Lock()
	if r.seq.Load() >= seq {
		r.mu.Unlock()
		return nil
	}
	w := waiter{seq: seq, ch: make(chan struct{})}
	r.waiters = append(r.waiters, w)
	r.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for projection of seq %d (at %d): %w", seq, r.seq.Load(), ctx.Err())
	}
}

// release makes seq the checkpoint waiters see and wakes those it covers.
func (r *Runtime) release(seq uint64) {
	if r.opts.OnCommit != nil {
		r.opts.OnCommit(seq) // before any waiter wakes
	}
	r.mu.Lock()
	r.seq.Store(seq)
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if w.seq <= seq {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	r.waiters = kept
	r.mu.Unlock()
}

// Prepare checks the store's format against the models: a format from a
// newer lore is refused (ErrFutureFormat, nothing changed); an older one
// (or a new store) is reset for a rebuild that announces nothing the group
// already announced.
func (r *Runtime) Prepare(ctx context.Context) error {
	want := FormatVersion(r.models)
	have, err := CheckFormat(r.store, r.models)
	if err != nil {
		return err
	}
	if have == want {
		return nil
	}
	live, err := LastAnnouncedCause(ctx, r.js)
	if err != nil {
		return err
	}
	if have != "" {
		r.opts.Logger.Warn("read-model format is older than this lore's: rebuilding from the log", "was", have, "now", want)
	}
	if err := r.store.Reset(want, live); err != nil {
		return err
	}
	r.seq.Store(0)
	return nil
}

// LastAnnouncedCause returns the cause sequence of the newest announcement in
// the derived stream (0 when none): a rebuilt read model announces only
// transitions caused after it.
func LastAnnouncedCause(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	st, err := js.Stream(ctx, events.DerivedStream)
	if err != nil {
		return 0, fmt.Errorf("derived stream: %w", err)
	}
	// One request, answered by the stream leader (the derived stream allows
	// no direct gets): the newest message of the whole stream.
	m, err := st.GetLastMsgForSubject(ctx, events.DerivedFilter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last announcement: %w", err)
	}
	return strconv.ParseUint(m.Header.Get(HeaderCauseSeq), 10, 64)
}

// Run projects until ctx ends. Transient NATS failures restart the consumer
// from the committed checkpoint with backoff; storage failures end Run.
func (r *Runtime) Run(ctx context.Context) error {
	if err := r.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while preparing: a clean stop, as below
		}
		return err
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	b.MaxElapsedTime = 0 // retry until ctx ends
	op := func() error {
		err := r.runOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return backoff.Permanent(ctx.Err())
		case errors.Is(err, ErrStorage):
			return backoff.Permanent(err)
		case err != nil:
			r.opts.Logger.Warn("projector restarting after a NATS error", "err", err)
		}
		return err
	}
	err := backoff.Retry(op, backoff.WithContext(b, ctx))
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// runOnce recreates the consumer at checkpoint+1 and folds until an error.
func (r *Runtime) runOnce(ctx context.Context) error {
	folder, err := NewFolder(r.store, r.models, true)
	if err != nil {
		return err
	}
	folder.Parallel()
	defer folder.Close()
	// Announce what a crash left in the outbox.
	if err := r.prepareAnnounce(ctx); err != nil {
		return err
	}
	if err := r.publishOutbox(ctx); err != nil {
		return err
	}
	cons, err := r.resetConsumer(ctx, folder.Seq())
	if err != nil {
		return err
	}
	// The iterator's heartbeat monitor runs only inside a blocking Next: it
	// is what notices a pull request lost with a server (a stream leader
	// stopped mid-pull) and re-issues it. So Next blocks in its own
	// goroutine, and the flush of a partial batch is driven by a timer.
	it, err := cons.Messages(jetstream.PullMaxMessages(r.opts.BatchSize),
		jetstream.PullExpiry(pullExpiry), jetstream.WithMessagesErrOnMissingHeartbeat(false))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	deliveries, decoding, stop := startPump(it, r.opts.BatchSize, r.opts.Sealer, preparer(r.models))
	defer stop()

	var last jetstream.Msg
	var oldest time.Time // when the oldest uncommitted event was folded
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	// The watchdog: while nothing is delivered, now and then compare the
	// checkpoint with the log; a log ahead of a consumer that delivers
	// nothing restarts the consumer at the checkpoint.
	watch := time.NewTicker(stallAfter)
	defer watch.Stop()
	delivered := true // since the last watchdog tick
	// The messages handed to the folder since the last commit, by
	// sequence: Settle reports a poison event by its sequence.
	var inBatch []delivery
	// stored is the server's time of the oldest message delivered since
	// the last commit (announce.go: it decides whether announcements are
	// looked up before they are published).
	var stored time.Time
	var dupsCounted uint64 // folder.Duplicates() at the last commit
	jobs, syncBytes, syncErr, stopSyncer := r.startSyncer(ctx)
	defer stopSyncer()
	commit := func() error {
		flush.Stop()
		poison, err := folder.Settle()
		if err != nil {
			return err
		}
		for _, p := range poison {
			i, ok := slices.BinarySearchFunc(inBatch, p.Seq, func(d delivery, seq uint64) int {
				return cmp.Compare(d.meta.Sequence.Stream, seq)
			})
			if !ok {
				return fmt.Errorf("poison seq %d: no message in the batch", p.Seq)
			}
			m := inBatch[i].msg
			if err := r.deadLetter(ctx, m.Subject(), m.Data(), p.Seq, p.Err); err != nil {
				return err
			}
		}
		clear(inBatch)
		inBatch = inBatch[:0]
		n, durable, size, err := folder.commitVisible()
		if err != nil {
			return err
		}
		// Waiting commands read their writes as soon as the batch is
		// visible: the events are in the log, and a batch a machine crash
		// loses before its fsync is folded again from there (the
		// checkpoint is in the batch). The acknowledgement of the
		// consumer and the announcements wait for the fsync, on the
		// syncer, while the next batch folds.
		r.release(folder.Seq())
		r.dups.Add(folder.Duplicates() - dupsCounted)
		dupsCounted = folder.Duplicates()
		j := syncJob{durable: durable, last: last, stored: stored, seq: folder.Seq(), bytes: min(int64(size), syncQueueBytes)}
		last, stored = nil, time.Time{}
		if n > 0 {
			// What this commit wrote, from memory: the store's outbox is
			// read back only after a crash (publishOutbox).
			j.out = slices.Clone(folder.committedOutbox[:n])
		}
		// The syncer releases the bytes once the batch is durable: the
		// syncer drains every job it is handed, failed or not, so this
		// returns once the batches ahead are.
		_ = syncBytes.Acquire(context.Background(), j.bytes)
		select {
		case jobs <- j:
			return nil
		case err := <-syncErr:
			_ = durable() // the batch is released once its sync ends
			return err
		}
	}
	for {
		var d delivery
		select {
		case <-ctx.Done():
			if folder.Pending() > 0 {
				return commit()
			}
			return nil
		case <-flush.C:
			// The oldest uncommitted event waited a flush interval. With
			// nothing more delivered yet (idle, or a steady load the fold
			// keeps up with) commit now: commands read their own writes
			// and the lag stays bounded. While a backlog drains, keep
			// folding towards a full batch (a commit is an fsync), up to
			// maxFlushDelay.
			if len(deliveries) > 0 && time.Since(oldest) < maxFlushDelay {
				flush.Reset(r.opts.FlushInterval)
				continue
			}
			if err := commit(); err != nil {
				return err
			}
			continue
		case err := <-syncErr:
			return err
		case <-watch.C:
			if !delivered && folder.Pending() == 0 {
				if err := r.checkStalled(ctx, folder.Seq()); err != nil {
					return err
				}
			}
			delivered = false
			continue
		case d = <-deliveries:
			delivered = true
		}
		if r.opts.OnDelivered != nil && d.meta != nil {
			r.opts.OnDelivered(d.meta.Sequence.Stream)
		}
		if d.err != nil {
			if ctx.Err() != nil {
				continue // the select above commits and returns
			}
			return fmt.Errorf("next message: %w", d.err)
		}
		// INVARIANT: the log has no holes (no deletes, discard new), so a
		// delivery past checkpoint+1 means messages were lost on the way
		// (a slow consumer, a consumer leader change): restart from the
		// checkpoint rather than skip them.
		if s := d.meta.Sequence.Stream; s > folder.Seq()+1 {
			return fmt.Errorf("delivery gap: got seq %d after %d", s, folder.Seq())
		}
		last = d.msg
		if stored.IsZero() || d.meta.Timestamp.Before(stored) {
			stored = d.meta.Timestamp
		}
		if d.ev != nil && d.derr == nil && d.meta.Sequence.Stream > folder.Seq() {
			inBatch = append(inBatch, d) // in sequence order: redeliveries are skipped
		}
		// Nothing delivered behind it nor being decoded: the event folds
		// on this goroutine (Folder.foldDecoded).
		alone := len(deliveries) == 0 && decoding.Load() == 0
		if err := r.fold(ctx, folder, d, alone); err != nil {
			return err
		}
		if folder.Pending() == 1 {
			oldest = time.Now()
			flush.Reset(r.opts.FlushInterval)
		}
		boundary := r.opts.CommitEvery > 0 && folder.Seq()%r.opts.CommitEvery == 0
		if folder.Full(r.opts.BatchSize) || (folder.Pending() > 0 && (boundary || dry(deliveries, decoding))) {
			if err := commit(); err != nil {
				return err
			}
		}
	}
}

// dry reports a pipeline with nothing more delivered nor being decoded:
// the pump is given one chance to hand over a message it holds. Committing
// then costs an idle log nothing and lets a command read its write after
// one fold; under a backlog deliveries queue up while a commit (an fsync)
// runs, so batches grow with the load (a group commit).
func dry(deliveries <-chan delivery, decoding *atomic.Int64) bool {
	if len(deliveries) > 0 || decoding.Load() > 0 {
		return false
	}
	runtime.Gosched()
	return len(deliveries) == 0 && decoding.Load() == 0
}

// syncJob is what follows a visible commit: its fsync, then the
// consumer's acknowledgement up to last and the batch's announcements.
type syncJob struct {
	durable func() error
	last    jetstream.Msg
	out     []outboxEntry
	stored  time.Time // the server's time of the batch's oldest event
	seq     uint64    // the commit's checkpoint
	bytes   int64     // of the syncer's byte budget, released once durable
}

// The commits visible and not yet durable (handed to the syncer) are
// bounded by count and by the bytes their batches hold, not by time: a
// slow fsync (hundreds of milliseconds when the disk is busy) is
// waited for by the syncer while the next events fold and become
// visible, one commit each on an idle pipeline. The count is Pebble's
// own bound on pending syncs (record.SyncConcurrency-1); past either
// bound, the fold loop waits for the fsyncs ahead.
const (
	syncQueueJobs  = 1<<12 - 1
	syncQueueBytes = 64 << 20
)

// startSyncer runs the jobs of commits in order on a goroutine of their
// own; the first failure is sent on errc (later jobs only wait for their
// fsync). A job's bytes are acquired from budget before it is handed over
// and released once it is done. stop waits for every job handed over.
//
// INVARIANT: a batch is acknowledged and announced only after it is
// durable, in commit order.
func (r *Runtime) startSyncer(ctx context.Context) (jobs chan<- syncJob, budget *semaphore.Weighted, errc <-chan error, stop func()) {
	ch := make(chan syncJob, syncQueueJobs)
	budget = semaphore.NewWeighted(syncQueueBytes)
	ec := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := false
		for j := range ch {
			if failed {
				_ = j.durable()
			} else if err := r.finish(ctx, j); err != nil {
				failed = true
				ec <- err
			}
			budget.Release(j.bytes)
		}
	}()
	return ch, budget, ec, func() { close(ch); <-done }
}

// finish waits for j's fsync, then acknowledges and announces its batch.
func (r *Runtime) finish(ctx context.Context, j syncJob) error {
	if err := j.durable(); err != nil {
		return err
	}
	if r.opts.OnDurable != nil {
		r.opts.OnDurable(j.seq)
	}
	if j.last != nil {
		if err := j.last.Ack(); err != nil && ctx.Err() == nil {
			r.opts.Logger.Debug("ack", "err", err) // the checkpoint is the truth; the consumer is recreated on restart
		}
	}
	if len(j.out) > 0 {
		keys := make([][]byte, len(j.out))
		for i, e := range j.out {
			keys[i] = outboxKey(e.Cause, i) // as the commit wrote them
		}
		return r.announce(ctx, j.out, keys, j.stored)
	}
	return nil
}

// maxFlushDelay bounds how long a partial batch waits for its commit while
// a backlog drains.
const maxFlushDelay = 100 * time.Millisecond

// stallAfter is how long the consumer may deliver nothing before the
// watchdog compares the checkpoint with the log.
const stallAfter = 3 * pullExpiry

// errStalled reports a consumer that delivers nothing while the log holds
// events past the checkpoint.
var errStalled = errors.New("the consumer delivers nothing while the log is ahead of the read model")

// checkStalled returns errStalled when the log's last sequence is past seq
// (the checkpoint, nothing pending): the runtime then recreates its
// consumer at seq+1. An error reading the log is returned as is (a NATS
// error: the runtime restarts too).
func (r *Runtime) checkStalled(ctx context.Context, seq uint64) error {
	st, err := r.js.Stream(ctx, events.LogStream)
	if err != nil {
		return fmt.Errorf("watchdog: log stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("watchdog: log stream info: %w", err)
	}
	if info.State.LastSeq > seq {
		return fmt.Errorf("%w: read model at %d, log at %d", errStalled, seq, info.State.LastSeq)
	}
	return nil
}

// pullExpiry bounds a pull request's life; the server's heartbeats come at
// half of it, so a lost pull request is noticed within about this long.
const pullExpiry = 5 * time.Second

// fold folds one message; a poison event is dead-lettered before the batch
// that passes it commits (here, or by commit when the folder's lanes report
// it at Settle), so it is never silently skipped.
func (r *Runtime) fold(ctx context.Context, f *Folder, d delivery, alone bool) error {
	seq := d.meta.Sequence.Stream
	var err error
	if d.ev != nil {
		dups := f.Duplicates()
		_, err = f.foldDecoded(d.ev, d.data, d.derr, alone)
		if f.Duplicates() > dups {
			r.opts.Logger.Debug("event id folded before: passed over", "seq", seq, "id", d.ev.ID)
			if other, derr := r.otherContent(ctx, d, f.DuplicateOf()); derr != nil {
				return derr
			} else if other != "" {
				// The first one counts, as for any duplicate; this copy
				// is not passed over silently.
				return r.deadLetter(ctx, d.msg.Subject(), d.msg.Data(), seq, fmt.Errorf("%w: seq %d: id %q was folded at seq %d with another %s; this copy is passed over",
					ErrIDReused, seq, d.ev.ID, f.DuplicateOf(), other))
			}
		}
		if err == nil || !errors.Is(err, ErrPoison) {
			return err
		}
	} else {
		if seq <= f.Seq() {
			return nil
		}
		f.Skip(seq)
		err = fmt.Errorf("%w: seq %d: %v", ErrPoison, seq, d.derr)
	}
	return r.deadLetter(ctx, d.msg.Subject(), d.msg.Data(), seq, err)
}

// deadLetter writes the dead letter of the event at seq, once for the whole
// group of replicas: the publish expects lore.dlq.<seq> to hold no message
// yet (Nats-Expected-Last-Subject-Sequence 0), which the server enforces
// for as long as the stream lives, not only within its duplicate window. A
// refusal means another replica (or this one, before a restart) wrote it.
func (r *Runtime) deadLetter(ctx context.Context, subject string, data []byte, seq uint64, reason error) error {
	m := nats.NewMsg(fmt.Sprintf("%s.%d", events.DLQPrefix, seq))
	m.Data = data
	m.Header.Set(jetstream.MsgIDHeader, "dlq:"+strconv.FormatUint(seq, 10))
	m.Header.Set(HeaderReason, reason.Error())
	m.Header.Set(HeaderSubject, subject)
	m.Header.Set(HeaderCauseSeq, strconv.FormatUint(seq, 10))
	err := publishRetry(ctx, r.js, m, jetstream.WithExpectLastSequencePerSubject(0))
	switch {
	case isWrongLastSeq(err):
		r.opts.Logger.Debug("event dead-lettered already", "seq", seq, "reason", reason)
	case err != nil:
		return fmt.Errorf("dead-letter seq %d: %w", seq, err)
	default:
		r.opts.Logger.Warn("event dead-lettered", "seq", seq, "reason", reason)
	}
	r.poisoned.Add(1)
	if r.opts.OnPoison != nil {
		r.opts.OnPoison(seq, reason.Error())
	}
	return nil
}

// isWrongLastSeq reports the server's refusal of a publish whose expected
// last subject sequence does not hold.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// publishRetry publishes m with per-attempt deadlines until acked or ctx
// ends; a wrong last sequence (with opts expecting one) is final.
func publishRetry(ctx context.Context, js jetstream.JetStream, m *nats.Msg, opts ...jetstream.PublishOpt) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0
	return backoff.Retry(func() error {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.PublishMsg(actx, m, opts...)
		switch {
		case err != nil && ctx.Err() != nil:
			return backoff.Permanent(ctx.Err())
		case isWrongLastSeq(err):
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx))
}

// resetConsumer (re)creates the durable consumer so that it delivers from
// seq+1, whatever it delivered before.
func (r *Runtime) resetConsumer(ctx context.Context, seq uint64) (jetstream.Consumer, error) {
	st, err := r.js.Stream(ctx, events.LogStream)
	if err != nil {
		return nil, fmt.Errorf("log stream: %w", err)
	}
	if err := st.DeleteConsumer(ctx, r.opts.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("reset consumer %s: %w", r.opts.Durable, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       r.opts.Durable,
		Description:   "lore projector: folds the log into Pebble read models",
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   seq + 1,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       time.Minute,
		MaxAckPending: 4 * r.opts.BatchSize, // must exceed the commit batch
		FilterSubject: events.EventsFilter,
	}
	c, err := st.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s at %d: %w", r.opts.Durable, seq+1, err)
	}
	// The server returns an existing consumer of the same configuration
	// as it is: accept only one that has delivered nothing past seq.
	info := c.CachedInfo()
	if info.Config.OptStartSeq != seq+1 || info.Delivered.Stream > seq {
		return nil, fmt.Errorf("consumer %s: starts at %d and delivered up to %d, want a new one at %d",
			r.opts.Durable, info.Config.OptStartSeq, info.Delivered.Stream, seq+1)
	}
	return c, nil
}
