package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/benchkit"
)

// serveData starts `lore serve` on a temp data folder and returns the
// --data flags of the commands talking to it.
func serveData(t *testing.T, serveFlags ...string) []string {
	t.Helper()
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", append([]string{"serve", "--data", data, "--port", "-1", "--tick", "0"}, serveFlags...)...)
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
		served <- code
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-served:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(data, urlFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not write its URL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return []string{"--data", data}
}

// aiwgConfig is a .aiwg/config.yml as the seed writes it, with settings of
// other tools beside lore's block.
const aiwgConfig = `# In aiwg.yml or .aiwg/config.yml
project:
  name: web
ralph:
  max_iterations: 10
  cross_loop_learning:
    extraction:
      enabled: true
      auto_extract_on_completion: true
      min_success_rate_threshold: 0.6
      min_usage_count_for_evaluation: 5
      extract_code_templates: false
      merge_similar_patterns: true
      similarity_threshold: 0.85
    injection:
      enabled: true
      top_k_patterns: 3
      min_success_rate: 0.7
      max_patterns_injected: 10
      include_error_patterns: true
      include_success_patterns: true
      include_anti_patterns: false
      include_code_templates: true
`

type clConfig struct {
	Extraction map[string]any `json:"extraction"`
	Injection  map[string]any `json:"injection"`
	Pruning    map[string]any `json:"pruning"`
}

// TestCLIPatternsConfig: `lore patterns config` shows the defaults, sets
// the seed's YAML file, changes keys with --set over the configuration in
// force, refuses an unknown key and an out-of-range value naming them
// (exit 2), and answers --as-of with the configuration in force then.
func TestCLIPatternsConfig(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	get := func(extra ...string) clConfig {
		t.Helper()
		code, out, errs := cli(t, bg, "", append(append(d, "--json", "patterns", "config"), extra...)...)
		if code != 0 {
			t.Fatalf("config: exit %d: %s", code, errs)
		}
		var c clConfig
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("config %q: %v", out, err)
		}
		return c
	}
	if c := get(); c.Injection["top_k_patterns"] != 5.0 || c.Extraction["similarity_threshold"] != 0.8 || c.Pruning["max_age_days"] != 90.0 {
		t.Fatalf("defaults: %+v", c)
	}
	before := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte(aiwgConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, bg, "", append(d, "patterns", "config", "--file", file)...); code != 0 || !strings.Contains(out, "injection.top_k_patterns = 3") {
		t.Fatalf("--file: exit %d, %q %q", code, out, errs)
	}
	c := get()
	if c.Injection["top_k_patterns"] != 3.0 || c.Extraction["similarity_threshold"] != 0.85 || c.Injection["include_anti_patterns"] != false ||
		c.Extraction["min_usage_count_for_evaluation"] != 5.0 || c.Extraction["extract_code_templates"] != false {
		t.Fatalf("after --file: %+v", c)
	}
	time.Sleep(10 * time.Millisecond)
	mid := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	if code, _, errs := cli(t, bg, "", append(d, "patterns", "config", "--set", "injection.top_k_patterns=4", "--set", "pruning.max_age_days=30")...); code != 0 {
		t.Fatalf("--set: exit %d: %s", code, errs)
	}
	c = get()
	if c.Injection["top_k_patterns"] != 4.0 || c.Pruning["max_age_days"] != 30.0 || c.Extraction["similarity_threshold"] != 0.85 {
		t.Fatalf("--set keeps the rest of the configuration in force: %+v", c)
	}
	for _, bad := range []struct{ set, name string }{
		{"injection.top_k=4", `"injection.top_k"`},
		{"extraction.similarity_threshold=1.5", `"extraction.similarity_threshold"`},
		{"injection.top_k_patterns=0", `"injection.top_k_patterns"`},
		{"cache.size=1", `"cache"`},
	} {
		code, _, errs := cli(t, bg, "", append(d, "patterns", "config", "--set", bad.set)...)
		if code != 2 || !strings.Contains(errs, bad.name) {
			t.Errorf("--set %s: exit %d, %q; want 2 naming %s", bad.set, code, errs, bad.name)
		}
	}
	if c := get(); c.Injection["top_k_patterns"] != 4.0 {
		t.Errorf("a refused change changed the configuration: %+v", c)
	}
	if c := get("--as-of", before.Format(time.RFC3339Nano)); c.Injection["top_k_patterns"] != 5.0 || c.Extraction["similarity_threshold"] != 0.8 {
		t.Errorf("--as-of before any change: %+v, want the defaults", c)
	}
	if c := get("--as-of", mid.Format(time.RFC3339Nano)); c.Injection["top_k_patterns"] != 3.0 || c.Pruning["max_age_days"] != 90.0 {
		t.Errorf("--as-of between the file and --set: %+v, want the file's", c)
	}
}

