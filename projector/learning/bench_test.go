package learning_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/learning"
)

// feedbackEvents builds n events from seq first+1: explicit feedback on 8
// criteria and, every tenth event, a pattern observation on 4 patterns,
// one event a minute.
func feedbackEvents(b *testing.B, first, n int) []*events.Event {
	b.Helper()
	out := make([]*events.Event, 0, n)
	types := []string{"helpful", "harmful", "neutral", "helpful"}
	for i := first; i < first+n; i++ {
		at := day0.Add(time.Duration(i) * time.Minute)
		var ev *events.Event
		var err error
		if i%10 == 9 {
			ev, err = events.New("pattern.observed/v1", "", "bench", at, &events.PatternObserved{
				Content: fmt.Sprintf("pattern %d", (i/10)%4), Success: i%3 != 0, BeadID: "bd-1"})
		} else {
			ev, err = events.New("feedback.recorded/v1", "", "bench", at, &events.FeedbackRecorded{
				Criterion: fmt.Sprintf("criterion-%d", i%8), Type: types[i%4], RawValue: float64(i%100) / 100})
		}
		if err != nil {
			b.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		out = append(out, ev)
	}
	return out
}

// foldAll folds n events into st in batches of 10000 (one commit each).
func foldAll(b *testing.B, st *projector.Store, m projector.Model, first, n int) {
	b.Helper()
	const chunk = 10000
	for done := 0; done < n; done += chunk {
		k := min(chunk, n-done)
		poison, err := projector.FoldEvents(st, []projector.Model{m}, feedbackEvents(b, first+done, k))
		if err != nil || len(poison) > 0 {
			b.Fatalf("fold: %v %v", err, poison)
		}
	}
}

func newBenchStore(b *testing.B) (*projector.Store, *learning.Model) {
	b.Helper()
	st, err := projector.OpenStore(b.TempDir(), projector.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	m, err := learning.New(learning.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	return st, m
}

// BenchmarkFold measures folds per second into an on-disk store (event
// building excluded).
func BenchmarkFold(b *testing.B) {
	st, m := newBenchStore(b)
	b.ReportAllocs()
	const chunk = 10000
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		k := min(chunk, b.N-done)
		b.StopTimer()
		evs := feedbackEvents(b, done, k)
		b.StartTimer()
		if poison, err := projector.FoldEvents(st, []projector.Model{m}, evs); err != nil || len(poison) > 0 {
			b.Fatalf("fold: %v %v", err, poison)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkQueryAt1M measures the weight and maturity queries over a read
// model holding 1M feedback events (900k on 8 criteria, 100k on 4
// patterns): O(1) per criterion and pattern, whatever the event count.
func BenchmarkQueryAt1M(b *testing.B) {
	const n = 1_000_000
	st, m := newBenchStore(b)
	foldAll(b, st, m, 0, n)
	r := st.Model(learning.ModelName)
	now := day0.Add(n*time.Minute + time.Hour)
	b.Run("weights", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ws, err := m.Weights(r, "default", now)
			if err != nil || len(ws) != 8 {
				b.Fatalf("%v %d", err, len(ws))
			}
		}
	})
	b.Run("maturity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ps, err := m.Patterns(r, "default", now, "")
			if err != nil || len(ps) != 4 {
				b.Fatalf("%v %d", err, len(ps))
			}
		}
	})
}
