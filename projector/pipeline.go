package projector

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// delivery is one message of the log, decoded off the fold loop's
// goroutine: decoding (envelope, subject, payload, schema check of every
// event) costs about as much as a fold, so a second core does it while
// the first folds.
type delivery struct {
	msg  jetstream.Msg
	meta *jetstream.MsgMetadata
	// ev is nil when the envelope did not decode (derr says why).
	ev   *events.Event
	data events.Payload
	// derr is a decode failure of this event: poison, never a reason to stop.
	derr error
	// err ends the stream of deliveries (the iterator stopped or failed).
	err error
}

// pump decodes the iterator's messages and hands them to the fold loop, in
// order, until Next fails (the iterator stopped) or done closes.
func pump(it jetstream.MessagesContext, out chan<- delivery, done <-chan struct{}) {
	for {
		var d delivery
		d.msg, d.err = it.Next()
		if d.err == nil {
			d.decode()
		}
		select {
		case out <- d:
		case <-done:
			return
		}
		if d.err != nil {
			return
		}
	}
}

// decode fills meta, ev, data and derr from msg; a message without
// JetStream metadata ends the stream.
func (d *delivery) decode() {
	meta, err := d.msg.Metadata()
	if err != nil {
		d.err = fmt.Errorf("message metadata: %w", err)
		return
	}
	d.meta = meta
	ev, err := events.Decode(d.msg.Data())
	if err != nil {
		d.derr = err
		return
	}
	ev.Seq, ev.Received = meta.Sequence.Stream, meta.Timestamp
	d.ev = ev
	// Every message is checked as the appender checks it, whoever
	// published it and whatever its headers claim: a header is not proof.
	d.data, d.derr = events.CheckStored(d.msg.Subject(), ev)
}

// decodePayload checks ev (events.Check) and returns its decoded payload;
// an event this process checked already (ev.Checked) is only decoded.
func decodePayload(ev *events.Event) (events.Payload, error) {
	if ev.Checked {
		return events.DecodeData(ev)
	}
	return events.Check(ev)
}

// startPump runs pump on a new goroutine; stop stops the iterator and the
// goroutine.
func startPump(it jetstream.MessagesContext, buffer int) (deliveries <-chan delivery, stop func()) {
	ch := make(chan delivery, buffer)
	done := make(chan struct{})
	go pump(it, ch, done)
	return ch, func() { it.Stop(); close(done) }
}

// errNoMessage reports a wait for the next delivery that timed out.
var errNoMessage = errors.New("no message")

// next waits up to wait for a delivery (errNoMessage when none came).
func next(deliveries <-chan delivery, wait time.Duration) delivery {
	select {
	case d := <-deliveries:
		return d
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d := <-deliveries:
		return d
	case <-t.C:
		return delivery{err: errNoMessage}
	}
}
