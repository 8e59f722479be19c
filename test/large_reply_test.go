package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

// A reply larger than the server's max_payload cannot be sent. The caller
// gets an error at once that names both sizes (code 413), at the raw
// NATS door and through the Go client (the CLI's and MCP's), instead of
// waiting for its timeout; the same query with a limit answers; a large
// registry is listed page by page, and patterns.metrics lists as many
// loops as asked.
func TestReplyBeyondMaxPayload(t *testing.T) {
	const limit = 64 << 10
	n := startNode(t, node.Config{Embedded: node.EmbeddedOptions{MaxPayload: limit}})
	runNode(t, n)
	a := serveAPI(t, n)
	nc, _ := natstest.Connect(t, n.ClientURL())

	// Three documents, each within the limit, whose patterns together
	// are not (distinct seeds: distinct texts; distinct ids).
	patterns := 0
	for i, k := range []int{60, 61, 62} {
		doc := bytes.ReplaceAll(registryDoc(k), []byte("pat-error-imp0-"), fmt.Appendf(nil, "pat-error-doc%d-", i))
		if len(doc) >= limit {
			t.Fatalf("a registry document takes %d bytes, beyond the %d the test's server carries", len(doc), limit)
		}
		var reply api.CommandReply
		if err := a.call("patterns", "import", map[string]any{"document": json.RawMessage(doc)}, &reply); err != nil {
			t.Fatal(err)
		}
		patterns += k
	}

	// The raw door: an error reply, quickly, naming both sizes.
	start := time.Now()
	m, err := nc.Request("lore.api.patterns.list", []byte(`{}`), 20*time.Second)
	if err != nil {
		t.Fatalf("patterns.list of %d patterns: %v after %s, want an error reply", patterns, err, time.Since(start))
	}
	msg := m.Header.Get(micro.ErrorHeader)
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "413" || !strings.Contains(msg, fmt.Sprint(limit)) || !strings.Contains(msg, "max_payload") {
		t.Fatalf("patterns.list beyond max_payload: code %q, error %q; want 413 naming the limit %d", code, msg, limit)
	}
	var body api.Error
	if err := json.Unmarshal(m.Data, &body); err != nil || body.Code != "413" {
		t.Fatalf("error body %s (%v), want code 413", m.Data, err)
	}

	// The Go client: the sentinel.
	var all []regPattern
	if err := a.call("patterns", "list", map[string]any{}, &all); !errors.Is(err, app.ErrTooLarge) {
		t.Fatalf("client patterns.list: %v, want app.ErrTooLarge", err)
	}

	// Pages: every pattern once, in the listing's order.
	var ids []string
	for offset := 0; ; offset += 25 {
		var page []regPattern
		if err := a.call("patterns", "list", map[string]any{"offset": offset, "limit": 25}, &page); err != nil {
			t.Fatalf("page at %d: %v", offset, err)
		}
		if len(page) > 25 {
			t.Fatalf("page at %d holds %d patterns, want at most 25", offset, len(page))
		}
		for _, p := range page {
			ids = append(ids, p.ID)
		}
		if len(page) < 25 {
			break
		}
	}
	if len(ids) != patterns || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != patterns {
		t.Fatalf("pages listed %d ids (sorted %v), want the %d patterns once each in id order", len(ids), slices.IsSorted(ids), patterns)
	}
	for _, bad := range []map[string]any{{"offset": -1}, {"limit": -2}} {
		if err := a.call("patterns", "list", bad, nil); !errors.Is(err, app.ErrBadRequest) {
			t.Errorf("patterns.list %v: %v, want a bad request", bad, err)
		}
	}

	// patterns.metrics: every completed loop by default, as many as asked.
	t0 := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		ralph(t, a, t0.Add(time.Duration(i)*time.Minute), fmt.Sprintf("Fix the flaky cache test number %d", i), nullFix(), "success", false, nil)
	}
	type metrics struct {
		Loops []struct {
			LoopID string `json:"loop_id"`
		} `json:"loops"`
	}
	var every, two, none metrics
	if err := a.call("patterns", "metrics", map[string]any{}, &every); err != nil {
		t.Fatal(err)
	}
	if err := a.call("patterns", "metrics", map[string]any{"loops": 2}, &two); err != nil {
		t.Fatal(err)
	}
	if err := a.call("patterns", "metrics", map[string]any{"loops": 0}, &none); err != nil {
		t.Fatal(err)
	}
	if len(every.Loops) != 3 || len(two.Loops) != 2 || len(none.Loops) != 0 ||
		two.Loops[0] != every.Loops[0] || two.Loops[1] != every.Loops[1] {
		t.Fatalf("metrics loops: every %v, loops 2 %v, loops 0 %v; want 3, the first 2 of them, none", every.Loops, two.Loops, none.Loops)
	}
	if err := a.call("patterns", "metrics", map[string]any{"loops": -1}, nil); !errors.Is(err, app.ErrBadRequest) {
		t.Errorf("patterns.metrics loops -1: %v, want a bad request", err)
	}
}
