//go:build unix

package benchkit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/test/natstest"
)

// BenchmarkReplay appends the workload of BenchmarkWorkloadFold (sized by
// the same BENCHKIT_* variables) to the log of a real embedded server, then
// measures what `lore bench` measures after its live projection: the raw
// consume of the log ("raw": an ordered consumer, nothing decoded), the
// full rebuild ("all": projector.Replay of every model into a fresh
// on-disk store with fsync'd commits) and the rebuild of each model alone
// (BENCHKIT_MODEL picks one). Each sub-benchmark reports events/s and the
// process's CPU time per event; the ratios of their ns/op to raw's are the
// bench's rebuild ratios, measured in one run. The events are sealed as
// a node seals them (events.Sealer) unless BENCHKIT_UNSEALED is set: then
// every event read is checked again, as from a publisher without the key.
func BenchmarkReplay(b *testing.B) {
	n, kn, pn := envInt("BENCHKIT_EVENTS", 20000), envInt("BENCHKIT_KNOWLEDGE", 2000), envInt("BENCHKIT_PATTERNS", 10000)
	evs := preparedWorkload(b, n, kn, pn)
	ctx := context.Background()
	s := natstest.Start(b)
	_, js := natstest.Connect(b, s.ClientURL())
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		b.Fatal(err)
	}
	a := events.NewAppender(js)
	var seal *events.Sealer
	if os.Getenv("BENCHKIT_UNSEALED") == "" {
		key, err := events.LoadSealKey(b.TempDir(), true)
		if err != nil {
			b.Fatal(err)
		}
		if seal, err = events.NewSealer(key); err != nil {
			b.Fatal(err)
		}
		a.Sealer = seal
	}
	for i := 0; i < len(evs); i += 1000 {
		chunk := make([]*events.Event, 0, 1000)
		for _, ev := range evs[i:min(i+1000, len(evs))] {
			c := *ev
			c.Seq = 0
			chunk = append(chunk, &c)
		}
		if _, err := a.AppendBatch(ctx, chunk); err != nil {
			b.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	msgs := info.State.Msgs
	per := func(b *testing.B, cpu time.Duration) {
		b.ReportMetric(float64(msgs)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(msgs*uint64(b.N)), "cpu-ns/event")
	}
	b.Run("raw", func(b *testing.B) {
		var cpu time.Duration
		for range b.N {
			c0 := cputime.Used()
			rawDrain(b, st, msgs)
			cpu += cputime.Used() - c0
		}
		per(b, cpu)
	})
	replay := func(b *testing.B, models []projector.Model) {
		var cpu time.Duration
		for range b.N {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "rebuild")
			store, err := projector.OpenStore(dir, projector.StoreOptions{Sync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			c0 := cputime.Used()
			stats, err := projector.Replay(ctx, js, store, models, projector.ReplayOptions{Sealer: seal})
			if err != nil {
				b.Fatal(err)
			}
			cpu += cputime.Used() - c0
			b.StopTimer()
			if stats.Poison > 0 {
				b.Fatalf("%d poison events", stats.Poison)
			}
			_ = store.Close()
			_ = os.RemoveAll(dir)
			b.StartTimer()
		}
		per(b, cpu)
	}
	only := os.Getenv("BENCHKIT_MODEL")
	if only == "" {
		b.Run("all", func(b *testing.B) { replay(b, app.Models()) })
	}
	for _, m := range app.Models() {
		if only != "" && only != m.Name() {
			continue
		}
		b.Run(m.Name(), func(b *testing.B) { replay(b, []projector.Model{m}) })
	}
}

// rawDrain reads the log's first n messages with an ordered consumer and
// decodes nothing: the bench's raw consume.
func rawDrain(b *testing.B, st jetstream.Stream, n uint64) {
	cons, err := st.OrderedConsumer(context.Background(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventsFilter}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for i := uint64(0); i < n; i++ {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
