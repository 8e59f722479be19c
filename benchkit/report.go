package benchkit

import (
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"sort"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector/eventlog"
)

// Print writes the report for humans.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "lore bench: %d workload events (seed %d, %d writers), %d knowledge entries, %d patterns; log holds %d events\n",
		r.Events, r.Seed, r.Writers, r.Knowledge, r.Patterns, r.StreamEvents)
	fmt.Fprintf(w, "memory: store cache %d MiB, pattern cache %d MiB, knowledge cache %d MiB, Go memory limit %s, collector %s\n\n",
		r.Memory.StoreCacheBytes>>20, r.Memory.PatternCacheBytes>>20, r.Memory.KnowledgeCacheBytes>>20, limitText(r.Memory.LimitBytes),
		gcText(r.Memory.GCFloorBytes))
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
	fmt.Fprintf(w, "\nfold cost per event, rebuild of each model alone, first and last %d workload events:\n", r.foldWindow())
	for _, m := range r.RebuildModels {
		fmt.Fprintf(w, "  %-12s start %8.1f µs  end %8.1f µs  end ÷ start %.2f\n", m.Model, m.FoldStartUs, m.FoldEndUs, m.FoldGrowth)
	}
	fmt.Fprintf(w, "\nend-to-end lag (append ack → projector commit) at %d events/s (reached %.0f/s): p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d events)\n",
		r.LagRate, r.LagOfferedPerS, r.Lag.P50us/1e3, r.Lag.P99us/1e3, r.Lag.MaxUs/1e3, r.Lag.N)
	for _, e := range r.LagEpisodes {
		fmt.Fprintf(w, "  lagging at or above p99 from paced event %d (%s): %d events, worst %.2f ms (waits: delivery %.2f ms, fold and commit %.2f ms; slowest fsync %.2f ms; longest wait for a core %.2f ms)\n",
			e.Index, e.Type, e.Events, e.MaxUs/1e3, e.DeliveryUs/1e3, e.FoldCommitUs/1e3, e.FsyncUs/1e3, e.SchedWaitUs/1e3)
	}
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
	a := r.Audit
	fmt.Fprintf(w, "\naudits (--as-of/--at-seq at random points): p50 %.1f ms, p99 %.1f ms (%d audits; p99 = %.4f of a full rebuild); %d checkpoints kept (interval %d events, %d taken live, spaced %d apart at the end), %.1f MiB beyond the live store\n",
		a.P50us/1e3, a.P99us/1e3, a.N, a.P99ToRebuild, a.Checkpoints, a.Every, a.Taken, a.Spacing, float64(a.ExtraBytes)/(1<<20))
	for _, l := range []struct {
		name string
		l    Latency
	}{{"fold (view and model)", a.Fold}, {"query on the audit's view", a.Query}, {"query on the live model", a.LiveQuery}, {"at a checkpoint (nothing to fold)", a.AtCheckpoint}} {
		fmt.Fprintf(w, "  %-30s p50 %8.1f ms  p99 %8.1f ms\n", l.name, l.l.P50us/1e3, l.l.P99us/1e3)
	}
	for _, by := range []map[string]Latency{a.ByKind, a.ByQuery} {
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %-30s p50 %8.1f ms  p99 %8.1f ms  (%d audits)\n", k, by[k].P50us/1e3, by[k].P99us/1e3, by[k].N)
		}
	}
	fmt.Fprintf(w, "\npeak RSS: %.0f MiB\n\nphases (wall time, peak RSS; audit checkpoint gap fills run beside it):\n", float64(r.PeakRSSBytes)/(1<<20))
	total := 0.0
	for _, p := range r.Phases {
		fmt.Fprintf(w, "  %-20s %9.1f s %8.0f MiB", p.Name, p.Seconds, mib(p.PeakRSSBytes))
		if p.AuditFills > 0 {
			fmt.Fprintf(w, "  (%d gap fills, %.1f s)", p.AuditFills, p.AuditFillSeconds)
		}
		fmt.Fprintln(w)
		total += p.Seconds
	}
	fmt.Fprintf(w, "  %-20s %9.1f s\n", "total", total)
	fmt.Fprintln(w, "\ntargets (reported, not asserted):")
	for _, t := range r.Targets {
		mark := "met"
		if !t.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "  %-38s %8.3f  goal %-7s %s\n", t.Name, t.Value, t.Goal, mark)
	}
}

