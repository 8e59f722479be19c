package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/node"
)

// TestBench runs a small `lore bench` end to end in-process: every figure
// of the report is measured (nothing zero), the rebuild folds the live
// store's bytes, each model is rebuilt alone (its fold cost per event
// measured over the workload's first and last 750 events), and both injection
// endpoints answer in-process and over NATS. Speed is not asserted.
func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and runs every measurement")
	}
	// The bench sets its process's memory as lore serve does.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	profiles := t.TempDir()
	code, out, errs := cli(t, context.Background(), "", "bench", "--json", "--events", "1500", "--knowledge", "200",
		"--patterns", "100", "--rate", "200", "--rate-for", "500ms", "--queries", "40", "--store-cache", "48", "--memory-limit", "1900",
		"--heap-profiles", profiles)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	var rep benchkit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if m := rep.Memory; m.StoreCacheBytes != 48<<20 || m.LimitBytes != 1900<<20 || m.PatternCacheBytes != node.DefaultPatternCacheMiB<<20 {
		t.Errorf("memory settings reported %+v, want a 48 MiB store cache, the default pattern cache and a 1900 MiB limit", m)
	}
	// A heap profile at the end of each phase, and at the peak: the
	// progress names how much of the peak is Go memory.
	if fi, err := os.Stat(filepath.Join(profiles, "heap-04-live-projection.pprof")); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile of the live projection: %v", err)
	}
	if peaks, _ := filepath.Glob(filepath.Join(profiles, "heap-peak-*.pprof")); len(peaks) == 0 {
		t.Error("no heap profile at the peak")
	}
	if !strings.Contains(errs, "peak RSS") || !strings.Contains(errs, "outside it") {
		t.Errorf("no peak line in the progress: %q", errs)
	}
	if got := debug.SetMemoryLimit(-1); got != 1900<<20 {
		t.Errorf("the process's memory limit is %d during the bench's report, want --memory-limit's %d", got, 1900<<20)
	}
	// The report alone is on stdout (it decoded); progress is on stderr.
	if !strings.Contains(errs, "live projection of") {
		t.Errorf("bench --json: no progress lines on stderr: %q", errs)
	}
	if want := uint64(1500 + 200 + 1); rep.StreamEvents != want { // 100 patterns: one import event
		t.Errorf("log holds %d events, want %d", rep.StreamEvents, want)
	}
	for name, v := range map[string]float64{"raw publish": rep.RawPublishPerS, "append": rep.AppendPerS,
		"raw consume": rep.RawConsumePerS, "projection": rep.ProjectionPerS, "rebuild": rep.RebuildSeconds} {
		if !(v > 0) {
			t.Errorf("%s not measured: %v", name, v)
		}
	}
	if !rep.RebuildMatches {
		t.Error("the rebuild's digest differs from the live store's")
	}
	var models []string
	for _, m := range rep.RebuildModels {
		if !(m.Seconds > 0) {
			t.Errorf("rebuild of %s alone not measured", m.Model)
		}
		if m.Window != 750 || !(m.FoldStartUs > 0) || !(m.FoldEndUs > 0) || !(m.FoldGrowth > 0) {
			t.Errorf("fold cost of %s at the start and the end: %+v, want both measured over 750 events", m.Model, m)
		}
		models = append(models, m.Model)
	}
	if got := strings.Join(models, ","); len(models) != len(app.Models()) || !strings.Contains(got, "eventlog") || !strings.Contains(got, "crossloop") {
		t.Errorf("models rebuilt alone: %s, want each of the %d", got, len(app.Models()))
	}
	if rep.Lag.N != 100 || !(rep.Lag.P99us > 0) || !(rep.LagOfferedPerS > 0) {
		t.Errorf("lag: %+v, want 100 events measured", rep.Lag)
	}
	for _, k := range []string{"knowledge.inject/in-process", "knowledge.inject/nats", "patterns.inject/in-process", "patterns.inject/nats"} {
		if l := rep.Inject[k]; l.N == 0 || !(l.P99us > 0) {
			t.Errorf("%s: %+v", k, l)
		}
	}
	// The registry the injections ranked: the 100 seeded patterns and what
	// the workload's completed loops added, every active one indexed.
	if r := rep.InjectRegistry; r.Active < 100 || r.Indexed != r.Active {
		t.Errorf("registry ranked by patterns.inject: %+v, want the 100 seeded patterns or more, each indexed", r)
	}
	if y := rep.ReadYourWrites; y.N == 0 || !(y.P50us > 0) || y.RawPublish.N == 0 || !(y.P50Ratio > 0) || len(y.ByCommand) != 5 {
		t.Errorf("read your writes: %+v, want every command measured next to the baseline", y)
	}
	if a := rep.Audit; a.N == 0 || !(a.P99us > 0) || a.Every <= 0 || !(a.P99ToRebuild > 0) {
		t.Errorf("audit: %+v, want audits timed at random points next to the rebuild", a)
	}
	if a := rep.Audit; len(a.ByKind) != 3 || len(a.ByQuery) != 4 || a.Fold.N != a.N || a.Query.N != a.N || a.LiveQuery.N != a.N || (a.AtCheckpoint.N > 0) != (a.Checkpoints > 0) {
		t.Errorf("audit: by kind %v, by query %v, fold %+v, query %+v, live %+v, at a checkpoint %+v: want every audit in each split",
			a.ByKind, a.ByQuery, a.Fold, a.Query, a.LiveQuery, a.AtCheckpoint)
	} else {
		n := 0
		for _, l := range a.ByKind {
			n += l.N
		}
		if n != a.N {
			t.Errorf("audits by kind add up to %d, want %d", n, a.N)
		}
	}
	if len(rep.Targets) != 9 || rep.PeakRSSBytes <= 0 {
		t.Errorf("targets %d, peak RSS %d", len(rep.Targets), rep.PeakRSSBytes)
	}
	var phases []string
	for _, p := range rep.Phases {
		if !(p.Seconds > 0) || p.PeakRSSBytes <= 0 || p.PeakRSSBytes > rep.PeakRSSBytes {
			t.Errorf("phase %+v: want its wall time and a peak RSS within the run's (%d)", p, rep.PeakRSSBytes)
		}
		phases = append(phases, p.Name)
	}
	for _, want := range []string{"seed", "append", "live projection", "full rebuild", "rebuild crossloop", "audits", "paced load", "injection", "read your writes"} {
		if !slices.Contains(phases, want) {
			t.Errorf("phases %v: no %q", phases, want)
		}
	}
}

