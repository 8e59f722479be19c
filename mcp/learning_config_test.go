package mcp_test

import (
	"strings"
	"testing"

	loremcp "github.com/loredev/lore/mcp"
)

// TestMCPLearningConfigAndEvidence: the learning_config and
// learning_configure tools come from the endpoints; a bad key is a tool
// error naming it; the why tool shows the evidence of a verdict.
func TestMCPLearningConfigAndEvidence(t *testing.T) {
	cs := session(t, loremcp.Config{Project: "default"})
	out, isErr := call(t, cs, "learning_config", map[string]any{})
	if isErr || !strings.Contains(out, `"policy":"seed"`) || !strings.Contains(out, `"minHelpful":5`) {
		t.Fatalf("learning_config: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_configure", map[string]any{"config": map[string]any{"maturity": map[string]any{"minHelpfull": 3}}})
	if !isErr || !strings.Contains(out, "minHelpfull") {
		t.Fatalf("unknown key: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_configure", map[string]any{"config": map[string]any{"evidence": map[string]any{"confidence": 1.5}}})
	if !isErr || !strings.Contains(out, "evidence.confidence") {
		t.Fatalf("out of range: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_configure", map[string]any{"config": map[string]any{"maturityConfig": map[string]any{"minHelpful": 3}}})
	if isErr || !strings.Contains(out, `"minHelpful":3`) {
		t.Fatalf("learning_configure: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_config", map[string]any{})
	if isErr || !strings.Contains(out, `"minHelpful":3`) {
		t.Fatalf("learning_config after the change: error=%v %s", isErr, out)
	}
	for _, ok := range []bool{true, false, false} {
		if out, isErr := call(t, cs, "learning_observe_pattern", map[string]any{"content": "Split by file type", "success": ok}); isErr {
			t.Fatalf("observe: %s", out)
		}
	}
	out, isErr = call(t, cs, "why", map[string]any{"kind": "pattern", "id": "Split by file type"})
	if isErr || !strings.Contains(out, `"inversion_evidence"`) || !strings.Contains(out, `"tentative":true`) ||
		!strings.Contains(out, "interval 6–79%") {
		t.Fatalf("why pattern: error=%v %s", isErr, out)
	}
}
