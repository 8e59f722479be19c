package benchkit

import (
	"fmt"
	"io"
	"sort"

	"github.com/loredev/lore/projector/eventlog"
)

// Print writes the report for humans.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "lore bench: %d workload events (seed %d, %d writers), %d knowledge entries, %d patterns; log holds %d events\n\n",
		r.Events, r.Seed, r.Writers, r.Knowledge, r.Patterns, r.StreamEvents)
	fmt.Fprintf(w, "%-34s %12s %12s %8s\n", "", "raw", "lore", "ratio")
	fmt.Fprintf(w, "%-34s %10.0f/s %10.0f/s %8.2f\n", "append (AppendBatch) vs publish", r.RawPublishPerS, r.AppendPerS, r.AppendRatio)
	fmt.Fprintf(w, "%-34s %10.0f/s %10.0f/s %8.2f\n", "projection (live) vs consume", r.RawConsumePerS, r.ProjectionPerS, r.ProjectionRatio)
	fmt.Fprintf(w, "%-34s %11.2fs %11.2fs %8.2f  (time ratio; digest matches live: %v)\n", "full rebuild vs consume",
		r.RawConsumeSeconds, r.RebuildSeconds, r.RebuildRatio, r.RebuildMatches)
	for _, m := range r.RebuildModels {
		note := ""
		if m.Model == eventlog.Name {
			note = "  (the runtime without the domain folds)"
		}
		fmt.Fprintf(w, "%-34s %11.2fs %11.2fs %8.2f%s\n", "rebuild, "+m.Model+" model alone",
			r.RawConsumeSeconds, m.Seconds, m.TimeRatio, note)
	}
	fmt.Fprintf(w, "\nend-to-end lag (append ack → projector commit) at %d events/s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d events)\n",
		r.LagRate, r.Lag.P50us/1e3, r.Lag.P99us/1e3, r.Lag.MaxUs/1e3, r.Lag.N)
	y := r.ReadYourWrites
	fmt.Fprintf(w, "\nread your writes (commands one after another over NATS, replied once folded): p50 %.0f µs, p99 %.0f µs (%d calls)\n",
		y.P50us, y.P99us, y.N)
	fmt.Fprintf(w, "  baseline, raw JetStream publish round trip: p50 %.0f µs, p99 %.0f µs; ratio p50 %.2f×, p99 %.2f×\n",
		y.RawPublish.P50us, y.RawPublish.P99us, y.P50Ratio, y.P99Ratio)
	ckeys := make([]string, 0, len(y.ByCommand))
	for k := range y.ByCommand {
		ckeys = append(ckeys, k)
	}
	sort.Strings(ckeys)
	for _, k := range ckeys {
		l := y.ByCommand[k]
		fmt.Fprintf(w, "  %-30s p50 %8.1f µs  p99 %8.1f µs\n", k, l.P50us, l.P99us)
	}
	keys := make([]string, 0, len(r.Inject))
	for k := range r.Inject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(w, "\ninjection queries:")
	for _, k := range keys {
		l := r.Inject[k]
		fmt.Fprintf(w, "  %-30s p50 %8.1f µs  p99 %8.1f µs  (%d calls)\n", k, l.P50us, l.P99us, l.N)
	}
	fmt.Fprintf(w, "\npeak RSS: %.0f MiB\n\ntargets (reported, not asserted):\n", float64(r.PeakRSSBytes)/(1<<20))
	for _, t := range r.Targets {
		mark := "met"
		if !t.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "  %-38s %8.3f  goal %-7s %s\n", t.Name, t.Value, t.Goal, mark)
	}
}
