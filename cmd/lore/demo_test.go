package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs `lore demo` in-process, as the README's first command: a
// short human summary (no JSON), the same for the same seed and day, and
// the raw results with --json.
func TestDemo(t *testing.T) {
	ctx := context.Background()
	code, out, errs := cli(t, ctx, "", "demo", "--now", "2026-03-01")
	if code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errs)
	}
	if lines := strings.Count(out, "\n"); lines > 120 {
		t.Errorf("demo printed %d lines, want at most 120:\n%s", lines, out)
	}
	if json.Valid([]byte(out)) || strings.Contains(out, `"decayed_helpful"`) || strings.Contains(out, `"loop_id"`) {
		t.Errorf("demo printed JSON by default:\n%s", out)
	}
	for _, want := range []string{
		"lore demo: 6 concurrent agent loops × 30 tasks, 2025-11-01 → 2026-03-01 (seed 7)",
		"── What was recorded  (lore stats)",
		"── Criterion weights", "CRITERION", "EFFECTIVE", "type_safe", "tests_pass", "small_diff",
		"── Decomposition patterns by maturity", "## Proven Patterns", "Split by feature", "## Anti-Patterns to Avoid",
		"── Knowledge an agent gets for a new task", "Lessons from lore",
		"── Cross-loop context for a new Ralph loop", "## Cross-Loop Learning Context", "TypeError: null check",
		"── Cross-loop effectiveness  (lore patterns metrics)", "Applications: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output misses %q:\n%s", want, out)
		}
	}
	// Figures that follow from the simulation itself: 6 loops × 30 tasks,
	// a Ralph loop every fifth task, every one after the first round told
	// what the earlier ones learned.
	for _, re := range []string{
		`outcome\.recorded/v1\s+180\n`, `loop\.started/v1\s+36\n`, `loop\.completed/v1\s+36\n`,
		`Loops with injection: 30 \(avg [0-9.]+ iterations\); without: 6 \(avg [0-9.]+\); improvement [0-9.]+%`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("demo output does not match %s:\n%s", re, out)
		}
	}
	// A deprecated criterion shows its decayed weight and, beside it, the
	// effective weight scoring uses: 0.
	deprecated := regexp.MustCompile(`(?m)^\S+\s+(\d\.\d{4})\s+(\d\.\d{4})\s.*\strue$`).FindAllStringSubmatch(out, -1)
	if len(deprecated) == 0 {
		t.Errorf("demo shows no deprecated criterion:\n%s", out)
	}
	for _, m := range deprecated {
		if m[2] != "0.0000" {
			t.Errorf("deprecated criterion with effective weight %s (weight %s), want 0.0000", m[2], m[1])
		}
	}
	if code, again, _ := cli(t, ctx, "", "demo", "--now", "2026-03-01"); code != 0 || again != out {
		t.Errorf("a second run with the same seed printed something else (exit %d):\n%s", code, again)
	}

	code, out, errs = cli(t, ctx, "", "demo", "--json", "--now", "2026-03-01", "--loops", "3", "--tasks", "10")
	var res struct {
		Loops   int                        `json:"loops"`
		Results map[string]json.RawMessage `json:"results"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("demo --json: exit %d, err %q, out %q", code, errs, out)
	}
	for _, k := range []string{"stats", "weights", "decomposition_prompt", "anti_patterns", "knowledge_inject", "patterns_inject", "patterns_metrics"} {
		if len(res.Results[k]) == 0 {
			t.Errorf("demo --json misses results.%s", k)
		}
	}
	var stats struct {
		Total uint64 `json:"total"`
	}
	if res.Loops != 3 || json.Unmarshal(res.Results["stats"], &stats) != nil || stats.Total == 0 {
		t.Errorf("demo --json: loops %d, stats %s", res.Loops, res.Results["stats"])
	}
}