// TestBenchPool runs `lore bench --pool` end to end at a small size: both
// pools are seeded as asked (N swarm and N/2 hive entries in the project),
// every operation is measured at both sizes with its ratio, and the text
// report names them. The pool stays as seeded through phase.complete (the
// bench fails otherwise: nothing is archived or promoted by age). Speed
// is not asserted.
func TestBenchPool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two nodes")
	}
	code, out, errs := cli(t, context.Background(), "", "bench", "--pool", "160", "--queries", "6", "--json")
	if code != 0 {
		t.Fatalf("bench --pool: exit %d: %s", code, errs)
	}
	var rep benchkit.PoolReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --pool --json: %v\n%s", err, out)
	}
	if rep.N != 160 || rep.Base != benchkit.PoolBase || len(rep.Sizes) != 2 {
		t.Fatalf("pool report: %+v", rep)
	}
	for i, want := range []int{benchkit.PoolBase, 160} {
		if s := rep.Sizes[i]; s.N != want || s.SwarmEntries != want || s.HiveEntries != want/2 || s.Patterns != want {
			t.Errorf("pool %d: %+v, want %d swarm, %d hive entries and %d patterns", i, s, want, want/2, want)
		}
	}
	ops := map[string]bool{}
	for _, o := range rep.Ops {
		ops[o.Op+"/"+o.Path] = true
		if o.N != 6 || o.Base.N != 6 || !(o.P50us > 0) || !(o.P99us > 0) || !(o.P50Ratio > 0) || !(o.P99Ratio > 0) {
			t.Errorf("%s (%s): %+v, want 6 calls at each size and their ratios", o.Op, o.Path, o)
		}
	}
	for _, want := range []string{"knowledge.add/nats", "knowledge.add+inject/nats", "knowledge.inject/in-process",
		"knowledge.inject/nats", "phase.complete/nats", "patterns.inject/in-process", "patterns.inject/nats"} {
		if !ops[want] {
			t.Errorf("no %s in %v", want, ops)
		}
	}
	code, out, errs = cli(t, context.Background(), "", "bench", "--pool", "100", "--queries", "2")
	if code != 0 || !strings.Contains(out, "knowledge.add+inject (nats)") || !strings.Contains(out, "ratio p50 / p99") {
		t.Errorf("bench --pool text report: exit %d\n%s%s", code, out, errs)
	}
}

