package mcp_test

import (
	"strings"
	"testing"

	loremcp "github.com/loredev/lore/mcp"
)

// TestMCPObservePatterns: the learning_observe_patterns tool records many
// observations in one call (read back by learning_pattern), and a bad
// observation is a tool error naming its index, with nothing recorded.
func TestMCPObservePatterns(t *testing.T) {
	cs := session(t, loremcp.Config{Project: "default"})
	obs := []any{}
	for i := range 7 {
		obs = append(obs, map[string]any{"content": "Split by file type", "success": i%2 == 0})
	}
	out, isErr := call(t, cs, "learning_observe_patterns", map[string]any{"observations": obs})
	if isErr || !strings.Contains(out, `"observed":7`) || !strings.Contains(out, `"successes":4`) || !strings.Contains(out, `"failures":3`) {
		t.Fatalf("learning_observe_patterns: error=%v %s", isErr, out)
	}
	bad := append(obs, map[string]any{"content": "Split by file type"})
	out, isErr = call(t, cs, "learning_observe_patterns", map[string]any{"observations": bad})
	if !isErr || !strings.Contains(out, "observations[7]") || !strings.Contains(out, "success") {
		t.Fatalf("missing success: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_pattern", map[string]any{"content": "Split by file type"})
	if isErr || !strings.Contains(out, `"success_count":4`) || !strings.Contains(out, `"failure_count":3`) {
		t.Fatalf("learning_pattern: error=%v %s", isErr, out)
	}
}
