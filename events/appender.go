package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrWrongSequence is returned by Append with ExpectLastSeq when another
// event reached the aggregate first (optimistic concurrency). Reload the
// aggregate, decide again, and retry.
var ErrWrongSequence = errors.New("lore: wrong last sequence for the aggregate")

// Publisher is the part of jetstream.JetStream the appender needs.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
	PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error)
}

var _ Publisher = (jetstream.JetStream)(nil)

// Appender validates events and appends them to the log: idempotently (the
// Nats-Msg-Id is the event id, reused on every retry) and, when asked, with
// optimistic concurrency on the aggregate's subject. An invalid event is
// refused before it reaches the log.
type Appender struct {
	pub Publisher
	// AttemptTimeout bounds one publish attempt (a publish that reached a
	// dying leader is never acked); MaxElapsed bounds all retries.
	AttemptTimeout time.Duration
	MaxElapsed     time.Duration
	// Now stamps events that carry no time.
	Now func() time.Time
	// MaxInFlight bounds the unacknowledged publishes of one AppendBatch
	// (DefaultMaxInFlight when 0).
	MaxInFlight int
	// Sealer, when set, seals every message it prepares (SealHeader), so
	// that the projectors holding its key need not check it again.
	Sealer *Sealer
}

// NewAppender returns an appender publishing with pub.
func NewAppender(pub Publisher) *Appender {
	return &Appender{pub: pub, AttemptTimeout: 2 * time.Second, MaxElapsed: 30 * time.Second, Now: time.Now}
}

// AppendOption changes one append.
type AppendOption func(*appendOpts)

type appendOpts struct {
	expect    bool
	expectSeq uint64
}

// ExpectLastSeq makes the append conditional: it succeeds only if the last
// event on the aggregate's subject is at stream sequence seq (0: none yet).
func ExpectLastSeq(seq uint64) AppendOption {
	return func(o *appendOpts) { o.expect, o.expectSeq = true, seq }
}

// Result is where an event was stored.
type Result struct {
	ID        string `json:"id"`
	Seq       uint64 `json:"seq"`
	Subject   string `json:"subject"`
	Duplicate bool   `json:"duplicate"`
}

// Prepare fills an event's defaults (id, time, project, aggregate subject),
// validates it and returns the message to publish. It is what Append does
// before publishing; the event is modified in place.
func (a *Appender) Prepare(ev *Event) (*nats.Msg, error) {
	if ev.ID == "" {
		ev.ID = NewID(a.now())
	}
	if ev.Time.IsZero() {
		ev.Time = a.now().UTC()
	}
	// Credentials in free text are redacted here, so no door can put one
	// in the log.
	if _, err := check(ev, true); err != nil {
		return nil, err
	}
	subj, err := SubjectFor(ev)
	if err != nil {
		return nil, err
	}
	body, err := Encode(ev)
	if err != nil {
		return nil, err
	}
	h := nats.Header{
		jetstream.MsgIDHeader: {ev.ID},
		TypeHeader:            {ev.Type},
		CheckedHeader:         {ev.Type},
	}
	if a.Sealer != nil {
		h[SealHeader] = []string{a.Sealer.Seal(subj, body)}
	}
	if ev.Request != "" {
		h[RequestHeader] = []string{ev.Request}
	}
	return &nats.Msg{Subject: subj, Data: body, Header: h}, nil
}

// Headers of appended events. NB: must not change.
const (
	// TypeHeader carries the event type so tools can read it without decoding.
	TypeHeader = "Lore-Type"
	// CheckedHeader says the appender validated the event against the schema
	// of the type it names. It is informative only: any client can set it,
	// so the projector checks every event it reads (CheckStored) whatever
	// its headers say, unless its seal (SealHeader) verifies.
	CheckedHeader = "Lore-Checked"
	// RequestHeader carries Event.Request. Like CheckedHeader, any client
	// can set it: it only tells a retry from another request under the
	// same idempotency key, which any client could take first anyway.
	RequestHeader = "Lore-Request"
)