// statsTotal is the number of events lore folded.
func statsTotal(t *testing.T, d []string) uint64 {
	t.Helper()
	code, out, errs := cli(t, context.Background(), "", append(d, "stats", "--json")...)
	var st struct {
		Total uint64 `json:"total"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("stats: exit %d, %q %q", code, out, errs)
	}
	return st.Total
}

// TestCLIPatternsImportAiwgFiles imports the seed's own files
// (testdata/aiwg/shared, in the shapes of .aiwg/ralph/shared): the
// patterns folder itself is accepted, every figure and time the files
// state is kept, a re-import reports 0 new and appends nothing, and
// --type imports one type only.
func TestCLIPatternsImportAiwgFiles(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	// --type first, on a fresh registry: only the error patterns.
	code, out, errs := cli(t, bg, "", append(d, "patterns", "import", "testdata/aiwg/shared/patterns", "--type", "error")...)
	if code != 0 || !strings.Contains(out, "Imported 3 new pattern(s)") {
		t.Fatalf("import --type error: exit %d, %q %q", code, out, errs)
	}
	code, out, errs = cli(t, bg, "", append(d, "patterns", "import", "--input", "testdata/aiwg/shared/patterns")...)
	if code != 0 || !strings.Contains(out, "Imported 6 new pattern(s) from 4 file(s); 3 already in the registry") {
		t.Fatalf("import of the patterns folder: exit %d, %q %q", code, out, errs)
	}
	before := statsTotal(t, d)
	code, out, errs = cli(t, bg, "", append(d, "patterns", "import", "testdata/aiwg/shared")...)
	if code != 0 || !strings.Contains(out, "Imported 1 new pattern(s) from 5 file(s); 9 already in the registry") {
		t.Fatalf("import of the shared folder: exit %d, %q %q", code, out, errs)
	}
	if after := statsTotal(t, d); after != before+1 {
		t.Errorf("the shared folder appended %d events, want 1 (the archive's pattern)", after-before)
	}
	before = statsTotal(t, d)
	code, out, errs = cli(t, bg, "", append(d, "patterns", "import", "testdata/aiwg/shared")...)
	if code != 0 || !strings.Contains(out, "Imported 0 new pattern(s)") {
		t.Fatalf("re-import: exit %d, %q %q", code, out, errs)
	}
	if after := statsTotal(t, d); after != before {
		t.Errorf("a re-import appended %d events", after-before)
	}

	exported := filepath.Join(t.TempDir(), "x.json")
	code, _, errs = cli(t, bg, "", append(d, "patterns", "export", "--output", exported)...)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	var doc struct {
		Registry struct {
			Error    []map[string]any `json:"error_patterns"`
			Success  []map[string]any `json:"success_patterns"`
			Anti     []map[string]any `json:"anti_patterns"`
			Template []map[string]any `json:"code_templates"`
		} `json:"pattern_registry"`
	}
	raw, err := os.ReadFile(exported)
	if err != nil || json.Unmarshal(raw, &doc) != nil {
		t.Fatalf("export file: %v %s", err, raw)
	}
	find := func(list []map[string]any, key, id string) map[string]any {
		for _, p := range list {
			if p[key] == id {
				return p
			}
		}
		t.Fatalf("%s not exported", id)
		return nil
	}
	if p := find(doc.Registry.Anti, "pattern_id", "pat-anti-increase-timeout-001"); p["failure_rate"] != 0.9 || p["occurrence_count"] != 6.0 {
		t.Errorf("anti-pattern figures: failure_rate %v occurrences %v, want 0.9 and 6", p["failure_rate"], p["occurrence_count"])
	}
	if p := find(doc.Registry.Template, "template_id", "tmpl-null-guard-001"); p["success_rate"] != 0.95 || p["usage_count"] != 3.0 {
		t.Errorf("template figures: %v %v, want 0.95 and 3", p["success_rate"], p["usage_count"])
	}
	sp := find(doc.Registry.Success, "pattern_id", "pat-success-tdd-fix-002")
	if sp["average_iterations"] != 2.4 || sp["success_rate"] != 0.8 {
		t.Errorf("success pattern figures: average %v rate %v, want 2.4 and 0.8", sp["average_iterations"], sp["success_rate"])
	}
	if ti, _ := sp["approach"].(map[string]any)["typical_iterations"].(map[string]any); ti["average"] != 2.4 || ti["minimum"] != 1.0 || ti["maximum"] != 4.0 {
		t.Errorf("typical iterations %v", ti)
	}
	ep := find(doc.Registry.Error, "pattern_id", "pat-error-null-check-015")
	if ep["success_rate"] != 0.75 || ep["usage_count"] != 4.0 || ep["first_discovered"] != "2026-02-02T15:00:00Z" || ep["last_used"] != "2026-02-02T19:15:00Z" {
		t.Errorf("error pattern figures and times: %v %v %v %v", ep["success_rate"], ep["usage_count"], ep["first_discovered"], ep["last_used"])
	}
	if tr, _ := ep["effectiveness_trend"].([]any); len(tr) != 2 {
		t.Errorf("the file's trend: %v", ep["effectiveness_trend"])
	}
	if p := find(doc.Registry.Error, "pattern_id", "pat-error-type-mismatch-003"); p["success_rate"] != 0.94 || p["first_discovered"] != "2026-02-01T10:00:00Z" {
		t.Errorf("a pattern without first_discovered: rate %v created %v, want 0.94 and its lineage's first time", p["success_rate"], p["first_discovered"])
	}
	code, out, _ = cli(t, bg, "", append(d, "patterns", "show", "pat-success-tdd-fix-002")...)
	if code != 0 || strings.Contains(out, "0001-01-01") || !strings.Contains(out, "Created: 2026-01-10T10:00:00Z") {
		t.Errorf("show: %q", out)
	}
	code, out, _ = cli(t, bg, "", append(d, "patterns", "show", "tmpl-retry-loop-002")...)
	if code != 0 || strings.Contains(out, "0001-01-01") || !strings.Contains(out, "Created: unknown") {
		t.Errorf("show of a template stating no time: %q", out)
	}
	if code, _, errs = cli(t, bg, "", append(d, "patterns", "import", "testdata/aiwg/shared/patterns", "--type", "bogus")...); code != 2 || !strings.Contains(errs, "--type") {
		t.Errorf("--type bogus: exit %d %q", code, errs)
	}

	// The export in parts (an archive month among them) is the whole.
	whole, _ := os.ReadFile(exported)
	for _, part := range []string{"1", "2", "5"} {
		out := filepath.Join(t.TempDir(), "p.json")
		cliOK(t, d)("patterns", "export", "--output", out, "--part", part)
		if got, _ := os.ReadFile(out); string(got) != string(whole) {
			t.Errorf("export --part %s differs from the export in one reply:\n%s\n%s", part, got, whole)
		}
	}

	// Pages of the listing: --offset and --limit cut the listing's order.
	ids := func(args ...string) []string {
		t.Helper()
		var ps []struct {
			ID string `json:"pattern_id"`
		}
		if err := json.Unmarshal([]byte(cliOK(t, d)(append([]string{"patterns", "list", "--json"}, args...)...)), &ps); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	all := ids()
	if len(all) < 4 {
		t.Fatalf("listing of the imported registry: %v", all)
	}
	if page := ids("--offset", "1", "--limit", "2"); !slices.Equal(page, all[1:3]) {
		t.Errorf("--offset 1 --limit 2: %v, want %v", page, all[1:3])
	}
	if code, _, errs = cli(t, bg, "", append(d, "patterns", "list", "--limit", "-1")...); code != 2 || !strings.Contains(errs, "--limit") {
		t.Errorf("--limit -1: exit %d %q", code, errs)
	}
	// The metrics' text reads no loop; --json --loops bounds the list.
	if out := cliOK(t, d)("patterns", "metrics"); !strings.HasPrefix(out, "Patterns: ") {
		t.Errorf("patterns metrics: %q", out)
	}
	var m struct {
		Loops []any `json:"loops"`
	}
	if err := json.Unmarshal([]byte(cliOK(t, d)("patterns", "metrics", "--json", "--loops", "0")), &m); err != nil || m.Loops == nil || len(m.Loops) != 0 {
		t.Errorf("patterns metrics --json --loops 0: %v %v, want an empty list", m.Loops, err)
	}
}

// TestCLILoopShow: `lore loop show ID` gives the seed's per-loop state: the
// injected patterns with applied / successful / iteration used, the
// patterns the loop contributed, and its improvement estimate against the
// loops of its category run without injection.
func TestCLILoopShow(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	run := cliOK(t, d)
	// A baseline loop: four iterations, learns the null-check fix.
	a := run("loop", "start", "--task", "Fix TypeError null user in validation", "--category", "debugging")
	run("loop", "iterate", "--loop", a, "--iteration", "1", "--error-type", "TypeError",
		"--error-message", "Cannot read property 'email' of null", "--tests-passed", "1", "--tests-failed", "1")
	run("loop", "iterate", "--loop", a, "--iteration", "4", "--fix", "Added null check for user object", "--tests-passed", "2", "--tests-failed", "0")
	run("loop", "complete", "--loop", a, "--outcome", "success", "--iterations", "4")
	// A loop injected with it, applying it at iteration 2.
	b := run("loop", "start", "--task", "Fix TypeError null user in validation", "--category", "debugging")
	run("inject", "--loop", b)
	var st struct {
		Injected []struct {
			PatternID     string `json:"pattern_id"`
			Injected      bool   `json:"injected"`
			Applied       bool   `json:"applied"`
			Successful    bool   `json:"successful"`
			IterationUsed int    `json:"iteration_used"`
		} `json:"injected_patterns"`
		Extracted []struct {
			PatternID string `json:"pattern_id"`
			New       bool   `json:"new"`
		} `json:"extracted_patterns"`
		Estimate *struct {
			Baseline    *float64 `json:"baseline_iterations"`
			Actual      int      `json:"actual_iterations"`
			Improvement *float64 `json:"improvement"`
		} `json:"improvement_estimate"`
	}
	if err := json.Unmarshal([]byte(run("--json", "loop", "show", b)), &st); err != nil || len(st.Injected) == 0 || st.Estimate != nil {
		t.Fatalf("running loop: %+v %v", st, err)
	}
	pid := st.Injected[0].PatternID
	run("loop", "apply", "--loop", b, "--pattern", pid, "--success", "--iteration", "2")
	run("loop", "complete", "--loop", b, "--outcome", "success", "--iterations", "2")
	st.Injected, st.Extracted, st.Estimate = nil, nil, nil
	if err := json.Unmarshal([]byte(run("--json", "loop", "show", b)), &st); err != nil {
		t.Fatal(err)
	}
	ip := st.Injected[0]
	if ip.PatternID != pid || !ip.Injected || !ip.Applied || !ip.Successful || ip.IterationUsed != 2 {
		t.Errorf("injected pattern: %+v", ip)
	}
	if st.Estimate == nil || st.Estimate.Baseline == nil || *st.Estimate.Baseline != 4 || st.Estimate.Actual != 2 ||
		st.Estimate.Improvement == nil || *st.Estimate.Improvement != 50 {
		t.Errorf("estimate: %+v", st.Estimate)
	}
	st.Extracted = nil
	if err := json.Unmarshal([]byte(run("--json", "loop", "show", a)), &st); err != nil || len(st.Extracted) == 0 || !st.Extracted[0].New {
		t.Errorf("baseline loop's extracted patterns: %+v %v", st.Extracted, err)
	}
	text := run("loop", "show", b)
	for _, want := range []string{"loop_state:", "injected_patterns:", "- pattern_id: " + pid, "applied: true", "successful: true",
		"iteration_used: 2", "improvement_estimate:", "baseline_iterations: 4", "actual_iterations: 2", "improvement: 50.0%"} {
		if !strings.Contains(text, want) {
			t.Errorf("loop show lacks %q:\n%s", want, text)
		}
	}
	if code, _, errs := cli(t, bg, "", append(d, "loop", "show", "ralph-nowhere-00000000")...); code == 0 || !strings.Contains(errs, "ralph-nowhere-00000000") {
		t.Errorf("unknown loop: exit %d %q", code, errs)
	}
}

// TestCLILoopStartInject: lore loop start --inject prints the new loop's
// id, then the patterns ranked for it, and records them on the loop as
// lore inject --loop does.
func TestCLILoopStartInject(t *testing.T) {
	d := serveData(t)
	run := cliOK(t, d)
	a := run("loop", "start", "--task", "Fix TypeError null user in validation", "--category", "debugging")
	run("loop", "iterate", "--loop", a, "--iteration", "1", "--error-type", "TypeError",
		"--error-message", "Cannot read property 'email' of null", "--tests-passed", "1", "--tests-failed", "1")
	run("loop", "iterate", "--loop", a, "--iteration", "2", "--fix", "Added null check for user object", "--tests-passed", "2", "--tests-failed", "0")
	run("loop", "complete", "--loop", a, "--outcome", "success", "--iterations", "2")

	out := run("loop", "start", "--task", "Fix TypeError null user in validation", "--category", "debugging", "--inject")
	id, text, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(id, "ralph-") || !strings.Contains(text, "Cross-Loop Learning Context") {
		t.Fatalf("loop start --inject printed %q", out)
	}
	recorded := func(id string) []string {
		t.Helper()
		var st struct {
			Injected []struct {
				PatternID string `json:"pattern_id"`
				Injected  bool   `json:"injected"`
			} `json:"injected_patterns"`
		}
		if err := json.Unmarshal([]byte(run("--json", "loop", "show", id)), &st); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range st.Injected {
			if p.Injected {
				ids = append(ids, p.PatternID)
			}
		}
		sort.Strings(ids)
		return ids
	}
	if len(recorded(id)) == 0 {
		t.Fatalf("loop %s shows no injected pattern", id)
	}
	// --json: the answer's patterns are the ones recorded on the loop.
	var res struct {
		LoopID    string `json:"loop_id"`
		Injection struct {
			Patterns []struct {
				Pattern struct {
					ID string `json:"pattern_id"`
				} `json:"pattern"`
			} `json:"patterns"`
		} `json:"injection"`
	}
	if err := json.Unmarshal([]byte(run("--json", "loop", "start", "--task", "Fix TypeError null user in validation", "--inject")), &res); err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, p := range res.Injection.Patterns {
		answered = append(answered, p.Pattern.ID)
	}
	sort.Strings(answered)
	if got := recorded(res.LoopID); len(answered) == 0 || !slices.Equal(got, answered) {
		t.Fatalf("loop start --inject --json answered %v, the loop records %v", answered, got)
	}
}

// cliOK runs lore with the data flags d before each command's arguments
// and returns its trimmed output, failing the test on a non-zero exit.
func cliOK(t *testing.T, d []string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, context.Background(), "", append(d, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return strings.TrimSpace(out)
	}
}

// TestCLIPatternsExportBeyondOneMessage: a registry whose export is larger
// than the server's max_payload (1 MiB here) is exported in parts, without
// being asked, into the document --part gives.
func TestCLIPatternsExportBeyondOneMessage(t *testing.T) {
	d := serveData(t, "--max-payload", "1")
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	const n = 1200
	var ps []map[string]any
	for i := range n {
		msg := fmt.Sprintf("%s %s %s refused", words[i%26], words[(i/26)%26], words[(i/676)%26])
		ps = append(ps, map[string]any{"pattern_id": fmt.Sprintf("pat-error-big%d-%03d", i/1000, i%1000), "type": "error_pattern",
			"error_signature":         map[string]any{"error_type": "TypeError", "error_pattern": msg, "error_location_hints": []string{}},
			"fix_approach":            map[string]any{"description": "retry " + msg, "fix_category": "other"},
			"successful_applications": 1, "failed_applications": 0, "usage_count": 1, "success_rate": 1.0,
			"first_discovered": "2026-01-01T00:00:00Z", "last_used": "2026-01-01T00:00:00Z",
			"effectiveness_trend": []any{}, "source_loops": []any{}, "tags": []string{}})
	}
	raw, _ := json.Marshal(map[string]any{"version": "1.0.0", "pattern_registry": map[string]any{"error_patterns": ps}})
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cliOK(t, d)("patterns", "import", file)
	auto, parts := filepath.Join(t.TempDir(), "auto.json"), filepath.Join(t.TempDir(), "parts.json")
	if out := cliOK(t, d)("patterns", "export", "--output", auto); !strings.Contains(out, fmt.Sprintf("Exported %d active", n)) {
		t.Fatalf("export beyond one message: %q", out)
	}
	cliOK(t, d)("patterns", "export", "--output", parts, "--part", "300")
	a, _ := os.ReadFile(auto)
	b, _ := os.ReadFile(parts)
	if len(a) <= 1<<20 || string(a) != string(b) {
		t.Fatalf("export of %d bytes (want more than 1 MiB), equal to the one in parts of 300: %v", len(a), string(a) == string(b))
	}
	// The listing too is larger than one message: read in pages, whole.
	var listed []struct {
		ID string `json:"pattern_id"`
	}
	if err := json.Unmarshal([]byte(cliOK(t, d)("--json", "patterns", "list")), &listed); err != nil || len(listed) != n {
		t.Fatalf("patterns list beyond one message: %d patterns (%v), want %d", len(listed), err, n)
	}
	for i := 1; i < n; i++ {
		if listed[i].ID <= listed[i-1].ID {
			t.Fatalf("patterns list in pages is out of order at %d: %s after %s", i, listed[i].ID, listed[i-1].ID)
		}
	}
}

// TestCLILearningExportBeyondOneMessage: a learning state whose export is
// larger than one NATS message is exported in parts, written as the same
// lines as parts of any size; learning.export's pages joined are the
// whole export, and a negative page is refused naming it.
func TestCLILearningExportBeyondOneMessage(t *testing.T) {
	d := serveData(t, "--max-payload", "1")
	var obs strings.Builder
	for i := range 2600 {
		fmt.Fprintf(&obs, `{"content":"Split the work by module %04d, then give each subtask one owner, one test file and one reviewer, so that no two agents ever edit the same file in one phase","success":%v,"tags":["bulk"]}`+"\n", i, i%3 != 0)
	}
	file := filepath.Join(t.TempDir(), "obs.jsonl")
	if err := os.WriteFile(file, []byte(obs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cliOK(t, d)("maturity", "observe-batch", file)
	whole := cliOK(t, d)("learning", "export")
	var listed []json.RawMessage
	if err := json.Unmarshal([]byte(cliOK(t, d)("--json", "maturity", "list")), &listed); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(whole), "\n")); len(whole) <= 1<<20 || n != 2*len(listed) || len(listed) < 2500 {
		t.Fatalf("export of %d bytes in %d lines, want more than 1 MiB and each of the %d patterns with its maturity", len(whole), n, len(listed))
	}
	for _, part := range []string{"500", "2001"} { // pages across the two kinds, and one page of each
		if got := cliOK(t, d)("learning", "export", "--part", part); got != whole {
			t.Errorf("export in parts of %s records differs from the export read whole", part)
		}
	}
	if code, _, errs := cli(t, context.Background(), "", append(d, "learning", "export", "--part", "-1")...); code != exitBadInput || !strings.Contains(errs, "part") {
		t.Errorf("--part -1: exit %d, %q", code, errs)
	}
}

// TestCLIKnowledgeExportBeyondOneMessage: a project whose knowledge export
// is larger than one NATS message is exported in parts, the same lines as
// in parts of any size.
func TestCLIKnowledgeExportBeyondOneMessage(t *testing.T) {
	d := serveData(t, "--max-payload", "1")
	rng := rand.New(rand.NewPCG(3, 5))
	var file strings.Builder
	for i := range 1500 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("k-%05d", i),
			"lesson":   fmt.Sprintf("Lesson %d: %s; %s; %s", i, benchkit.Lesson(rng), benchkit.Lesson(rng), benchkit.Lesson(rng)),
			"category": "tooling", "tags": []string{"bulk"}, "confidence": 0.7, "status": "candidate", "created_at": "2026-01-02T03:04:05Z"})
		file.Write(line)
		file.WriteByte('\n')
	}
	in := filepath.Join(t.TempDir(), "knowledge.jsonl")
	if err := os.WriteFile(in, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cliOK(t, d)("knowledge", "import", in)
	whole := cliOK(t, d)("knowledge", "export")
	if n := len(strings.Split(strings.TrimSpace(whole), "\n")); len(whole) <= 1<<20 || n < 1000 {
		t.Fatalf("export of %d bytes in %d lines, want more than 1 MiB", len(whole), n)
	}
	for _, part := range []string{"333", "5000"} {
		if got := cliOK(t, d)("knowledge", "export", "--part", part); got != whole {
			t.Errorf("export in parts of %s records differs from the export read whole", part)
		}
	}
}

// TestCLIKnowledgeListPagesAndText: lore knowledge list --text keeps the
// entries whose lesson or id holds the text in any case, and its pages
// (--offset, --limit) joined are the whole listing.
func TestCLIKnowledgeListPagesAndText(t *testing.T) {
	d := serveData(t)
	for i, l := range []string{"Pin the Go toolchain in CI", "Cache the module downloads", "Pin node's version in .nvmrc", "Run the race detector in CI"} {
		cliOK(t, d)("knowledge", "add", fmt.Sprintf("%s (lesson %d of the list test)", l, i), "--category", "tooling")
	}
	list := func(args ...string) []string {
		t.Helper()
		var es []struct{ ID, Lesson string }
		if err := json.Unmarshal([]byte(cliOK(t, d)(append([]string{"--json", "knowledge", "list"}, args...)...)), &es); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.ID+" "+e.Lesson)
		}
		return out
	}
	whole := list()
	var pinned []string
	for _, e := range whole {
		if strings.Contains(strings.ToLower(e), "pin") {
			pinned = append(pinned, e)
		}
	}
	if got := list("--text", "PIN"); len(whole) != 4 || len(pinned) != 2 || strings.Join(got, "|") != strings.Join(pinned, "|") {
		t.Errorf("--text PIN: %q, want %q of %q", got, pinned, whole)
	}
	var joined []string
	for off := 0; off < 5; off += 3 {
		joined = append(joined, list("--offset", fmt.Sprint(off), "--limit", "3")...)
	}
	if strings.Join(joined, "|") != strings.Join(whole, "|") {
		t.Errorf("pages of 3: %q, whole %q", joined, whole)
	}
	if code, _, errs := cli(t, context.Background(), "", append(d, "knowledge", "list", "--offset", "-1")...); code != exitBadInput || !strings.Contains(errs, "offset") {
		t.Errorf("--offset -1: exit %d, %q", code, errs)
	}
}
