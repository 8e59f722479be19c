package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	loremcp "github.com/loredev/lore/mcp"
)

// TestMCPKnowledgeScopesAndCurator: inject_context's scopes add to
// knowledge.scope_filter (global only by default), as its schema says; the
// knowledge_curate tool runs the LLM curator against a fake
// chat-completions endpoint on 127.0.0.1 and records what it accepts.
func TestMCPKnowledgeScopesAndCurator(t *testing.T) {
	var answer atomic.Value // string: the fake endpoint's answer
	answer.Store("")
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": answer.Load()}}}})
		_, _ = w.Write(b)
	}))
	defer llm.Close()
	t.Setenv("LORE_CURATOR_URL", llm.URL)
	t.Setenv("LORE_CURATOR_MODEL", "fake")
	cs := session(t, loremcp.Config{Project: "default"})

	var schema json.RawMessage
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "inject_context" {
			schema, _ = json.Marshal(tool.InputSchema)
		}
	}
	if strings.Contains(string(schema), "default: all") || !strings.Contains(string(schema), "scope_filter") {
		t.Errorf("inject_context schema says another scope default than the one applied: %s", schema)
	}
	lesson := "Run go vet on every package before the api tests"
	out, isErr := call(t, cs, "add_knowledge", map[string]any{"lesson": lesson, "category": "testing", "scope": "stack:go"})
	if isErr || !strings.Contains(out, `"outcome":"added"`) {
		t.Fatalf("add_knowledge: error=%v %s", isErr, out)
	}
	id := regexp.MustCompile(`"id":"([0-9a-f-]{36})"`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no id in %s", out)
	}
	if out, isErr = call(t, cs, "inject_context", map[string]any{"task": "go vet api tests"}); isErr || strings.Contains(out, lesson) {
		t.Fatalf("inject_context without scopes shows a stack:go lesson: error=%v %s", isErr, out)
	}
	if out, isErr = call(t, cs, "inject_context", map[string]any{"task": "go vet api tests", "scopes": []string{"stack:go"}}); isErr || !strings.Contains(out, lesson) {
		t.Fatalf("inject_context with scopes [stack:go]: error=%v %s", isErr, out)
	}

	b, _ := json.Marshal(map[string]any{"recommendations": []any{map[string]string{"action": "promote", "id": id[1], "reason": "general advice"}}})
	answer.Store(string(b))
	out, isErr = call(t, cs, "knowledge_curate", map[string]any{"llm": true})
	if isErr || !strings.Contains(out, `"accepted":1`) || !strings.Contains(out, `"result":"promoted to hive `) {
		t.Fatalf("knowledge_curate llm: error=%v %s", isErr, out)
	}
	answer.Store(`{"recommendations":[{"action":"promote","id":"nope","reason":"x"}]}`)
	if out, isErr = call(t, cs, "knowledge_curate", map[string]any{"llm": true}); !isErr || !strings.Contains(out, "nothing was recorded") {
		t.Fatalf("knowledge_curate with a bad answer: error=%v %s", isErr, out)
	}
}
