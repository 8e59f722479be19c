package test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/test/natstest"
)

// benchN is the number of events per measurement (LORE_BENCH_N, default 100k).
func benchN() int {
	if v, err := strconv.Atoi(os.Getenv("LORE_BENCH_N")); err == nil && v > 0 {
		return v
	}
	return 100_000
}

func benchEvents(b *testing.B, n int) []*events.Event {
	evs := make([]*events.Event, n)
	for i := range evs {
		evs[i] = outcome(b, fmt.Sprintf("p%d", i%4), fmt.Sprintf("bd-%d.%d", i%500, i%7), day0.Add(time.Duration(i)*time.Second), i%5 != 0)
	}
	return evs
}

// rawPublish publishes the events' wire form with async JetStream publishes
// and Nats-Msg-Id, as fast as the server acks: the baseline of appends.
func rawPublish(b *testing.B, js jetstream.JetStream, app *events.Appender, evs []*events.Event) time.Duration {
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		m, err := app.Prepare(ev)
		if err != nil {
			b.Fatal(err)
		}
		m.Header.Set(jetstream.MsgIDHeader, "raw-"+ev.ID)
		msgs[i] = m
	}
	start := time.Now()
	for _, m := range msgs {
		// A long stall wait: on a loaded machine the default (200 ms) fails
		// the baseline instead of measuring it.
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		b.Fatal("raw publish did not complete")
	}
	return time.Since(start)
}

// rawConsume drains the log with an ordered consumer (AckNone) and decodes
// nothing: the baseline of projection.
func rawConsume(b *testing.B, js jetstream.JetStream, n int) time.Duration {
	ctx := context.Background()
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventsFilter}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for i := 0; i < n; i++ {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

func benchServer(b *testing.B) jetstream.JetStream {
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv.ClientURL(), nats.MaxPingsOutstanding(100))
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		b.Fatal(err)
	}
	return js
}

// BenchmarkAppend compares lore's validated, idempotent batch append with
// raw async JetStream publishes (with Nats-Msg-Id) on the same server.
func BenchmarkAppend(b *testing.B) {
	n := benchN()
	for b.Loop() {
		js := benchServer(b)
		a := events.NewAppender(js)
		evs := benchEvents(b, n)
		raw := rawPublish(b, js, a, evs)
		evs = benchEvents(b, n)
		start := time.Now()
		for i := 0; i < n; i += 1000 {
			if _, err := a.AppendBatch(context.Background(), evs[i:min(i+1000, n)]); err != nil {
				b.Fatal(err)
			}
		}
		lore := time.Since(start)
		rawRate, loreRate := float64(n)/raw.Seconds(), float64(n)/lore.Seconds()
		b.ReportMetric(rawRate, "raw-publish/s")
		b.ReportMetric(loreRate, "lore-append/s")
		b.ReportMetric(loreRate/rawRate, "append/raw")
	}
}

// BenchmarkProjection compares a full rebuild of lore's read models (every
// registered model, and the log model alone) with a raw ordered-consumer
// drain of the same stream.
func BenchmarkProjection(b *testing.B) {
	n := benchN()
	js := benchServer(b)
	a := events.NewAppender(js)
	evs := benchEvents(b, n)
	for i := 0; i < n; i += 1000 {
		if _, err := a.AppendBatch(context.Background(), evs[i:min(i+1000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	rebuild := func(models []projector.Model) time.Duration {
		st, err := projector.OpenStore(b.TempDir(), projector.StoreOptions{Sync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		start := time.Now()
		stats, err := projector.Replay(context.Background(), js, st, models, projector.ReplayOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if stats.Folded != uint64(n) {
			b.Fatalf("folded %d of %d", stats.Folded, n)
		}
		return time.Since(start)
	}
	for b.Loop() {
		raw := rawConsume(b, js, n)
		logOnly := rebuild([]projector.Model{eventlog.Model{}})
		all := rebuild(app.Models())
		rawRate := float64(n) / raw.Seconds()
		b.ReportMetric(rawRate, "raw-consume/s")
		b.ReportMetric(float64(n)/logOnly.Seconds(), "project-log/s")
		b.ReportMetric(float64(n)/all.Seconds(), "project-all/s")
		b.ReportMetric(raw.Seconds()/logOnly.Seconds(), "log/raw")
		b.ReportMetric(raw.Seconds()/all.Seconds(), "all/raw")
	}
}
