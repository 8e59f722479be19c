package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loredev/lore/projector/crossloop"
)

// registryFile is a root document of n patterns, spread over the types
// (error, success, anti), with one field beside the registry.
func registryFile(n int) []byte {
	var l crossloop.Lists
	for i := range n {
		var p map[string]any
		switch i % 3 {
		case 0:
			p = map[string]any{"pattern_id": fmt.Sprintf("pat-error-split%d-%03d", i/1000, i%1000), "type": "error_pattern",
				"error_signature":         map[string]any{"error_type": "TypeError", "error_pattern": fmt.Sprintf("value %d of w%d is undefined", i, i%7), "error_location_hints": []string{}},
				"fix_approach":            map[string]any{"description": fmt.Sprintf("check that w%d is set before it is read", i), "fix_category": "other"},
				"successful_applications": 1, "failed_applications": 1, "usage_count": 2, "success_rate": 0.5,
				"first_discovered": "2025-12-31T23:00:00Z", "last_used": "2025-12-31T23:00:00Z",
				"effectiveness_trend": []any{}, "source_loops": []any{}, "tags": []string{}}
		case 1:
			p = map[string]any{"pattern_id": fmt.Sprintf("pat-success-split%d-%03d", i/1000, i%1000), "type": "success_pattern",
				"task_category": "debugging",
				"approach": map[string]any{"description": fmt.Sprintf("bisect step %d of w%d", i, i%5),
					"steps": []string{fmt.Sprintf("run w%d", i), "read the log"}},
				"successful_applications": 2, "failed_applications": 0, "usage_count": 2, "success_rate": 1.0,
				"first_discovered": "2025-12-31T23:00:00Z", "last_used": "2025-12-31T23:00:00Z",
				"effectiveness_trend": []any{}, "source_loops": []any{}, "tags": []string{"t"}}
		default:
			p = map[string]any{"pattern_id": fmt.Sprintf("pat-anti-split%d-%03d", i/1000, i%1000), "type": "anti_pattern",
				"approach_description": fmt.Sprintf("retry %d times on w%d", i, i%3), "failure_mode": "scope_creep",
				"failure_rate": 1.0, "occurrence_count": 2,
				"first_discovered": "2025-12-31T23:00:00Z", "last_used": "2025-12-31T23:00:00Z",
				"effectiveness_trend": []any{}, "source_loops": []any{}, "tags": []string{}}
		}
		raw, _ := json.Marshal(p)
		switch i % 3 {
		case 0:
			l.Error = append(l.Error, raw)
		case 1:
			l.Success = append(l.Success, raw)
		default:
			l.Anti = append(l.Anti, raw)
		}
	}
	raw, _ := json.Marshal(map[string]any{"version": "1.0.0", "pattern_registry": l})
	return raw
}

