package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
)

// setStoredFormat rewrites the format of a stopped node's read model as
// another lore would have left it (REQUIRES: the node is closed).
func setStoredFormat(t *testing.T, data, format string) {
	t.Helper()
	st, err := projector.OpenStore(filepath.Join(data, "pebble"), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Reset(format, 0); err != nil {
		t.Fatal(err)
	}
}

func startNode(data string) (*node.Node, error) {
	return node.Start(context.Background(), node.Config{DataDir: data, TickInterval: -1,
		Embedded: node.EmbeddedOptions{Port: -1}})
}

func TestStartRefusesAReadModelFromTheFuture(t *testing.T) {
	data := t.TempDir()
	n, err := startNode(data)
	if err != nil {
		t.Fatal(err)
	}
	_, now, _ := n.FormatChange()
	n.Close()
	future := withStoreLayout(t, now, +1)
	setStoredFormat(t, data, future)

	_, err = startNode(data)
	if !errors.Is(err, projector.ErrFutureFormat) {
		t.Fatalf("start on a future read model: %v, want ErrFutureFormat", err)
	}
	for _, part := range []string{future, now, filepath.Join(data, "pebble"), "upgrade lore or remove"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	st, err := projector.OpenStore(filepath.Join(data, "pebble"), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if have, _ := st.StoredVersion(); have != future {
		t.Fatalf("the refused read model was changed: format %q, want %q", have, future)
	}
}

func TestStartRebuildsAnOlderReadModel(t *testing.T) {
	data := t.TempDir()
	n, err := startNode(data)
	if err != nil {
		t.Fatal(err)
	}
	_, now, _ := n.FormatChange()
	n.Close()
	older := withStoreLayout(t, now, -1)
	setStoredFormat(t, data, older)

	n, err = startNode(data)
	if err != nil {
		t.Fatalf("start on an older read model: %v", err)
	}
	defer n.Close()
	was, cur, rebuild := n.FormatChange()
	if !rebuild || was != older || cur != now {
		t.Fatalf("FormatChange = %q, %q, %v; want %q, %q, true", was, cur, rebuild, older, now)
	}
	if err := n.Runtime.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if have, _ := n.Store.StoredVersion(); have != now {
		t.Fatalf("after the rebuild starts the format is %q, want %q", have, now)
	}
}

// withStoreLayout returns format with its store layout version moved by delta.
func withStoreLayout(t *testing.T, format string, delta int) string {
	t.Helper()
	head, rest, _ := strings.Cut(format, ";")
	var n int
	if _, err := fmt.Sscanf(head, "store=%d", &n); err != nil {
		t.Fatalf("format %q: %v", format, err)
	}
	return fmt.Sprintf("store=%d;%s", n+delta, rest)
}