// Print writes the soak report for humans: a sample per minute (or per
// tenth of the soak when shorter), then the window figures.
func (r *SoakReport) Print(w io.Writer) {
	fmt.Fprintf(w, "lore bench --soak: %.0f s at %d events/s (sent %d, %.0f/s) and %d injections/s (%d calls, %d failed)\n\n",
		r.Seconds, r.Rate, r.Sent, r.SentPerS, r.InjectRate, r.Injections, r.InjectErrors)
	fmt.Fprintf(w, "%8s %10s %10s %12s %12s %10s %10s\n", "t", "RSS MiB", "heap MiB", "blockcache", "memtables", "goroutines", "lag")
	step := 60.0
	if r.Seconds < 600 {
		step = r.Seconds / 10
	}
	next := 0.0
	for i, s := range r.Samples {
		if s.Seconds+1e-9 < next && i != len(r.Samples)-1 {
			continue
		}
		next = s.Seconds + step
		if !s.Scraped {
			fmt.Fprintf(w, "%7.0fs %10.1f %10s %12s %12s %10s %10s\n", s.Seconds, mib(s.RSSBytes), "-", "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, "%7.0fs %10.1f %10.1f %12.1f %12.1f %10d %10d\n", s.Seconds, mib(s.RSSBytes), mib(s.HeapInuseBytes),
			mib(s.BlockCacheBytes), mib(s.MemTableBytes), s.Goroutines, s.LagEvents)
	}
	a, b := r.AtWarmupEnd, r.AtEnd
	fmt.Fprintf(w, "\nwarm-up ends at %.0f s; mean of the last samples before it and before the end:\n", r.WarmupEndSeconds)
	fmt.Fprintf(w, "  RSS        %8.1f → %8.1f MiB  (%+.1f %%)\n", mib(a.RSSBytes), mib(b.RSSBytes), r.RSSGrowthPct)
	fmt.Fprintf(w, "  RSS anon   %8.1f → %8.1f MiB; file %.1f → %.1f MiB\n", mib(a.RSSAnonBytes), mib(b.RSSAnonBytes), mib(a.RSSFileBytes), mib(b.RSSFileBytes))
	fmt.Fprintf(w, "  Go heap    %8.1f → %8.1f MiB  (%+.1f %%)\n", mib(a.HeapInuseBytes), mib(b.HeapInuseBytes), r.HeapGrowthPct)
	fmt.Fprintf(w, "  held heap  %8.1f → %8.1f MiB; next GC at %.1f → %.1f MiB\n", mib(a.HeapRetainedBytes), mib(b.HeapRetainedBytes), mib(a.NextGCBytes), mib(b.NextGCBytes))
	fmt.Fprintf(w, "  blockcache %8.1f → %8.1f MiB\n", mib(a.BlockCacheBytes), mib(b.BlockCacheBytes))
	fmt.Fprintf(w, "  memtables  %8.1f → %8.1f MiB\n", mib(a.MemTableBytes), mib(b.MemTableBytes))
	fmt.Fprintf(w, "  C malloc   %8.1f → %8.1f MiB in use; %.1f → %.1f MiB freed and held\n", mib(a.MallocInUseBytes), mib(b.MallocInUseBytes), mib(a.MallocFreeBytes), mib(b.MallocFreeBytes))
	fmt.Fprintf(w, "  C trims    %8d → %8d (%.3f → %.3f s in all)\n", a.MallocTrims, b.MallocTrims, a.MallocTrimSeconds, b.MallocTrimSeconds)
	fmt.Fprintf(w, "  goroutines %8d → %8d\n", a.Goroutines, b.Goroutines)
	fmt.Fprintf(w, "  lag        %8d → %8d events not yet projected (projected %.0f/s of %.0f/s sent)\n",
		a.LagEvents, b.LagEvents, r.ProjectedPerS, r.SentPerS)
	fmt.Fprintf(w, "peak RSS %.1f MiB\n", mib(r.PeakRSSBytes))
	keys := make([]string, 0, len(r.Inject))
	for k := range r.Inject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := r.Inject[k]
		fmt.Fprintf(w, "  %-20s p50 %8.1f µs  p99 %8.1f µs  (%d calls)\n", k, l.P50us, l.P99us, l.N)
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(w, "heap profile: %s\n", p)
	}
	mark := "met"
	if !r.Target.Met {
		mark = "MISSED"
	}
	fmt.Fprintf(w, "\ntarget (reported, not asserted): %s %.1f, goal %s: %s\n", r.Target.Name, r.Target.Value, r.Target.Goal, mark)
}

