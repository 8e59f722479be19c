// Package test holds lore's end-to-end tests: real embedded NATS servers on
// 127.0.0.1 and real Pebble stores in temp folders.
package test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/loredev/lore/node"
)

// Env of the child process that runs a projector (see runChildProjector).
const (
	envChild = "LORE_TEST_CHILD_PROJECTOR"
	envURL   = "LORE_TEST_NATS_URL"
	envDir   = "LORE_TEST_DATA_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(runChildProjector())
	}
	os.Exit(m.Run())
}

// runChildProjector runs one projector against the parent's NATS until it
// is killed: the crash tests SIGKILL it mid-batch.
func runChildProjector() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	n, err := node.Start(ctx, node.Config{DataDir: os.Getenv(envDir), NatsURL: os.Getenv(envURL), TickInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child projector:", err)
		return 1
	}
	defer n.Close()
	if err := n.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child projector:", err)
		return 1
	}
	return 0
}
