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
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Fatalf("memory limit %d MiB, want 100", got>>20)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("--gc budget under a limit: GOGC %d, want -1 (collected at the limit)", got)
	}
	stop()
	if errs := <-served; !strings.Contains(errs, "memory limit (100 MiB) is below twice the pattern and knowledge caches (128 MiB)") {
		t.Fatalf("no warning of a limit below the caches: %q", errs)
	}
	for _, bad := range [][]string{{"--knowledge-cache", "0"}, {"--pattern-cache", "-1"}, {"--store-cache", "0"}, {"--memory-limit", "-2"}, {"--gc", "sometimes"}} {
		args := append([]string{"serve", "--data", t.TempDir(), "--port", "-1"}, bad...)
		if code, _, errs := cli(t, context.Background(), "", args...); code != exitBadInput || !strings.Contains(errs, strings.TrimPrefix(bad[0], "--")) {
			t.Fatalf("serve %v: exit %d, %q; want %d naming the flag", bad, code, errs, exitBadInput)
		}
	}
}

// TestGCPercent: the collector's mode as lore serve applies it: budget
// turns proportional collection off only under a limit; GOGC from the
// environment stands unless --gc is given.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		mode                   string
		given, envSet, limited bool
		want                   int
		ok                     bool
	}{
		{gcBudget, false, false, true, -1, true},
		{gcBudget, false, false, false, 100, true}, // no limit: nothing else would collect
		{gcBudget, false, true, true, 0, false},    // GOGC stands
		{gcBudget, true, true, true, -1, true},     // --gc given wins
		{gcProportional, true, false, true, 100, true},
		{gcProportional, true, true, true, 0, false}, // at the environment's GOGC
	} {
		got, ok := gcPercent(c.mode, c.given, c.envSet, c.limited)
		if got != c.want || ok != c.ok {
			t.Errorf("gcPercent(%q, given %v, env %v, limited %v) = %d, %v; want %d, %v", c.mode, c.given, c.envSet, c.limited, got, ok, c.want, c.ok)
		}
	}
}
