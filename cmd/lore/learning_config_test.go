package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// TestCLILearningConfig sets the learning configuration from the CLI
// (--set, --file with the reference's section names), refuses unknown keys
// and values out of range naming them (exit 2), shows the transitions a
// change causes (lore why), answers --as-of with the configuration then, and
// shows the evidence with a verdict.
func TestCLILearningConfig(t *testing.T) {
	data := t.TempDir()
	serveInBackground(t, data)
	bg := context.Background()
	d := []string{"--data", data}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, bg, "", append(d, args...)...)
	}
	show := func(extra ...string) learning.Config {
		t.Helper()
		code, out, errs := run(append([]string{"--json", "learning", "config"}, extra...)...)
		if code != 0 {
			t.Fatalf("learning config: exit %d: %s", code, errs)
		}
		var c learning.Config
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("learning config: %v: %s", err, out)
		}
		return c
	}
	if c := show(); c.Maturity.MinHelpful != 5 || c.Evidence.Policy != "seed" || c.AntiPattern.AntiPatternPrefix != "AVOID: " {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []struct{ set, name string }{
		{"maturity.minHelpfull=3", "minHelpfull"},
		{"maturity.maxHarmful=1.5", "maturity.maxHarmful"},
		{"evidence.policy=bayes", "evidence.policy"},
	} {
		if code, _, errs := run("learning", "config", "--set", bad.set); code != exitBadInput || !strings.Contains(errs, bad.name) {
			t.Errorf("--set %s: exit %d, %q; want 2 naming %s", bad.set, code, errs, bad.name)
		}
	}
	for _, ok := range []string{"--success", "--failed", "--failed"} {
		if code, _, errs := run("maturity", "observe", "--content", "Split by file type", ok); code != 0 {
			t.Fatalf("observe: exit %d: %s", code, errs)
		}
	}
	if code, out, errs := run("learning", "config", "--set", "evidence.policy=evidence"); code != 0 || !strings.Contains(out, "configuration set") {
		t.Fatalf("--set: exit %d: %s %s", code, out, errs)
	}
	code, out, errs := run("learning", "prompt")
	if code != 0 || !strings.Contains(out, "## Exploration") || !strings.Contains(out, "about 5% of decompositions") {
		t.Fatalf("decomposition prompt under the evidence policy: %s %s", out, errs)
	}
	for i := 0; i < 4; i++ {
		if code, _, errs := run("maturity", "observe", "--content", "Split by feature", "--success"); code != 0 {
			t.Fatalf("observe: exit %d: %s", code, errs)
		}
	}
	time.Sleep(5 * time.Millisecond) // so that the --as-of below falls strictly between the events
	before := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(5 * time.Millisecond)
	if code, out, errs := run("learning", "config", "--set", "maturity.minHelpful=3"); code != 0 || !strings.Contains(out, "configuration set") {
		t.Fatalf("--set: exit %d: %s %s", code, out, errs)
	}
	if c := show(); c.Maturity.MinHelpful != 3 || c.Evidence.Policy != "evidence" || c.Maturity.MinFeedback != 3 {
		t.Fatalf("after --set: %+v", c)
	}
	if c := show("--as-of", before); c.Maturity.MinHelpful != 5 || c.Evidence.Policy != "evidence" {
		t.Fatalf("--as-of before the change: %+v", c.Maturity)
	}
	code, out, errs = run("why", "pattern", "Split by feature")
	if code != 0 || !strings.Contains(out, "state: proven") || !strings.Contains(out, "configuration changed") {
		t.Fatalf("why after the change: exit %d %s %s", code, out, errs)
	}
	code, out, errs = run("learning", "anti-patterns")
	if code != 0 || !strings.Contains(out, "AVOID: Split by file type. Failed 2/3 times (67%; 95% interval 21–94%, little evidence, tentative)") {
		t.Fatalf("anti-patterns under the evidence policy: exit %d %q %s", code, out, errs)
	}
	code, out, errs = run("--json", "why", "pattern", "Split by file type")
	var p learning.PatternView
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.InversionEvidence == nil || !p.Tentative ||
		math.Abs(p.InversionEvidence.Observations-3) > 1e-3 {
		t.Fatalf("why --json: exit %d %s %s", code, out, errs)
	}
	code, out, _ = run("learning", "prompt")
	if code != 0 || strings.Contains(out, "## Exploration") {
		t.Fatalf("a proven pattern at 100%%: nothing excluded could beat it, nothing to explore: %s", out)
	}

	// --file, with the reference's section names: the document replaces
	// the configuration (over the defaults).
	file := filepath.Join(t.TempDir(), "learning.json")
	if err := os.WriteFile(file, []byte(`{"antiPatternConfig": {"minObservations": 10}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run("learning", "config", "--file", file); code != 0 {
		t.Fatalf("--file: exit %d: %s", code, errs)
	}
	if c := show(); c.AntiPattern.MinObservations != 10 || c.Maturity.MinHelpful != 5 || c.Evidence.Policy != "seed" {
		t.Fatalf("after --file: %+v", c)
	}
	code, out, _ = run("learning", "anti-patterns")
	if code != 0 || !strings.Contains(out, "AVOID: Split by file type. Failed 2/3 times (67% failure rate)") {
		t.Fatalf("anti-patterns back under the seed policy (the inversion holds): %q", out)
	}
	if err := os.WriteFile(file, []byte(`{"maturity": {"halfLifeDays": 0}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run("learning", "config", "--file", file); code != exitBadInput || !strings.Contains(errs, "maturity.halfLifeDays") {
		t.Errorf("--file out of range: exit %d %q", code, errs)
	}
}
