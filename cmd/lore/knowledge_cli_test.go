package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCLIKnowledgeConfigImportCurate drives the knowledge CLI against a
// served lore: config --set over the configuration in force and the
// master switch, the exit code of a rejected lesson, the seed's
// categories, an import report read back from the fold (added, rejected,
// merged into, promoted by age), a merged id shown, and curate --llm
// against a fake chat-completions endpoint on 127.0.0.1.
func TestCLIKnowledgeConfigImportCurate(t *testing.T) {
	var curatorAnswer atomic.Value // string: the fake endpoint's answer
	curatorAnswer.Store("")
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": curatorAnswer.Load()}}}})
		_, _ = w.Write(b)
	}))
	defer llm.Close()
	t.Setenv("LORE_CURATOR_URL", llm.URL)
	t.Setenv("LORE_CURATOR_MODEL", "fake")

	d := serveData(t)
	bg := context.Background()
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, bg, "", append(d[:len(d):len(d)], args...)...)
	}
	config := func() map[string]any {
		t.Helper()
		code, out, errs := run("--json", "knowledge", "config")
		var c map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("config: exit %d, out %q, err %q", code, out, errs)
		}
		return c
	}

	// --set changes keys over the configuration in force.
	if code, _, errs := run("knowledge", "config", "--set", "dedup_threshold=0.7"); code != 0 {
		t.Fatalf("config --set: exit %d: %s", code, errs)
	}
	if code, _, errs := run("knowledge", "config", "--set", "enabled=false"); code != 0 {
		t.Fatalf("config --set enabled=false: exit %d: %s", code, errs)
	}
	if c := config(); c["enabled"] != false || c["dedup_threshold"] != 0.7 {
		t.Fatalf("config after two --set: %v", c)
	}
	if code, _, errs := run("knowledge", "config", "--set", "bogus_key=1"); code != exitBadInput || !strings.Contains(errs, "bogus_key") {
		t.Fatalf("config --set of an unknown key: exit %d, err %q", code, errs)
	}
	lesson := "Prefer stream.Readable.from(generator) over async iterators for backpressure."
	if code, _, errs := run("knowledge", "add", lesson, "--category", "pattern"); code != exitFailure || !strings.Contains(errs, "knowledge.enabled") {
		t.Fatalf("add while disabled: exit %d, err %q", code, errs)
	}
	if code, _, errs := run("knowledge", "config", "--set", "enabled=true"); code != 0 {
		t.Fatalf("config --set enabled=true: exit %d: %s", code, errs)
	}
	code, out, errs := run("knowledge", "add", lesson, "--category", "pattern")
	if code != 0 || !strings.HasPrefix(out, "added ") {
		t.Fatalf("add of the seed's example (category pattern): exit %d, out %q, err %q", code, out, errs)
	}
	patternID := strings.TrimSpace(strings.TrimPrefix(out, "added "))
	if code, out, _ := run("knowledge", "add", "too short", "--category", "testing"); code != exitRejected || !strings.Contains(out, "lesson too short") {
		t.Fatalf("rejected add: exit %d (want %d), out %q", code, exitRejected, out)
	}

	// An import reports what the fold decided for each line.
	old := time.Now().UTC().AddDate(0, 0, -200).Format(time.RFC3339)
	const idA, idB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	file := filepath.Join(t.TempDir(), "knowledge.jsonl")
	lines := []string{
		fmt.Sprintf(`{"id":%q,"tier":"swarm","lesson":"Pin the docker base image digest so CI builds stay reproducible","category":"tooling","tags":[],"scope":"global","confidence":0.9,"status":"established","confirmed_by":[],"created_at":%q}`, idA, old),
		fmt.Sprintf(`{"id":%q,"tier":"swarm","lesson":"Pin the docker base image digest so CI builds stay reproducible always","category":"tooling","scope":"global","confidence":0.5,"status":"candidate"}`, idB),
		`{"id":"cccccccc-0000-4000-8000-000000000003","tier":"swarm","lesson":"Keep the release checklist in the repository root","category":"nonsense","scope":"global"}`,
		`{not json`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run("knowledge", "import", file)
	for _, want := range []string{"read 3, sent 3, already imported 0, bad lines 1", "added 1, rejected 1, merged 1, reinforced 0, pending 0; promoted to the hive 1",
		"merged\tline 2\t" + idB + " into " + idA, "rejected\tline 3\tcccccccc\tlayer 1: invalid category: nonsense", "promoted\t" + idA + " to hive", "(route age)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("import: exit %d, err %q; out %q lacks %q", code, errs, out, want)
		}
	}
	code, out, errs = run("--json", "knowledge", "import", file)
	var rep struct {
		Sent, Existing int
		Items          []struct {
			Outcome    string `json:"outcome"`
			MergedInto string `json:"merged_into"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Sent != 0 || rep.Existing != 3 || rep.Items[1].MergedInto != idA {
		t.Fatalf("re-import --json: exit %d, err %q, out %s", code, errs, out)
	}
	code, out, _ = run("knowledge", "show", idB[:8])
	if code != 0 || !strings.Contains(out, idB+" was merged into "+idA) || !strings.Contains(out, "id:          "+idA) {
		t.Fatalf("show of a merged id: exit %d, out %q", code, out)
	}

	// The LLM curator: one accepted recommendation, recorded and read back.
	b, _ := json.Marshal(map[string]any{"recommendations": []any{map[string]string{"action": "quarantine", "id": patternID, "reason": "too specific to one library"}}})
	curatorAnswer.Store(string(b))
	code, out, errs = run("knowledge", "curate", "--llm")
	if code != 0 || !strings.Contains(out, "llm curator fake: 2 entries sent; 1 recommendations accepted, 0 refused") ||
		!strings.Contains(out, "quarantine "+patternID[:8]+": quarantined (too specific to one library)") {
		t.Fatalf("curate --llm: exit %d, out %q, err %q", code, out, errs)
	}
	curatorAnswer.Store("not json")
	if code, _, errs := run("knowledge", "curate", "--llm"); code == 0 || !strings.Contains(errs, "nothing was recorded") {
		t.Fatalf("curate --llm with a malformed answer: exit %d, err %q", code, errs)
	}
}

// TestCLIKnowledgeImportBadLines: lines the importer cannot take as they
// are (a field of the wrong type, a value the server refuses), in the
// first and in a later request of a file, are reported by their numbers
// and skipped; every other line is imported, the exit code is 0.
func TestCLIKnowledgeImportBadLines(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, bg, "", append(d[:len(d):len(d)], args...)...)
	}
	if code, _, errs := run("knowledge", "config", "--set", "swarm_max_entries=1000"); code != 0 {
		t.Fatalf("config: exit %d: %s", code, errs)
	}
	words := strings.Fields("cache parser socket quorum ticker lexer shard lease cursor budget replica token codec router schema vector archive module worker queue")
	const n, mistyped, refused = 450, 50, 380 // two requests of the CLI's 200 lines, and a third
	rng := rand.New(rand.NewPCG(3, 4))
	w := func() string { return words[rng.IntN(len(words))] }
	var lines []string
	for i := range n {
		line := map[string]any{"id": fmt.Sprintf("k-%04d", i), "category": "tooling", "confidence": 0.7,
			"lesson": fmt.Sprintf("lesson %d: keep the %s %s %s before the %s %s %s", i, w(), w(), w(), w(), w(), w())}
		switch i + 1 {
		case mistyped:
			line["confidence"] = "high"
		case refused:
			line["category"] = strings.Repeat("c", 101)
		}
		b, _ := json.Marshal(line)
		lines = append(lines, string(b))
	}
	file := filepath.Join(t.TempDir(), "knowledge.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("knowledge", "import", file)
	want := fmt.Sprintf("read %d, sent %d, already imported 0, bad lines 2", n-2, n-2)
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("added %d, rejected 0", n-2)) ||
		!strings.Contains(errs, fmt.Sprintf("line %d skipped: field \"confidence\": got string, want number", mistyped)) ||
		!strings.Contains(errs, fmt.Sprintf("line %d skipped: ", refused)) || !strings.Contains(errs, `field "data.category"`) {
		t.Fatalf("import: exit %d, out %q (want %q), err %q", code, out, want, errs)
	}
}
