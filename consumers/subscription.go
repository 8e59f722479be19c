package consumers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Options configure a subscription to announcements.
type Options struct {
	// Filter selects the announcements delivered; the others are
	// acknowledged and skipped.
	Filter Filter
	// Name makes the consumer durable (resumable across restarts) under
	// DurableName(role, Name). Empty: an ephemeral consumer.
	Name string
	// All delivers the announcements made before the consumer was first
	// created too; by default a new consumer starts with the next one. An
	// existing durable consumer always resumes where it stopped.
	All bool
	// AckWait is how long the server waits for an acknowledgement before
	// redelivering (default 30 s). Long deliveries signal progress.
	AckWait time.Duration
	// MaxAckPending bounds unacknowledged deliveries (default 1: in order,
	// one at a time).
	MaxAckPending int
}

func (o *Options) setDefaults() {
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 1
	}
}

// Delivery is one announcement handed to a subscriber. The subscriber must
// Ack it once handled; an unacknowledged delivery comes again.
type Delivery struct {
	// Event is the announcement's envelope.
	Event *events.Event
	// Body is the envelope's JSON exactly as stored.
	Body []byte
	// Seq is the announcement's sequence in the LORE_DERIVED stream.
	Seq uint64
	// CauseSeq is the log sequence of the event that caused it.
	CauseSeq uint64
	// Subject is the announcement's NATS subject.
	Subject string
	// Redelivered is true when the server delivered it before.
	Redelivered bool

	msg jetstream.Msg
}

// Ack acknowledges the delivery and waits for the server to confirm, so a
// restarted durable consumer never delivers it again.
func (d *Delivery) Ack(ctx context.Context) error {
	if d.msg == nil {
		return nil
	}
	if err := d.msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("ack announcement %d: %w", d.Seq, err)
	}
	return nil
}

// Nak hands the delivery back unhandled: the server redelivers it at once
// (to this or the next subscription of the consumer) instead of after
// AckWait.
func (d *Delivery) Nak() error {
	if d.msg == nil {
		return nil
	}
	return d.msg.Nak()
}

// InProgress resets the server's redelivery timer during a long delivery.
func (d *Delivery) InProgress() error {
	if d.msg == nil {
		return nil
	}
	return d.msg.InProgress()
}

// Subscription reads announcements from a JetStream consumer.
// Next is not safe for concurrent use.
type Subscription struct {
	nc      *nats.Conn
	cons    jetstream.Consumer
	it      jetstream.MessagesContext
	filter  Filter
	durable string
	stop    sync.Once
}

// Watch is a subscription for programs that print or react to
// announcements (`lore watch`).
type Watch = Subscription

// NewWatch subscribes to announcements; with a name it is durable as
// "lore-watch-<name>".
func NewWatch(ctx context.Context, js jetstream.JetStream, o Options) (*Watch, error) {
	return subscribe(ctx, js, "watch", o)
}

