package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

// runUntilStopped runs n until the returned stop is called; stop waits for
// Run to return and closes n (a clean stop).
func runUntilStopped(t testing.TB, n *node.Node) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		n.Close()
	}
}

// appendOutcomes appends n outcomes and waits until they are projected.
func appendOutcomes(t testing.TB, n *node.Node, count int) uint64 {
	t.Helper()
	evs := make([]*events.Event, count)
	for i := range evs {
		evs[i] = outcome(t, "default", fmt.Sprintf("bd-%d", i%40), day0.Add(time.Duration(i)*time.Minute), i%3 != 0)
	}
	res, err := n.Appender.AppendBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	last := res[len(res)-1].Seq
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	return last
}

// copyDir copies the tree at src to dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// TestCopiedFsyncAlwaysLogIsFoldedFully: the nats folder of a node that
// fsyncs every message (stopped cleanly, after a restart, so its durable
// consumer starts past 1 and has delivered and acknowledged the whole log)
// is copied into a fresh data folder; the new node folds the whole log
// whatever that consumer says, and health says so.
func TestCopiedFsyncAlwaysLogIsFoldedFully(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	cfg := node.Config{DataDir: d1, Embedded: node.EmbeddedOptions{Port: -1, SyncAlways: true}, TickInterval: -1}
	n := startNode(t, cfg)
	stop := runUntilStopped(t, n)
	appendOutcomes(t, n, 130)
	stop()
	n = startNode(t, cfg)
	stop = runUntilStopped(t, n)
	last := appendOutcomes(t, n, 400)
	stop()

	copyDir(t, filepath.Join(d1, "nats"), filepath.Join(d2, "nats"))
	cfg.DataDir = d2
	n2 := startNode(t, cfg)
	if _, _, err := n2.RestoreSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	runNode(t, n2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n2.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatalf("copied log: %v", err)
	}
	_, js := natstest.Connect(t, n2.ClientURL())
	if got, _ := lastSeq(t, js, events.LogStream); got != last {
		t.Fatalf("log at %d, want %d", got, last)
	}
}
