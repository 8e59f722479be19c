//go:build unix

package benchkit_test

import (
	"os"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// BenchmarkWorkloadFold folds the realistic workload of
// TestWorkloadIsValidAndFolds (sized by the same BENCHKIT_* variables;
// 20000 events, 2000 lessons, 10000 patterns by default) into an in-memory
// store, one sub-benchmark per model (BENCHKIT_MODEL picks one), and
// reports the process's CPU time per event (cpu-ns/op) next to wall time:
// with other work on the cores, CPU time is the steadier figure to compare
// models by. "checked" marks the events as validated by the appender
// (Lore-Checked), as the runtime sees them; "unchecked" validates each
// event in the fold, as TestWorkloadIsValidAndFolds does.
func BenchmarkWorkloadFold(b *testing.B) {
	n, kn, pn := envInt("BENCHKIT_EVENTS", 20000), envInt("BENCHKIT_KNOWLEDGE", 2000), envInt("BENCHKIT_PATTERNS", 10000)
	evs := preparedWorkload(b, n, kn, pn)
	for _, checked := range []bool{false, true} {
		name := "unchecked"
		if checked {
			name = "checked"
		}
		for _, m := range app.Models() {
			if only := os.Getenv("BENCHKIT_MODEL"); only != "" && only != m.Name() {
				continue
			}
			b.Run(name+"/"+m.Name(), func(b *testing.B) {
				var cpu time.Duration
				b.StopTimer()
				for range b.N {
					cpu += foldOnce(b, m, evs, checked)
				}
				b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(evs)*b.N), "cpu-ns/event")
			})
		}
	}
}

// foldOnce folds evs into a fresh in-memory store, committing every 1000
// events, and returns the process CPU time the folds and commits took.
func foldOnce(b *testing.B, m projector.Model, evs []*events.Event, checked bool) time.Duration {
	b.StopTimer()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	f, err := projector.NewFolder(st, []projector.Model{m}, false)
	if err != nil {
		b.Fatal(err)
	}
	cs := make([]events.Event, len(evs))
	for i, ev := range evs {
		cs[i] = *ev
		cs[i].Checked = checked
	}
	b.StartTimer()
	c0 := cputime.Used()
	for i := range cs {
		if _, err := f.Fold(&cs[i]); err != nil {
			b.Fatalf("model %s: %s: %v", m.Name(), cs[i].Type, err)
		}
		if f.Pending() >= 1000 {
			if _, err := f.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := f.Commit(); err != nil {
		b.Fatal(err)
	}
	cpu := cputime.Used() - c0
	b.StopTimer()
	return cpu
}

// BenchmarkFolderLanes folds the workload of BenchmarkWorkloadFold into
// every model at once, as the runtime does: model after model on one
// goroutine ("sequential"), and with a lane per model (Folder.Parallel),
// committing every 1000 events. Lanes gain wall time only with idle cores.
func BenchmarkFolderLanes(b *testing.B) {
	n, kn, pn := envInt("BENCHKIT_EVENTS", 20000), envInt("BENCHKIT_KNOWLEDGE", 2000), envInt("BENCHKIT_PATTERNS", 10000)
	evs := preparedWorkload(b, n, kn, pn)
	for _, parallel := range []bool{false, true} {
		name := "sequential"
		if parallel {
			name = "lanes"
		}
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
				if err != nil {
					b.Fatal(err)
				}
				f, err := projector.NewFolder(st, app.Models(), false)
				if err != nil {
					b.Fatal(err)
				}
				if parallel {
					f.Parallel()
				}
				cs := make([]events.Event, len(evs))
				for i, ev := range evs {
					cs[i] = *ev
					cs[i].Checked = true
				}
				commit := func() {
					if poison, err := f.Settle(); err != nil || len(poison) > 0 {
						b.Fatalf("settle: %v %v", poison, err)
					}
					if _, err := f.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				c0 := cputime.Used()
				for i := range cs {
					if _, err := f.Fold(&cs[i]); err != nil {
						b.Fatalf("%s: %v", cs[i].Type, err)
					}
					if f.Pending() >= 1000 {
						commit()
					}
				}
				commit()
				cpu += cputime.Used() - c0
				b.StopTimer()
				f.Close()
				st.Close()
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(evs)*b.N), "cpu-ns/event")
		})
	}
}
