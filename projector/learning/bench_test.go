package learning_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/benchkit/cputime"
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
// building excluded), schema validation of each event included.
func BenchmarkFold(b *testing.B) {
	benchFold(b, func(first, n int) []*events.Event { return feedbackEvents(b, first, n) })
}

// BenchmarkFoldChecked is BenchmarkFold with the events marked as
// validated by lore's appender (Lore-Checked), as the runtime sees them:
// the projector then skips schema validation, so this measures the fold.
func BenchmarkFoldChecked(b *testing.B) {
	benchFold(b, func(first, n int) []*events.Event {
		evs := feedbackEvents(b, first, n)
		for _, ev := range evs {
			ev.Checked = true
		}
		return evs
	})
}

// outcomeEvents builds n validated outcome events from seq first+1, one a
// minute: 1–3 of three criteria, one of four strategies, a decomposition
// text of 300–800 bytes that names 0–2 of the twelve strategies, 500 beads.
func outcomeEvents(b *testing.B, first, n int) []*events.Event {
	b.Helper()
	strategies := []string{"file-based", "feature-based", "risk-based", "research-based"}
	criteria := []string{"type_safe", "small_diff", "tests_pass"}
	texts := []string{
		"1. Refactor the parser in internal/parser/cache.go, keep the handler\n2. Test the schema in internal/schema/query.go, retry timeout lock\n3. Document the worker in internal/worker/queue.go, mutex channel buffer\n",
		"Split by feature: one team each.\n1. Migrate the index in internal/index/router.go, stream cursor batch\n2. Write tests alongside implementation in internal/commit/snapshot.go\n3. Respect the dependency chain between replay and decoder\n",
		"1. Split the encoder in internal/encoder/config.go, flag migration fixture\n2. Test the mock in internal/mock/client.go, server socket token session\n3. Refactor the tenant in internal/tenant/module.go\n4. Handle shared types first, then the package interface struct pointer\n",
		"We parallelize everything we can.\n1. Document the slice in internal/slice/map.go, goroutine context deadline backoff\n2. Migrate the jitter in internal/jitter/checksum.go, digest ledger journal pipeline\n3. Test the stage in internal/stage/shard.go, replica leader follower quorum\n",
	}
	out := make([]*events.Event, 0, n)
	for i := first; i < first+n; i++ {
		at := day0.Add(time.Duration(i) * time.Minute)
		ev, err := events.New("outcome.recorded/v1", "", "bench", at, &events.OutcomeRecorded{
			BeadID: fmt.Sprintf("bd-%d.%d", i%500, i/500), DurationMs: int64(i%40) * 60000, RetryCount: i % 3,
			Success: i%4 != 0, Strategy: strategies[i%4], Criteria: criteria[:1+i%3], Decomposition: texts[i%len(texts)],
			FilesTouched: []string{"internal/a.go", "internal/b.go"}})
		if err != nil {
			b.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		ev.Checked = true
		out = append(out, ev)
	}
	return out
}

// BenchmarkFoldOutcome measures outcome folds per second (each feeds every
// criterion, the strategy and every extracted strategy).
func BenchmarkFoldOutcome(b *testing.B) {
	benchFold(b, func(first, n int) []*events.Event { return outcomeEvents(b, first, n) })
}

// benchFold folds b.N events from gen in chunks of 10000 (one FoldEvents
// and commit each) and reports events/s of wall time and the process's CPU
// time per event (cpu-ns/op), which other load on the cores distorts less.
func benchFold(b *testing.B, gen func(first, n int) []*events.Event) {
	st, m := newBenchStore(b)
	b.ReportAllocs()
	const chunk = 10000
	var cpu time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		k := min(chunk, b.N-done)
		b.StopTimer()
		evs := gen(done, k)
		b.StartTimer()
		c0 := cputime.Used()
		if poison, err := projector.FoldEvents(st, []projector.Model{m}, evs); err != nil || len(poison) > 0 {
			b.Fatalf("fold: %v %v", err, poison)
		}
		cpu += cputime.Used() - c0
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
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

// BenchmarkFoldObservations measures the fold of pattern observations
// named by content, one pattern, three in four successes, in commits of
// 10000 events into an on-disk store (the fold of a batch of observations
// appended with learning.observe_patterns).
func BenchmarkFoldObservations(b *testing.B) {
	benchFold(b, func(first, n int) []*events.Event {
		out := make([]*events.Event, 0, n)
		for i := first; i < first+n; i++ {
			ev, err := events.New("pattern.observed/v1", "", "bench", day0.Add(time.Duration(i)*time.Millisecond),
				&events.PatternObserved{Content: "Split the run by file type", Success: i%4 != 0})
			if err != nil {
				b.Fatal(err)
			}
			ev.Seq, ev.Checked = uint64(i+1), true
			out = append(out, ev)
		}
		return out
	})
}

// BenchmarkFoldObservationsBatched is BenchmarkFoldObservations with the
// observations carried by pattern.observations/v1 events of 1000 (one op
// is one observation), each event at its own time.
func BenchmarkFoldObservationsBatched(b *testing.B) {
	benchFold(b, func(first, n int) []*events.Event {
		var out []*events.Event
		for lo := first; lo < first+n; lo += events.MaxObservationsPerEvent {
			hi := min(lo+events.MaxObservationsPerEvent, first+n)
			obs := make([]events.PatternObserved, 0, hi-lo)
			for i := lo; i < hi; i++ {
				obs = append(obs, events.PatternObserved{Content: "Split the run by file type", Success: i%4 != 0})
			}
			ev, err := events.New("pattern.observations/v1", "", "bench", day0.Add(time.Duration(lo)*time.Millisecond),
				&events.PatternObservations{Observations: obs})
			if err != nil {
				b.Fatal(err)
			}
			ev.Seq, ev.Checked = uint64(lo+1), true
			out = append(out, ev)
		}
		return out
	})
}
