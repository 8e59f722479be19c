package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/benchkit"
)

// TestBenchSoak runs `lore bench --soak` for a few seconds end to end: a
// serving child process under events and injections over NATS, its memory
// sampled. The report's fields are present and plausible; the heap
// profiles are real files. Memory growth is reported, not asserted.
func TestBenchSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a serving child process")
	}
	profiles := t.TempDir()
	code, out, errs := cli(t, context.Background(), "", "bench", "--json", "--soak", "8s", "--rate", "200",
		"--inject-rate", "20", "--sample-every", "1s", "--soak-knowledge", "100", "--soak-patterns", "50",
		"--heap-profiles", profiles)
	if code != 0 {
		t.Fatalf("bench --soak: exit %d: %s", code, errs)
	}
	var rep benchkit.SoakReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --soak --json: %v\n%s", err, out)
	}
	if rep.Rate != 200 || rep.InjectRate != 20 || rep.Seconds < 8 {
		t.Errorf("rate %d, inject rate %d, %.1f s: want the flags' 200, 20, >= 8 s", rep.Rate, rep.InjectRate, rep.Seconds)
	}
	// The generator catches up with the schedule at each tick: most of
	// 8 s × 200 events were sent, whatever the machine's load.
	if rep.Sent < 800 || rep.Injections < 40 {
		t.Errorf("sent %d events and %d injections in %.1f s: the load was not generated", rep.Sent, rep.Injections, rep.Seconds)
	}
	if rep.InjectErrors != 0 {
		t.Errorf("%d injection calls failed", rep.InjectErrors)
	}
	for _, k := range []string{"knowledge.inject", "patterns.inject"} {
		if l := rep.Inject[k]; l.N == 0 || !(l.P99us > 0) {
			t.Errorf("%s: %+v, want calls timed", k, l)
		}
	}
	if len(rep.Samples) < 4 {
		t.Fatalf("%d samples, want one a second", len(rep.Samples))
	}
	scraped := 0
	for _, s := range rep.Samples {
		// A Go process serving NATS, JetStream and Pebble is more than
		// 10 MiB and less than 64 GiB resident.
		if s.RSSBytes < 10<<20 || s.RSSBytes > 64<<30 {
			t.Errorf("sample at %.1f s: RSS %d bytes", s.Seconds, s.RSSBytes)
		}
		// Its anonymous and file pages are read in the same instant:
		// parts of it.
		if s.RSSAnonBytes <= 0 || s.RSSFileBytes < 0 || s.RSSAnonBytes+s.RSSFileBytes > s.RSSBytes {
			t.Errorf("sample at %.1f s: RSS anon %d, file %d bytes (RSS %d)", s.Seconds, s.RSSAnonBytes, s.RSSFileBytes, s.RSSBytes)
		}
		if s.Scraped {
			scraped++
			if s.HeapRetainedBytes < s.HeapInuseBytes || s.NextGCBytes <= 0 {
				t.Errorf("sample at %.1f s: heap held %d below in use %d, or next GC at %d", s.Seconds,
					s.HeapRetainedBytes, s.HeapInuseBytes, s.NextGCBytes)
			}
			if s.HeapInuseBytes <= 0 || s.HeapInuseBytes > s.RSSBytes || s.Goroutines < 10 || s.MemTableBytes <= 0 {
				t.Errorf("sample at %.1f s: heap %d, goroutines %d, memtables %d bytes (RSS %d)", s.Seconds,
					s.HeapInuseBytes, s.Goroutines, s.MemTableBytes, s.RSSBytes)
			}
		}
	}
	if scraped == 0 {
		t.Error("no sample read the server's metrics")
	}
	if rep.AtWarmupEnd.RSSBytes <= 0 || rep.AtEnd.RSSBytes <= 0 || rep.PeakRSSBytes < rep.AtEnd.RSSBytes {
		t.Errorf("window: at warm-up end %d, at end %d, peak %d bytes", rep.AtWarmupEnd.RSSBytes, rep.AtEnd.RSSBytes, rep.PeakRSSBytes)
	}
	// The projector folds a light load as it comes: over the window it
	// folds about what was sent (the lag is a mean, so not exactly).
	if rep.ProjectedPerS <= 0 || rep.ProjectedPerS > 2*rep.SentPerS {
		t.Errorf("projected %.0f/s of %.0f/s sent over the window", rep.ProjectedPerS, rep.SentPerS)
	}
	if rep.WarmupEndSeconds <= 0 || rep.WarmupEndSeconds >= rep.Seconds || rep.Target.Goal != "<= 10" {
		t.Errorf("warm-up end %.1f s of %.1f s, target %+v", rep.WarmupEndSeconds, rep.Seconds, rep.Target)
	}
	if len(rep.Profiles) == 0 {
		t.Fatal("no heap profile saved")
	}
	for _, p := range rep.Profiles {
		b, err := os.ReadFile(p)
		if err != nil || filepath.Dir(p) != profiles || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("heap profile %s: %v, want a gzip file in %s", p, err, profiles)
		}
	}
	// The human form names the window's figures.
	code, out, errs = cli(t, context.Background(), "", "bench", "--soak", "3s", "--rate", "100", "--inject-rate", "5",
		"--sample-every", "1s", "--soak-knowledge", "10", "--soak-patterns", "10")
	if code != 0 {
		t.Fatalf("bench --soak: exit %d: %s", code, errs)
	}
	for _, want := range []string{"RSS", "Go heap", "blockcache", "memtables", "warm-up ends at", "target"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchSoakServeFlags: --soak-serve reaches the serving child (a
// budget it refuses ends the soak with the child's reason); what is not a
// flag is refused before anything starts (exit 2).
func TestBenchSoakServeFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a serving child process")
	}
	code, _, errs := cli(t, context.Background(), "", "bench", "--soak", "5s", "--soak-serve", "knowledge-cache=32")
	if code != exitBadInput || !strings.Contains(errs, "--soak-serve") {
		t.Fatalf("bench --soak-serve without --: exit %d, %q; want %d naming --soak-serve", code, errs, exitBadInput)
	}
	code, _, errs = cli(t, context.Background(), "", "bench", "--soak", "5s", "--rate", "50", "--soak-knowledge", "0",
		"--soak-patterns", "0", "--soak-serve=--knowledge-cache=0")
	if code == 0 || !strings.Contains(errs, "knowledge-cache") {
		t.Fatalf("bench --soak with a budget the server refuses: exit %d, %q; want a failure naming knowledge-cache", code, errs)
	}
}
