package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	loremcp "github.com/loredev/lore/mcp"
	"github.com/loredev/lore/node"
)

// session starts a real embedded node with the API and an MCP client
// connected in memory to a lore MCP server configured by cfg.
func session(t *testing.T, cfg loremcp.Config) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.Caller = startNode(t)
	srv, err := loremcp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// startNode starts a real embedded node serving the API and returns a
// client of it.
func startNode(t *testing.T) *api.Client {
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
	return api.NewClient(n.NC)
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String(), res.IsError
}

func TestMCPToolsAgainstEmbeddedNode(t *testing.T) {
	cs := session(t, loremcp.Config{Project: "default"})
	ctx := context.Background()

	tools := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	for _, name := range []string{"record_outcome", "record_error", "add_knowledge", "inject_context", "find_patterns",
		"promote", "deprecate", "quarantine", "why", "call", "list_endpoints", "learning_weights", "audit_stats"} {
		if tools[name] == nil {
			t.Errorf("tool %s is not listed", name)
		}
	}
	schema, _ := json.Marshal(tools["record_outcome"].InputSchema)
	if !strings.Contains(string(schema), `"bead_id"`) || !strings.Contains(string(schema), "time from start to completion") {
		t.Errorf("record_outcome schema lacks the event's fields and descriptions: %s", schema)
	}

	out, isErr := call(t, cs, "record_outcome", map[string]any{"bead_id": "bd-1", "duration_ms": 60000, "retry_count": 0,
		"success": true, "criteria": []string{"type_safe"}})
	if isErr || !strings.Contains(out, `"projected":true`) {
		t.Fatalf("record_outcome: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "why", map[string]any{"kind": "criterion", "id": "type_safe"})
	if isErr || !strings.Contains(out, "type_safe") {
		t.Fatalf("why criterion: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "call", map[string]any{"endpoint": "audit.stats"})
	if isErr || !strings.Contains(out, "outcome.recorded/v1") {
		t.Fatalf("call audit.stats: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "list_endpoints", nil)
	if isErr || !strings.Contains(out, `"endpoint":"learning.record_outcome"`) || !strings.Contains(out, `"tool":"record_outcome"`) {
		t.Fatalf("list_endpoints: error=%v %s", isErr, out)
	}

	// Bad input is a tool error naming the field, not a protocol error.
	out, isErr = call(t, cs, "record_outcome", map[string]any{"bead_id": "bd-2", "duration_ms": -5, "retry_count": 0, "success": true})
	if !isErr || !strings.Contains(out, "duration_ms") {
		t.Fatalf("negative duration: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "call", map[string]any{"endpoint": "nope.none"})
	if !isErr || !strings.Contains(out, "lore.api.nope.none") {
		t.Fatalf("unknown endpoint: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "why", map[string]any{"kind": "planet", "id": "x"})
	if !isErr || !strings.Contains(out, "kind") {
		t.Fatalf("bad kind: error=%v %s", isErr, out)
	}
}

func TestMCPNamedToolWithoutEndpointNamesIt(t *testing.T) {
	var eps []app.Endpoint
	for _, e := range app.Endpoints() {
		if e.Subject() != "lore.api.learning.record_error" {
			eps = append(eps, e)
		}
	}
	cs := session(t, loremcp.Config{Endpoints: eps, NoEndpointTools: true})
	out, isErr := call(t, cs, "record_error", map[string]any{"bead_id": "bd-1", "error_type": "timeout", "message": "slow"})
	if !isErr || !strings.Contains(out, "lore.api.learning.record_error") {
		t.Fatalf("missing endpoint: error=%v %s", isErr, out)
	}
}

func TestMCPRefusesUnknownAndMissingArguments(t *testing.T) {
	cs := session(t, loremcp.Config{Project: "default"})
	ctx := context.Background()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "learning_weights" {
			b, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(b), `"additionalProperties":false`) || !strings.Contains(string(b), `"criterion"`) {
				t.Fatalf("learning_weights schema is not exact: %s", b)
			}
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"learning_weights", map[string]any{"criterion": "x", "bogus": 1}, "bogus"},
		{"patterns_prune", map[string]any{"args": map[string]any{"dry_run": true}}, `"args"`},
		{"record_outcome", map[string]any{"bead_id": "bd-1", "retry_count": 0, "success": true}, "duration_ms"},
		{"record_outcome", map[string]any{"bead_id": "bd-1", "duration_ms": nil, "retry_count": 0, "success": true}, "duration_ms"},
		{"learning_record_outcome", map[string]any{"bead_id": "bd-1", "retry_count": 0, "success": true}, "duration_ms"},
		{"why", map[string]any{"kind": "criterion", "id": "x", "extra": true}, "extra"},
		{"call", map[string]any{"endpoint": "patterns.prune", "args": map[string]any{"dryrun": true}}, "dryrun"},
	} {
		out, isErr := call(t, cs, tc.tool, tc.args)
		if !isErr || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: want a tool error naming %s, got error=%v %s", tc.tool, tc.args, tc.want, isErr, out)
		}
	}
	// Nothing was appended by the refused calls.
	out, isErr := call(t, cs, "call", map[string]any{"endpoint": "audit.stats"})
	if isErr || strings.Contains(out, "outcome.recorded/v1") || strings.Contains(out, "patterns.pruned") {
		t.Fatalf("a refused call appended: %s", out)
	}
	// Project is a request field: an endpoint tool takes it.
	if out, isErr := call(t, cs, "learning_weights", map[string]any{"project": "web"}); isErr {
		t.Fatalf("learning_weights with project: %s", out)
	}
}