// subscribe creates (or, when durable and existing, resumes) the consumer.
func subscribe(ctx context.Context, js jetstream.JetStream, role string, o Options) (*Subscription, error) {
	o.setDefaults()
	if err := o.Filter.Validate(); err != nil {
		return nil, err
	}
	durable, err := DurableName(role, o.Name)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, events.DerivedStream)
	if err != nil {
		return nil, fmt.Errorf("derived stream %s: %w", events.DerivedStream, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "lore " + role + ": announcements (" + o.Filter.FilterSubject() + ")",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxAckPending: o.MaxAckPending,
		MaxDeliver:    -1, // at least once: never give up on an announcement
		FilterSubject: o.Filter.FilterSubject(),
	}
	if o.All {
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	if durable == "" {
		cfg.InactiveThreshold = time.Minute
	}
	var cons jetstream.Consumer
	if durable != "" {
		if existing, err := st.Consumer(ctx, durable); err == nil {
			// Resume: keep where it stands; the filter may change.
			old := existing.CachedInfo().Config
			cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = old.DeliverPolicy, old.OptStartSeq, old.OptStartTime
			cons, err = st.UpdateConsumer(ctx, cfg)
			if err != nil {
				return nil, fmt.Errorf("resume consumer %s: %w", durable, err)
			}
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("consumer %s: %w", durable, err)
		}
	}
	if cons == nil {
		cons, err = st.CreateOrUpdateConsumer(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("create consumer %s: %w", durable, err)
		}
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(max(o.MaxAckPending, 1)),
		jetstream.WithMessagesErrOnMissingHeartbeat(false))
	if err != nil {
		return nil, fmt.Errorf("consume announcements: %w", err)
	}
	return &Subscription{nc: js.Conn(), cons: cons, it: it, filter: o.Filter, durable: durable}, nil
}

// Durable is the durable consumer's name ("" when ephemeral).
func (s *Subscription) Durable() string { return s.durable }

// Next returns the next announcement passing the filter, waiting until one
// arrives or ctx ends. Announcements the filter rejects, and messages that
// are not envelopes, are acknowledged and skipped.
func (s *Subscription) Next(ctx context.Context) (*Delivery, error) {
	for {
		msg, err := s.it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("next announcement: %w", err)
		}
		d, ok := s.delivery(msg)
		if !ok {
			if err := msg.DoubleAck(ctx); err != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		return d, nil
	}
}

func (s *Subscription) delivery(msg jetstream.Msg) (*Delivery, bool) {
	ev, err := events.Decode(msg.Data())
	if err != nil || !s.filter.Match(ev) {
		return nil, false
	}
	d := &Delivery{Event: ev, Body: msg.Data(), Subject: msg.Subject(), msg: msg}
	if meta, err := msg.Metadata(); err == nil {
		d.Seq = meta.Sequence.Stream
		d.Redelivered = meta.NumDelivered > 1
		ev.Received = meta.Timestamp
	}
	d.CauseSeq, _ = strconv.ParseUint(msg.Headers().Get(projector.HeaderCauseSeq), 10, 64)
	return d, true
}

// Stop ends the subscription; a durable consumer stays on the server and
// resumes on the next subscription with the same name.
//
// INVARIANT: when Stop returns, the server has dropped this subscription's
// pending pull requests (so it delivers nothing more to it), and every
// delivery it had sent that Next did not return is handed back (Nak). A
// restarted subscription therefore resumes at once, never after AckWait:
// a delivery that reached a stopped subscriber is never left waiting for
// the redelivery timer. Deliveries Next returned stay the caller's duty
// (Ack, or Nak when abandoned).
func (s *Subscription) Stop() {
	s.stop.Do(func() {
		// Drain unsubscribes and waits for the server's confirmation (a
		// flush) before closing the buffer, so the loop below sees every
		// message the server sent to this subscription. They are handed
		// back only then: a nak sent before the server dropped the pull
		// request would be redelivered to it, and lost. The wait bound
		// only guards against a connection that never answers.
		s.it.Drain()
		var unhandled []jetstream.Msg
		for {
			msg, err := s.it.Next(jetstream.NextMaxWait(drainWait))
			if err != nil {
				break
			}
			unhandled = append(unhandled, msg)
		}
		for _, msg := range unhandled {
			_ = msg.Nak()
		}
		if s.nc != nil && !s.nc.IsClosed() {
			_ = s.nc.FlushTimeout(drainWait) // the naks reach the server
		}
	})
}

// drainWait bounds Stop's wait on a connection that does not answer.
const drainWait = 30 * time.Second

// Delete stops the subscription and removes its durable consumer, so the
// name starts afresh next time.
func (s *Subscription) Delete(ctx context.Context, js jetstream.JetStream) error {
	s.Stop()
	if s.durable == "" {
		return nil
	}
	if err := js.DeleteConsumer(ctx, events.DerivedStream, s.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s: %w", s.durable, err)
	}
	return nil
}