// TestBenchBadFlags: a pool outside knowledge.swarm_max_entries' range,
// --pool with --soak, or a memory budget lore serve refuses is bad input
// (exit 2) naming the flag.
func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--pool", "99"}, {"--pool", "10001"}, {"--pool", "500", "--soak", "1s"},
		{"--store-cache", "0"}, {"--memory-limit", "-2"}} {
		code, _, errs := cli(t, context.Background(), "", append([]string{"bench"}, args...)...)
		if code != exitBadInput || !strings.Contains(errs, args[0]) {
			t.Errorf("bench %v: exit %d (%s), want 2 naming %s", args, code, errs, args[0])
		}
	}
}

// TestBenchStopsOnSIGTERM runs `lore bench` as a process and sends it
// SIGTERM during its full rebuild: the rebuild stops (no later phase
// starts), the bench exits with an error and no report, and leaves
// nothing in its temp folder.
func TestBenchStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a bench process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(exe, "bench", "--events", "30000", "--knowledge", "500", "--patterns", "500", "--queries", "50")
	cmd.Env = append(os.Environ(), soakChildEnv+"=1", "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the full rebuild has started and committed to its store (its
	// folder holds data), the bench gets SIGTERM: the rebuild is under way.
	var log strings.Builder
	rebuilding := make(chan struct{})
	signalled := make(chan bool, 1)
	go func() {
		select {
		case <-rebuilding:
		case <-time.After(10 * time.Minute): // only ends a test that would hang
			signalled <- false
			return
		}
		for {
			dirs, _ := filepath.Glob(filepath.Join(tmp, "lore-bench-*", "rebuild"))
			if len(dirs) == 1 && dirSize(dirs[0]) > 256<<10 {
				signalled <- cmd.Process.Signal(syscall.SIGTERM) == nil
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "full rebuild of") {
			close(rebuilding)
		}
	}
	err = cmd.Wait()
	if !<-signalled {
		t.Fatalf("the bench was not signalled during its rebuild: %v\n%s", err, log.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure || !strings.Contains(log.String(), "bench stopped by a signal") {
		t.Errorf("after SIGTERM: %v, want exit %d and the bench stopped\n%s", err, exitFailure, log.String())
	}
	if out.Len() != 0 {
		t.Errorf("a stopped bench printed a report:\n%s", out.String())
	}
	if strings.Contains(log.String(), "model alone") {
		t.Errorf("the bench went on to its next phase after SIGTERM:\n%s", log.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in the temp folder: %s", e.Name())
	}
}

// dirSize is the size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestMemoryFlagsForwardWhatWasSet: lore bench --soak passes the memory
// flags the user set, and only those, to the serving lore serve, in lore
// serve's own form.
func TestMemoryFlagsForwardWhatWasSet(t *testing.T) {
	fl := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	var m memoryFlags
	m.bind(fl)
	if err := fl.Parse([]string{"--memory-limit", "700", "--store-cache=96"}); err != nil {
		t.Fatal(err)
	}
	if got, want := m.changed(), []string{"--store-cache=96", "--memory-limit=700"}; !slices.Equal(got, want) {
		t.Errorf("forwarded %q, want %q", got, want)
	}
	fl = pflag.NewFlagSet("bench", pflag.ContinueOnError)
	m = memoryFlags{}
	m.bind(fl)
	if got := m.changed(); len(got) != 0 {
		t.Errorf("nothing set, yet %q forwarded", got)
	}
}
