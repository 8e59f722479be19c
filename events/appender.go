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
	if ev.Project == "" {
		ev.Project = DefaultProject
	}
	if err := ValidateEnvelope(ev); err != nil {
		return nil, err
	}
	if err := Upcast(ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	// One validation decodes the payload once; its aggregate id names the
	// subject when the writer gave none.
	p, err := validateData(ev.Type, ev.Data)
	if err != nil {
		return nil, err
	}
	if ev.Subject == "" {
		if p == nil {
			if p, err = DecodeData(ev); err != nil {
				return nil, err
			}
		}
		ev.Subject = p.AggregateID()
	}
	subj, err := SubjectFor(ev)
	if err != nil {
		return nil, err
	}
	body, err := Encode(ev)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subj, Data: body, Header: nats.Header{
		jetstream.MsgIDHeader: {ev.ID},
		TypeHeader:            {ev.Type},
		CheckedHeader:         {ev.Type},
	}}, nil
}

// Headers of appended events. NB: must not change.
const (
	// TypeHeader carries the event type so tools can read it without decoding.
	TypeHeader = "Lore-Type"
	// CheckedHeader says the appender validated the event against the schema
	// of the type it names; the projector then skips re-validating it. Raw
	// clients leave it out and their events are validated when folded.
	CheckedHeader = "Lore-Checked"
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
// asynchronously and waits for every ack, retrying failed ones with their
// ids. Results are in the order of evs.
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
	op := func() error {
		futs := make([]jetstream.PubAckFuture, len(todo))
		var failed []int
		var lastErr error
		for j, i := range todo {
			f, err := a.pub.PublishMsgAsync(msgs[i])
			if err != nil {
				failed, lastErr = append(failed, todo[j:]...), err
				futs = futs[:j]
				break
			}
			futs[j] = f
		}
		actx, cancel := context.WithTimeout(ctx, a.AttemptTimeout+time.Duration(len(futs))*20*time.Microsecond)
		defer cancel()
		for j, f := range futs {
			i := todo[j]
			select {
			case ack := <-f.Ok():
				res[i] = Result{ID: evs[i].ID, Seq: ack.Sequence, Subject: msgs[i].Subject, Duplicate: ack.Duplicate}
			case err := <-f.Err():
				failed, lastErr = append(failed, i), err
			case <-actx.Done():
				if ctx.Err() != nil {
					return backoff.Permanent(ctx.Err())
				}
				// Unacknowledged in time: publish again with the same id
				// (a late ack of the first try makes the retry a duplicate).
				failed, lastErr = append(failed, i), context.DeadlineExceeded
			}
		}
		todo = failed
		if len(todo) > 0 {
			return fmt.Errorf("%d of the batch unacknowledged: %w", len(todo), lastErr)
		}
		return nil
	}
	if err := backoff.Retry(op, a.policy(ctx)); err != nil {
		return res, fmt.Errorf("append batch of %d: %w", len(evs), err)
	}
	return res, nil
}