// TestSplitRegistryParsesAsWhole: the parts of a long document parse,
// one after the other, into the patterns of the whole document, in its
// order (the import appends the same patterns); a short one is not split.
func TestSplitRegistryParsesAsWhole(t *testing.T) {
	doc := registryFile(1000)
	whole, err := crossloop.ParseRegistry(doc, "")
	if err != nil || len(whole) != 1000 {
		t.Fatalf("whole: %d patterns, %v", len(whole), err)
	}
	var arr []json.RawMessage
	var l crossloop.Lists
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil || json.Unmarshal(top["pattern_registry"], &l) != nil {
		t.Fatal(err)
	}
	arr = l.Error
	perType, _ := json.Marshal(map[string]any{"patterns": arr})
	for _, c := range []struct {
		name, typ string
		raw       []byte
	}{{"root document", "", doc}, {"array", crossloop.TypeError, mustJSON(t, arr)}, {"patterns file", crossloop.TypeError, perType}} {
		want, err := crossloop.ParseRegistry(c.raw, c.typ)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		parts := splitRegistry(c.raw, c.typ, 150)
		if len(parts) != (len(want)+149)/150 {
			t.Fatalf("%s: %d patterns in %d parts", c.name, len(want), len(parts))
		}
		var got []*crossloop.Pattern
		for _, p := range parts {
			ps, err := crossloop.ParseRegistry(p.raw, c.typ)
			if err != nil {
				t.Fatalf("%s: a part does not parse: %v", c.name, err)
			}
			if len(ps) != p.n {
				t.Fatalf("%s: a part of %d patterns parses into %d", c.name, p.n, len(ps))
			}
			got = append(got, ps...)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d patterns from the parts, %d from the whole", c.name, len(got), len(want))
		}
		for i := range want {
			a, _ := crossloop.ImportDigest(want[i])
			b, _ := crossloop.ImportDigest(got[i])
			if a != b {
				t.Fatalf("%s: pattern %d: %s from the whole, %s from the parts", c.name, i, want[i].ID, got[i].ID)
			}
		}
		if splitRegistry(c.raw, c.typ, len(want)) != nil {
			t.Fatalf("%s: a document of one part was split", c.name)
		}
	}

	// A document with archive months (an export): the parts cross from
	// the registry into the months and from month to month, and parse
	// into the same patterns, archived under the same months.
	withArchive := func(reg []byte, months ...string) []byte {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(reg, &top); err != nil {
			t.Fatal(err)
		}
		var arch []map[string]any
		for i, m := range months {
			var mt map[string]json.RawMessage
			src := strings.ReplaceAll(string(registryFile(120+i*50)), "split", fmt.Sprintf("arch%c", 'a'+i))
			if err := json.Unmarshal([]byte(src), &mt); err != nil {
				t.Fatal(err)
			}
			arch = append(arch, map[string]any{"version": "1.0.0", "month": m, "pattern_registry": mt["pattern_registry"]})
		}
		top["archive"] = mustJSON(t, arch)
		return mustJSON(t, top)
	}
	archived := withArchive(registryFile(100), "2026-01", "2026-02", "2026-03")
	want, err := crossloop.ParseRegistry(archived, "")
	if err != nil || len(want) != 100+120+170+220 {
		t.Fatalf("a document with three archive months: %d patterns, %v", len(want), err)
	}
	if n := len(slices.DeleteFunc(slices.Clone(want), func(p *crossloop.Pattern) bool { return p.ArchiveMonth == "" })); n != 120+170+220 {
		t.Fatalf("%d patterns of the whole parse as archived, want %d", n, 120+170+220)
	}
	for _, per := range []int{1, 7, 100, 150, 400} {
		var got []*crossloop.Pattern
		for _, p := range splitRegistry(archived, "", per) {
			ps, err := crossloop.ParseRegistry(p.raw, "")
			if err != nil || len(ps) != p.n {
				t.Fatalf("per %d: a part of %d patterns parses into %d: %v", per, p.n, len(ps), err)
			}
			got = append(got, ps...)
		}
		if len(got) != len(want) {
			t.Fatalf("per %d: %d patterns from the parts, %d from the whole", per, len(got), len(want))
		}
		for i := range want {
			a, _ := crossloop.ImportDigest(want[i])
			b, _ := crossloop.ImportDigest(got[i])
			if a != b || got[i].ArchiveMonth != want[i].ArchiveMonth {
				t.Fatalf("per %d: pattern %d: %s (%q) from the whole, %s (%q) from the parts", per, i, want[i].ID, want[i].ArchiveMonth, got[i].ID, got[i].ArchiveMonth)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestCLIPatternsImportLongFile imports a document of more patterns than
// one request carries: every pattern is imported, and a re-import finds
// them all.
func TestCLIPatternsImportLongFile(t *testing.T) {
	d := serveData(t)
	n := importPart + importPart/2
	file := filepath.Join(t.TempDir(), "long.json")
	if err := os.WriteFile(file, registryFile(n), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, context.Background(), "", append(d, "patterns", "import", file)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Imported %d new pattern(s) from 1 file(s); 0 already", n)) {
		t.Fatalf("import: exit %d, %q %q", code, out, errs)
	}
	code, out, errs = cli(t, context.Background(), "", append(d, "patterns", "import", file)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Imported 0 new pattern(s) from 1 file(s); %d already", n)) {
		t.Fatalf("re-import: exit %d, %q %q", code, out, errs)
	}
}

// TestCLIPatternsImportWaitsForEveryPart: the parts of a long file but
// the last are replied once stored; when the last appends nothing (its
// patterns were imported before), the import still returns only once
// every part is folded: what it imported shows at once, and the same as
// once a re-import has run.
func TestCLIPatternsImportWaitsForEveryPart(t *testing.T) {
	d := serveData(t)
	n := 2*importPart + importPart/4
	whole := registryFile(n)
	parts := splitRegistry(whole, "", importPart)
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	dir := t.TempDir()
	tail, file := filepath.Join(dir, "tail.json"), filepath.Join(dir, "long.json")
	if err := os.WriteFile(tail, parts[2].raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, context.Background(), "", append(d, "patterns", "import", tail)...); code != 0 {
		t.Fatalf("import of the last part: exit %d, %q %q", code, out, errs)
	}
	total := func() int {
		t.Helper()
		code, out, errs := cli(t, context.Background(), "", append(d, "patterns", "metrics", "--json")...)
		var m struct {
			M crossloop.Metrics `json:"effectiveness_metrics"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Fatalf("patterns metrics: exit %d, %q, %s", code, out, errs)
		}
		return m.M.TotalPatterns
	}
	before := total()
	code, out, errs := cli(t, context.Background(), "", append(d, "patterns", "import", file)...)
	want := fmt.Sprintf("Imported %d new pattern(s) from 1 file(s); %d already", 2*importPart, parts[2].n)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("import: exit %d, %q %q (want %q)", code, out, errs, want)
	}
	got := total()
	if got <= before {
		t.Fatalf("the import returned before its parts were folded: %d patterns, %d before", got, before)
	}
	code, out, errs = cli(t, context.Background(), "", append(d, "patterns", "import", file)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Imported 0 new pattern(s) from 1 file(s); %d already", n)) {
		t.Fatalf("re-import: exit %d, %q %q", code, out, errs)
	}
	if again := total(); again != got {
		t.Fatalf("%d patterns once the import returned, %d once a re-import ran", got, again)
	}
}
