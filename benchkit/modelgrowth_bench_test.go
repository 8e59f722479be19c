//go:build unix

package benchkit_test

import (
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// BenchmarkModelGrowth folds the soak's workload into each read model
// alone (BENCHKIT_MODEL picks one): BENCHKIT_KNOWLEDGE lessons and
// BENCHKIT_PATTERNS registry patterns (1 000 each by default, as
// `lore bench --soak`), then BENCHKIT_EVENTS workload events (300 000 by
// default) streamed from the generator, into a Pebble store on disk
// (no fsync), committing every 1 000 events. It reports the CPU time of
// the folds and commits (generating and preparing events excluded) per
// workload event over the first
// and the last 10 000 events (cpu-ns@start, cpu-ns@end) and their ratio
// (end/start): a fold whose cost grows with the history shows a ratio
// above 1. BENCHKIT_WINDOW_PROFILES=PREFIX writes a CPU profile of each
// window's folds (PREFIX-<model>-<first event>.prof; not with -cpuprofile).
func BenchmarkModelGrowth(b *testing.B) {
	n, kn, pn := envInt("BENCHKIT_EVENTS", 300_000), envInt("BENCHKIT_KNOWLEDGE", 1000), envInt("BENCHKIT_PATTERNS", 1000)
	const window = 10_000
	prof := os.Getenv("BENCHKIT_WINDOW_PROFILES")
	for _, m := range app.Models() {
		if only := os.Getenv("BENCHKIT_MODEL"); only != "" && only != m.Name() {
			continue
		}
		b.Run(m.Name(), func(b *testing.B) {
			for range b.N {
				st, err := projector.OpenStore(b.TempDir(), projector.StoreOptions{})
				if err != nil {
					b.Fatal(err)
				}
				f, err := projector.NewFolder(st, []projector.Model{m}, false)
				if err != nil {
					b.Fatal(err)
				}
				a := events.NewAppender(nil)
				seq := uint64(0)
				// fold prepares evs (not measured), then folds and commits
				// them and returns the CPU time that took.
				fold := func(evs []*events.Event) time.Duration {
					for _, ev := range evs {
						if _, err := a.Prepare(ev); err != nil {
							b.Fatalf("%s invalid: %v", ev.Type, err)
						}
						seq++
						ev.Seq, ev.Checked = seq, true
					}
					c0 := cputime.Used()
					for _, ev := range evs {
						if _, err := f.Fold(ev); err != nil {
							b.Fatalf("%s: %v", ev.Type, err)
						}
					}
					if _, err := f.Commit(); err != nil {
						b.Fatal(err)
					}
					return cputime.Used() - c0
				}
				kevs, err := benchkit.SeedKnowledge(1, kn)
				if err != nil {
					b.Fatal(err)
				}
				pevs, err := benchkit.SeedPatterns(1, pn)
				if err != nil {
					b.Fatal(err)
				}
				seed := append(kevs, pevs...)
				for i := 0; i < len(seed); i += 1000 {
					fold(seed[i:min(i+1000, len(seed))])
				}
				s := benchkit.Workload{Seed: 1}.Stream()
				var start, end time.Duration
				batch := make([]*events.Event, 0, 1000)
				for i := 0; i < n; i += len(batch) {
					batch = batch[:0]
					for range min(1000, n-i) {
						ev, _, err := s.Next()
						if err != nil {
							b.Fatal(err)
						}
						batch = append(batch, ev)
					}
					if prof != "" && (i == 0 || i == n-window) {
						startProfile(b, fmt.Sprintf("%s-%s-%d.prof", prof, m.Name(), i))
					}
					c := fold(batch)
					if prof != "" && (i+len(batch) == window || i+len(batch) == n) {
						pprof.StopCPUProfile()
					}
					if i < window {
						start += c
					}
					if i >= n-window {
						end += c
					}
				}
				b.ReportMetric(float64(start.Nanoseconds())/window, "cpu-ns@start")
				b.ReportMetric(float64(end.Nanoseconds())/window, "cpu-ns@end")
				b.ReportMetric(float64(end)/float64(start), "end/start")
				f.Close()
				st.Close()
			}
		})
	}
}

// startProfile starts a CPU profile into file.
func startProfile(b *testing.B, file string) {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
}
