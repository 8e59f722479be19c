package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/test/natstest"
)

// TestServeMemoryFlags: lore serve sets the process's soft memory limit
// from --memory-limit (and says so when it is below twice the caches);
// budgets out of range exit 2 before anything starts.
func TestServeMemoryFlags(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(was)
	gcWas := debug.SetGCPercent(100)
	defer debug.SetGCPercent(gcWas)
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan string, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0", "--metrics", "", "--ui", "",
			"--store-cache", "32", "--pattern-cache", "32", "--knowledge-cache", "32", "--memory-limit", "100", "--gc", "budget")
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
		served <- errs
	}()
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
	// --gc budget: GOGC off, the limit moved within the 100 MiB cap.
	if got := debug.SetMemoryLimit(-1); got > 100<<20 || got < 100<<20/3*2 {
		t.Fatalf("memory limit %d MiB, want between the floor (66) and the cap (100)", got>>20)
	}
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("--gc budget: GOGC %d, want off (-1)", p)
	}
	stop()
	errs := <-served
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Fatalf("after serve the memory limit is %d MiB, want the cap of 100 put back", got>>20)
	}
	if !strings.Contains(errs, "memory limit (100 MiB) is below twice the pattern and knowledge caches (128 MiB)") {
		t.Fatalf("no warning of a limit below the caches: %q", errs)
	}
	for _, bad := range [][]string{{"--knowledge-cache", "0"}, {"--pattern-cache", "-1"}, {"--store-cache", "0"}, {"--memory-limit", "-2"}, {"--gc", "sometimes"}} {
		args := append([]string{"serve", "--data", t.TempDir(), "--port", "-1"}, bad...)
		if code, _, errs := cli(t, context.Background(), "", args...); code != exitBadInput || !strings.Contains(errs, strings.TrimPrefix(bad[0], "--")) {
			t.Fatalf("serve %v: exit %d, %q; want %d naming the flag", bad, code, errs, exitBadInput)
		}
	}
}

// TestCollectorFor: the collector's mode as lore serve applies it:
// budget is a floor of two thirds of the limit, only under a limit; GOGC
// from the environment stands unless --gc is given.
func TestCollectorFor(t *testing.T) {
	const limit = 960 << 20
	for _, c := range []struct {
		mode          string
		given, envSet bool
		limit         int64
		want          collector
	}{
		{gcBudget, false, false, limit, collector{floor: 640 << 20}},
		{gcBudget, false, false, 0, collector{set: true, percent: 100}}, // no limit: Go's default
		{gcBudget, false, true, limit, collector{}},                     // GOGC stands
		{gcBudget, true, true, limit, collector{floor: 640 << 20}},
		{gcProportional, true, false, limit, collector{set: true, percent: 100}},
		{gcProportional, true, true, limit, collector{}}, // at the environment's GOGC
	} {
		if got := collectorFor(c.mode, c.given, c.envSet, c.limit); got != c.want {
			t.Errorf("collectorFor(%q, given %v, env %v, limit %d) = %+v; want %+v", c.mode, c.given, c.envSet, c.limit, got, c.want)
		}
	}
}