func (a *Appender) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Append validates and stores one event, retrying transient failures with
// the same message id. Re-appending an event with the same id changes
// nothing (Result.Duplicate) within the stream's dedup window.
func (a *Appender) Append(ctx context.Context, ev *Event, opts ...AppendOption) (Result, error) {
	var o appendOpts
	for _, f := range opts {
		f(&o)
	}
	msg, err := a.Prepare(ev)
	if err != nil {
		return Result{}, err
	}
	var popts []jetstream.PublishOpt
	if o.expect {
		popts = append(popts, jetstream.WithExpectLastSequencePerSubject(o.expectSeq))
	}
	var ack *jetstream.PubAck
	op := func() error {
		actx, cancel := context.WithTimeout(ctx, a.AttemptTimeout)
		defer cancel()
		var perr error
		ack, perr = a.pub.PublishMsg(actx, msg, popts...)
		if perr == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if errors.As(perr, &apiErr) {
			switch apiErr.ErrorCode {
			case jetstream.JSErrCodeStreamWrongLastSequence:
				return backoff.Permanent(fmt.Errorf("%w: %s %s: %v", ErrWrongSequence, ev.Type, ev.Subject, perr))
			case 10077: // stream store full (discard new): not transient
				return backoff.Permanent(fmt.Errorf("append %s: the log is full: %w", ev.Type, perr))
			}
		}
		if ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return perr // transient: no responders during an election, timeouts, reconnects
	}
	if err := backoff.Retry(op, a.policy(ctx)); err != nil {
		return Result{}, fmt.Errorf("append %s %s: %w", ev.Type, ev.ID, err)
	}
	return Result{ID: ev.ID, Seq: ack.Sequence, Subject: msg.Subject, Duplicate: ack.Duplicate}, nil
}

func (a *Appender) policy(ctx context.Context) backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = time.Second
	b.MaxElapsedTime = a.MaxElapsed
	return backoff.WithContext(b, ctx)
}

// AppendBatch validates every event first (nothing is appended if one is
// invalid; the error names its index and field), then publishes them
// asynchronously in the order of evs, with at most MaxInFlight of them
// unacknowledged at a time, and collects each ack as it arrives. Events
// whose attempt failed are published again, in their order, with the same
// ids: one that was stored after all becomes a duplicate (Result.Duplicate),
// never a second event. Results are in the order of evs.
//
// Order: within one attempt the events are published in order on one
// connection, and JetStream stores them in the order it receives them. An
// attempt stops publishing at its first failure; the next attempt publishes,
// in order, the events that failed and those not yet published. An event
// after a failed one that was already in flight and got acknowledged stays
// where it was stored, so only a failed attempt can reorder events of one
// aggregate (as before pipelining).
func (a *Appender) AppendBatch(ctx context.Context, evs []*Event) ([]Result, error) {
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		m, err := a.Prepare(ev)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		msgs[i] = m
	}
	res := make([]Result, len(evs))
	todo := make([]int, len(evs))
	for i := range todo {
		todo[i] = i
	}
	w := newWindow(a.maxInFlight(len(todo)))
	defer w.stop()
	op := func() error {
		failed, err := a.attempt(ctx, w, evs, msgs, todo, res)
		todo = failed
		return err
	}
	if err := backoff.Retry(op, a.policy(ctx)); err != nil {
		return res, fmt.Errorf("append batch of %d: %w", len(evs), err)
	}
	return res, nil
}

// DefaultMaxInFlight is the default bound of one AppendBatch's
// unacknowledged publishes. It is below the JetStream context's own bound
// (jetstream.WithPublishAsyncMaxPending, 4000 by default), so that a few
// concurrent batches do not stall on it.
const DefaultMaxInFlight = 1024

func (a *Appender) maxInFlight(n int) int {
	m := a.MaxInFlight
	if m <= 0 {
		m = DefaultMaxInFlight
	}
	return max(1, min(m, n))
}

