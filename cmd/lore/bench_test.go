package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
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
	code, out, errs := cli(t, context.Background(), "", "bench", "--json", "--events", "1500", "--knowledge", "200",
		"--patterns", "100", "--rate", "200", "--rate-for", "500ms", "--queries", "40")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, errs)
	}
	var rep benchkit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
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
	if rep.Lag.N != 100 || !(rep.Lag.P99us > 0) {
		t.Errorf("lag: %+v, want 100 events measured", rep.Lag)
	}
	for _, k := range []string{"knowledge.inject/in-process", "knowledge.inject/nats", "patterns.inject/in-process", "patterns.inject/nats"} {
		if l := rep.Inject[k]; l.N == 0 || !(l.P99us > 0) {
			t.Errorf("%s: %+v", k, l)
		}
	}
	if y := rep.ReadYourWrites; y.N == 0 || !(y.P50us > 0) || y.RawPublish.N == 0 || !(y.P50Ratio > 0) || len(y.ByCommand) != 5 {
		t.Errorf("read your writes: %+v, want every command measured next to the baseline", y)
	}
	if a := rep.Audit; a.N == 0 || !(a.P99us > 0) || a.Every <= 0 || !(a.P99ToRebuild > 0) {
		t.Errorf("audit: %+v, want audits timed at random points next to the rebuild", a)
	}
	if len(rep.Targets) != 8 || rep.PeakRSSBytes <= 0 {
		t.Errorf("targets %d, peak RSS %d", len(rep.Targets), rep.PeakRSSBytes)
	}
}
