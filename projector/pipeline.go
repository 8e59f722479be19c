package projector

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// delivery is one message of the log, decoded off the fold loop's
// goroutine: decoding (envelope, subject, payload, schema check of every
// event) costs about as much as a fold, so other cores do it while the
// first folds.
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

// pump reads the iterator's messages, has them decoded by decoders
// goroutines, and hands them to the fold loop in the iterator's order,
// until Next fails (the iterator stopped) or done closes.
//
// The check of a message (envelope, subject, schema, credential scan) is
// a pure function of the message and costs more than reading it, so
// several messages are decoded at once; the order of out is the order of
// Next whatever order the decoders finish in.
//
// decoding counts the messages read and not yet handed over (a message is
// uncounted just before it is sent on out, so once the fold loop holds a
// message the count is of those behind it); a message the reader waited
// for while the sequencer holds none is decoded by the reader itself.
func pump(it jetstream.MessagesContext, out chan<- delivery, decoding *atomic.Int64, done <-chan struct{}, decoders int, seal *events.Sealer, prepare func(events.Payload)) {
	// A few messages per decoder between the reader and the sequencer:
	// what is read ahead of the fold loop is out's buffer and these, so
	// a replay that stops at a sequence decodes few messages past it.
	ahead := 4 * decoders
	todo := make(chan *slot, ahead)
	order := make(chan *slot, ahead)
	// ordered counts the slots given to the sequencer and not yet handed
	// over by it; the reader hands a message over itself only when it is
	// 0, so the order holds.
	var ordered atomic.Int64
	for range decoders {
		go func() {
			for {
				select {
				case s := <-todo:
					s.d.decode(seal)
					if prepare != nil && s.d.derr == nil && s.d.data != nil {
						prepare(s.d.data) // beside the fold of the events before
					}
					close(s.ready)
				case <-done:
					return
				}
			}
		}()
	}
	go func() {
		for {
			select {
			case s := <-order:
				select {
				case <-s.ready:
				case <-done:
					return
				}
				decoding.Add(-1)
				select {
				case out <- s.d:
					ordered.Add(-1)
				case <-done:
					return
				}
				if s.d.err != nil {
					return
				}
			case <-done:
				return
			}
		}
	}()
	for {
		s := &slot{ready: make(chan struct{})}
		t0 := time.Now()
		s.d.msg, s.d.err = it.Next()
		waited := time.Since(t0) >= waitedFor
		decoding.Add(1)
		if waited && ordered.Load() == 0 && s.d.err == nil {
			// A message that was waited for (the log is read as it is
			// written, not from a backlog), and nothing read before it
			// still held (each was handed over): decode it here and hand
			// it over directly, sparing a lone message (a command waiting
			// for its write) two handoffs. A backlog's messages come
			// without a wait and go to the decoders. The next message is
			// read only after, so the order holds.
			s.d.decode(seal)
			decoding.Add(-1)
			select {
			case out <- s.d:
			case <-done:
				return
			}
			if s.d.err != nil {
				return
			}
			continue
		}
		if s.d.err != nil {
			close(s.ready)
		} else {
			select {
			case todo <- s:
			case <-done:
				return
			}
		}
		ordered.Add(1)
		select {
		case order <- s:
		case <-done:
			return
		}
		if s.d.err != nil {
			return
		}
	}
}

// waitedFor is how long a Next call takes when it finds no message
// already buffered (it parks until one arrives): one found buffered takes
// well under a microsecond. Misjudging it costs only speed: a message of
// a backlog decoded by the reader, or a lone one by a decoder.
const waitedFor = 20 * time.Microsecond

// slot is a delivery being decoded; ready closes once it is.
type slot struct {
	d     delivery
	ready chan struct{}
}

// decode fills meta, ev, data and derr from msg; a message without
// JetStream metadata ends the stream. A message sealed under seal's key
// (events.CheckSealed) is decoded without being checked again.
func (d *delivery) decode(seal *events.Sealer) {
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
	// published it and whatever its headers claim: a header is not proof,
	// a seal that verifies under this node's key is.
	var sealed string
	if h := d.msg.Headers(); h != nil {
		sealed = h.Get(events.SealHeader)
	}
	d.data, d.derr = events.CheckSealed(seal, d.msg.Subject(), d.msg.Data(), sealed, ev)
}

// decodePayload checks ev (events.Check) and returns its decoded payload;
// an event this process checked already (ev.Checked) is only decoded.
func decodePayload(ev *events.Event) (events.Payload, error) {
	if ev.Checked {
		return events.DecodeData(ev)
	}
	return events.Check(ev)
}

// startPump runs pump on new goroutines; decoding is the number of
// messages read and not yet delivered; stop stops the iterator and the
// goroutines. seal (nil: none) verifies the messages' seals; prepare (nil:
// none) is called with each payload a decoder decoded (preparer).
func startPump(it jetstream.MessagesContext, buffer int, seal *events.Sealer, prepare func(events.Payload)) (deliveries <-chan delivery, decoding *atomic.Int64, stop func()) {
	ch := make(chan delivery, buffer)
	done := make(chan struct{})
	decoding = new(atomic.Int64)
	go pump(it, ch, decoding, done, max(runtime.GOMAXPROCS(0), 1), seal, prepare)
	return ch, decoding, func() { it.Stop(); close(done) }
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