// inFlight is one published, not yet acknowledged event of an attempt.
type inFlight struct {
	i        int // index in the batch
	f        jetstream.PubAckFuture
	deadline time.Time
}

// window is the ring of an attempt's in-flight events, oldest first, and
// the timer that bounds the wait for the oldest one's ack.
type window struct {
	ring        []inFlight
	head, count int
	timer       *time.Timer
}

func newWindow(size int) *window { return &window{ring: make([]inFlight, size)} }

func (w *window) full() bool { return w.count == len(w.ring) }

func (w *window) push(e inFlight) {
	w.ring[(w.head+w.count)%len(w.ring)] = e
	w.count++
}

func (w *window) pop() inFlight {
	e := w.ring[w.head]
	w.ring[w.head] = inFlight{}
	w.head = (w.head + 1) % len(w.ring)
	w.count--
	return e
}

func (w *window) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// attempt publishes the events todo (indexes into evs, in order) with the
// window bounding the unacknowledged ones, fills res for every event
// acknowledged, and returns the indexes still to append, in order. After
// its first failure (a refused publish, an error ack, no ack by the
// deadline) it publishes nothing more: what is in flight is still
// collected, the rest is returned for the next attempt. A cancelled ctx and
// a full log are permanent errors.
func (a *Appender) attempt(ctx context.Context, w *window, evs []*Event, msgs []*nats.Msg, todo []int, res []Result) ([]int, error) {
	var failed []int
	var lastErr, permanent error
	next := 0
	stopped := false
	// Concurrent batches may together exceed the context's own bound on
	// pending acks: wait for room up to an attempt's timeout rather than
	// fail after the default 200 ms.
	stall := jetstream.WithStallWait(max(a.AttemptTimeout, time.Millisecond))
	for {
		for !stopped && next < len(todo) && !w.full() {
			i := todo[next]
			f, err := a.pub.PublishMsgAsync(msgs[i], stall)
			if err != nil {
				stopped, lastErr = true, err
				break
			}
			w.push(inFlight{i: i, f: f, deadline: time.Now().Add(a.AttemptTimeout)})
			next++
		}
		if w.count == 0 {
			break
		}
		e := w.pop()
		ack, err := w.await(ctx, e)
		if err == nil {
			res[e.i] = Result{ID: evs[e.i].ID, Seq: ack.Sequence, Subject: msgs[e.i].Subject, Duplicate: ack.Duplicate}
			continue
		}
		// Unacknowledged or refused: publish it again with the same id (a
		// late ack of this try makes the retry a duplicate).
		failed, lastErr, stopped = append(failed, e.i), err, true
		if ctx.Err() != nil {
			permanent = ctx.Err()
		} else if isLogFull(err) && permanent == nil {
			permanent = fmt.Errorf("the log is full: %w", err)
		}
	}
	failed = append(failed, todo[next:]...) // never published in this attempt
	switch {
	case permanent != nil:
		return failed, backoff.Permanent(permanent)
	case len(failed) > 0:
		return failed, fmt.Errorf("%d of the batch unacknowledged: %w", len(failed), lastErr)
	}
	return nil, nil
}

// await waits for e's ack until its deadline or the end of ctx.
func (w *window) await(ctx context.Context, e inFlight) (*jetstream.PubAck, error) {
	select {
	case ack := <-e.f.Ok():
		return ack, nil
	case err := <-e.f.Err():
		return nil, err
	default:
	}
	d := time.Until(e.deadline)
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	defer w.timer.Stop()
	select {
	case ack := <-e.f.Ok():
		return ack, nil
	case err := <-e.f.Err():
		return nil, err
	case <-w.timer.C:
		return nil, context.DeadlineExceeded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// isLogFull reports the server's "stream store full" refusal (discard new
// with a byte cap): retrying cannot help.
func isLogFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10077
}
