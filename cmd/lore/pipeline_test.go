package main

import (
	"context"
	"strings"
	"testing"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
)

// cliNode starts an embedded node serving the API; the CLI reaches it with
// --nats.
func cliNode(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := n.Serve(api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = svc.Stop(); n.Close() })
	return n.ClientURL()
}

// TestOutcomeSendsOnlyTheFlagsGiven: a flag left out reaches lore as a
// missing field, refused (exit 2) with record.event's error; --id makes a
// re-run append nothing new and print the same decision.
func TestOutcomeSendsOnlyTheFlagsGiven(t *testing.T) {
	url := cliNode(t)
	bg := context.Background()
	code, out, errs := cli(t, bg, "", "--nats", url, "outcome", "bd-x")
	if code != 2 || !strings.Contains(errs, `field "data.duration_ms": is required`) {
		t.Fatalf("outcome without flags: exit %d, out %q, err %q", code, out, errs)
	}
	code, _, errs = cli(t, bg, "", "--nats", url, "outcome", "bd-x", "--duration", "3m", "--retries", "0")
	if code != 2 || !strings.Contains(errs, `field "data.success": is required`) {
		t.Fatalf("outcome without --success/--failed: exit %d, err %q", code, errs)
	}
	run := func() string {
		code, out, errs := cli(t, bg, "", "--nats", url, "--json", "--id", "ci-run-42", "outcome", "bd-x", "--success", "--duration", "3m", "--retries", "0")
		if code != 0 {
			t.Fatalf("outcome: exit %d: %s", code, errs)
		}
		return out
	}
	first, second := run(), run()
	if first != second || !strings.Contains(first, `"event_id": "ci-run-42"`) || !strings.Contains(first, `"type": "helpful"`) {
		t.Errorf("re-run with --id:\n%s\n%s", first, second)
	}
	// One outcome in the log: the bead's last outcome is the keyed one.
	code, out, errs = cli(t, bg, "", "--nats", url, "--json", "events", "tail", "-n", "10")
	if code != 0 || strings.Count(out, `"outcome.recorded/v1"`) != 1 {
		t.Errorf("events tail: exit %d, %d outcomes:\n%s%s", code, strings.Count(out, `"outcome.recorded/v1"`), out, errs)
	}
}
