package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMCPCommandKeepsServing drives `lore mcp --embed` as an agent's client
// would, over its stdin and stdout: a malformed line, a message that is not
// JSON-RPC and a batch (refused under 2025-06-18) each get their error
// reply, and the requests after them are answered.
func TestMCPCommandKeepsServing(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`hello`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"`,
		`[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"learning_weights","arguments":{"bogus":1}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"call","arguments":{"endpoint":"audit.types"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	}, "\n") // the last line has no end: the input's end closes it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code, out, errs := cli(t, ctx, in, "mcp", "--embed", "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("lore mcp exited %d: %s\n%s", code, errs, out)
	}
	type reply struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	byID := map[string]reply{}
	var nulls []reply
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		var r reply
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatalf("stdout line %q is not one JSON-RPC reply: %v", ln, err)
		}
		if string(r.ID) == "null" {
			nulls = append(nulls, r)
			continue
		}
		byID[string(r.ID)] = r
	}
	if len(nulls) != 2 || nulls[0].Error == nil || nulls[0].Error.Code != -32700 || nulls[1].Error == nil || nulls[1].Error.Code != -32700 {
		t.Errorf("want two parse errors with id null (hello, truncated JSON), got %+v", nulls)
	}
	for _, id := range []string{"3", "4"} {
		if r := byID[id]; r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batching") {
			t.Errorf("batch request %s: want -32600 naming batching, got %+v", id, r)
		}
	}
	if r := byID["5"]; r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "bogus") {
		t.Errorf("unknown argument: want a tool error naming it, got %s %+v", r.Result, r.Error)
	}
	if r := byID["6"]; r.Error != nil || !strings.Contains(string(r.Result), "outcome.recorded/v1") {
		t.Errorf("tool call after the bad lines: %s %+v", r.Result, r.Error)
	}
	if r, ok := byID["7"]; !ok || r.Error != nil {
		t.Errorf("ping after the bad lines: %+v (answered: %v)", r, ok)
	}
}