// foldWindow is the window of the per-model fold costs.
func (r *Report) foldWindow() uint64 {
	for _, m := range r.RebuildModels {
		return m.Window
	}
	return 0
}

// Print writes the pool report for humans.
func (r *PoolReport) Print(w io.Writer) {
	fmt.Fprintf(w, "lore bench --pool %d: one project pool (N swarm + N/2 hive lessons, caps raised), N registry patterns; ratio = N ÷ %d, same run\n\n", r.N, r.Base)
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "  N = %-6d  swarm %d, hive %d entries, %d patterns; seeded and folded in %.1f s; an injection considers %d entries\n",
			s.N, s.SwarmEntries, s.HiveEntries, s.Patterns, s.SeedSeconds, s.InjectShowing)
	}
	fmt.Fprintf(w, "\n%-34s %21s %21s %15s\n", "", fmt.Sprintf("N = %d p50 / p99", r.Base), fmt.Sprintf("N = %d p50 / p99", r.N), "ratio p50 / p99")
	for _, o := range r.Ops {
		late := ""
		if o.NotProjected+o.BaseNotProjected > 0 {
			late = fmt.Sprintf("  (replied before folded, the API's wait ran out: %d at %d, %d at %d)", o.BaseNotProjected, r.Base, o.NotProjected, r.N)
		}
		fmt.Fprintf(w, "%-34s %9.0f / %7.0f µs %9.0f / %7.0f µs %7.2f / %5.2f%s\n", o.Op+" ("+o.Path+")",
			o.Base.P50us, o.Base.P99us, o.P50us, o.P99us, o.P50Ratio, o.P99Ratio, late)
	}
	fmt.Fprintf(w, "\npeak RSS: %.0f MiB\n", float64(r.PeakRSSBytes)/(1<<20))
}

// MemorySettings are the process's memory settings during a run: the
// node's cache budgets and the Go soft memory limit (0: none).
type MemorySettings struct {
	StoreCacheBytes     int64 `json:"store_cache_bytes"`
	PatternCacheBytes   int64 `json:"pattern_cache_bytes"`
	KnowledgeCacheBytes int64 `json:"knowledge_cache_bytes"`
	LimitBytes          int64 `json:"memory_limit_bytes"`
	// GCFloorBytes is the heap the collector lets the process reach
	// before it collects (lore's --gc budget; 0: Go's proportion alone).
	GCFloorBytes int64 `json:"gc_floor_bytes"`
}

func memorySettings(b node.MemoryBudgets) MemorySettings {
	b = b.WithDefaults()
	m := MemorySettings{StoreCacheBytes: b.StoreCache, PatternCacheBytes: b.PatternCache, KnowledgeCacheBytes: b.KnowledgeCache}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		m.LimitBytes = l
	}
	if b.MemoryLimit > 0 { // the process's (a floor moves the runtime's under it)
		m.LimitBytes = b.MemoryLimit
	}
	m.GCFloorBytes = b.GCFloor
	return m
}

func gcText(floor int64) string {
	if floor > 0 {
		return fmt.Sprintf("from a %d MiB heap (budget)", floor>>20)
	}
	return "proportional"
}

func limitText(b int64) string {
	if b == 0 {
		return "none"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
