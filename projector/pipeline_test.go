package projector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// startJetStream starts an embedded JetStream server on loopback for the
// test and returns a client of it; both stop when the test ends.
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := events.NewJetStream(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestPumpKeepsTheLogOrder: whether a message is decoded by the reader
// (one it waited for, the sequencer holding none) or by the decoders (a
// backlog), the pump hands the messages over in the log's order, each
// once, and its count of messages held returns to zero. The log is
// written in bursts of every size separated by pauses, while it is read,
// so both ways and their switches are taken.
func TestPumpKeepsTheLogOrder(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PUMP", Subjects: []string{"pump.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(64))
	if err != nil {
		t.Fatal(err)
	}
	deliveries, decoding, stop := startPump(it, 64, nil, nil)
	defer stop()

	const total = 3000
	written := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(3, 4))
		for n := 0; n < total; {
			burst := min(1+rng.IntN(80), total-n)
			if rng.IntN(3) == 0 {
				burst = 1 // a lone message: the reader decodes it
			}
			for range burst {
				// Not an event: each decodes to a poison delivery, in order all the same.
				if _, err := js.PublishAsync(fmt.Sprintf("pump.%d", n), []byte(fmt.Sprintf(`{"n":%d}`, n))); err != nil {
					written <- err
					return
				}
				n++
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				written <- ctx.Err()
				return
			}
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		written <- nil
	}()
	for want := uint64(1); want <= total; want++ {
		d := next(deliveries, time.Minute)
		if d.err != nil {
			t.Fatalf("delivery %d: %v", want, d.err)
		}
		if got := d.meta.Sequence.Stream; got != want {
			t.Fatalf("delivered seq %d, want %d: the pump reordered the log", got, want)
		}
		if d.ev != nil || d.derr == nil {
			t.Fatalf("seq %d: not an event, but decoded without an error", want)
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if d := next(deliveries, 50*time.Millisecond); d.err != errNoMessage {
		t.Fatalf("a delivery past the log's end: %+v", d)
	}
	if n := decoding.Load(); n != 0 {
		t.Fatalf("%d messages still counted as held once all were delivered", n)
	}
}
