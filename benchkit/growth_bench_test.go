//go:build unix

package benchkit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// BenchmarkCrossloopGrowth shows how the cross-loop fold's cost per event
// moves with the registry: it imports the bench's patterns
// (benchkit.SeedPatterns, BENCHKIT_PATTERNS, 100 000 by default) into one
// in-memory store and, each time the registry reaches 10k, 50k and 100k
// patterns, folds 5 000 events of the workload (a new prefix each time).
// It reports the CPU time per imported pattern over the last 5 000
// imported (import-ns@Nk) and per workload event (event-ns@Nk).
func BenchmarkCrossloopGrowth(b *testing.B) {
	pn := envInt("BENCHKIT_PATTERNS", 100_000)
	marks := map[int]bool{10_000: true, 50_000: true, 100_000: true, pn: true}
	pats, err := benchkit.SeedPatterns(1, pn)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		b.StopTimer()
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			b.Fatal(err)
		}
		f, err := projector.NewFolder(st, []projector.Model{crossloop.New(crossloop.Config{})}, false)
		if err != nil {
			b.Fatal(err)
		}
		a := events.NewAppender(nil)
		seq := uint64(0)
		fold := func(evs []*events.Event) {
			for _, ev := range evs {
				c := *ev
				if _, err := a.Prepare(&c); err != nil {
					b.Fatalf("%s invalid: %v", ev.Type, err)
				}
				seq++
				c.Seq, c.Checked = seq, true
				if _, err := f.Fold(&c); err != nil {
					b.Fatalf("%s: %v", c.Type, err)
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
		}
		const per, window = 500, 5000 // patterns per import event; events measured
		var cpus []time.Duration      // CPU time of each import event
		b.StartTimer()
		for i := range pats {
			c0 := cputime.Used()
			fold(pats[i : i+1])
			cpus = append(cpus, cputime.Used()-c0)
			n := (i + 1) * per
			if !marks[n] {
				continue
			}
			var last time.Duration
			for _, c := range cpus[max(0, len(cpus)-window/per):] {
				last += c
			}
			b.ReportMetric(float64(last.Nanoseconds())/window, fmt.Sprintf("import-ns@%dk", n/1000))
			g, err := benchkit.Workload{Seed: 1, Prefix: fmt.Sprintf("g%d", n)}.Generate(window)
			if err != nil {
				b.Fatal(err)
			}
			c0 = cputime.Used()
			fold(g.Events)
			b.ReportMetric(float64((cputime.Used()-c0).Nanoseconds())/window, fmt.Sprintf("event-ns@%dk", n/1000))
		}
		b.StopTimer()
		f.Close()
		st.Close()
	}
}
