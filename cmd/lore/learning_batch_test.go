package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/learning"
)

// TestCLIMaturityObserveBatch records observations from JSON Lines (stdin
// and a file larger than one request), refuses a bad line naming it (exit
// 2, nothing recorded), and shows the counts with lore maturity show.
func TestCLIMaturityObserveBatch(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return cli(t, bg, stdin, append(append([]string{}, d...), args...)...)
	}
	show := func(content string) learning.PatternView {
		t.Helper()
		code, out, errs := run("", "--json", "maturity", "show", "--content", content)
		if code != 0 {
			t.Fatalf("show: exit %d: %s", code, errs)
		}
		var p learning.PatternView
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("show: %v: %s", err, out)
		}
		return p
	}
	code, out, errs := run(`{"content":"Split by file type","success":true}

{"content":"Split by file type","success":false,"bead_id":"bd-1.1","tags":["ui"]}
`, "maturity", "observe-batch")
	if code != 0 || !strings.Contains(out, "recorded 2 observations of 1 patterns") {
		t.Fatalf("observe-batch: exit %d: %s %s", code, out, errs)
	}
	if p := show("Split by file type"); p.SuccessCount != 1 || p.FailureCount != 1 || len(p.Tags) != 1 {
		t.Fatalf("after stdin: %+v", p)
	}
	var lines []string
	n := app.MaxObservationsPerRequest + 5
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"content":"One file per subtask","success":%v}`, i%4 != 0))
	}
	file := filepath.Join(t.TempDir(), "obs.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	badLines := append(append([]string{}, lines...), `{"content":"One file per subtask"}`)
	if err := os.WriteFile(bad, []byte(strings.Join(badLines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run("", "maturity", "observe-batch", bad)
	if want := fmt.Sprintf("line %d:", n+1); code != exitBadInput || !strings.Contains(errs, want) || !strings.Contains(errs, "success") {
		t.Fatalf("bad line: exit %d: %s; want 2 naming %s and its field", code, errs, want)
	}
	code, out, errs = run("", "--json", "maturity", "observe-batch", file)
	if code != 0 {
		t.Fatalf("observe-batch file: exit %d: %s", code, errs)
	}
	var res app.LearningObservedBatch
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Observed != n || len(res.Patterns) != 1 || res.Patterns[0].Successes != n-n/4-1 {
		t.Fatalf("observe-batch --json: %v: %s", err, out)
	}
	if p := show("One file per subtask"); p.SuccessCount+p.FailureCount != n {
		t.Fatalf("after the file: %d observations, want %d (the bad file recorded nothing)", p.SuccessCount+p.FailureCount, n)
	}
}
