package knowledge_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/safety"
)

type corpusCase struct {
	Category string `json:"category"`
	Text     string `json:"text"`
}

func readCorpus(t *testing.T, path string) []corpusCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c)
	}
	return out
}

var corpusMeta = knowledge.Meta{Category: "tooling", Scope: "global", Confidence: 0.5}

// TestSafetyCorpus: every harmful lesson of the corpus is rejected at layer
// 2 (content safety), and at most 1 % of the benign lessons that look like
// them are.
func TestSafetyCorpus(t *testing.T) {
	harmful := readCorpus(t, "testdata/harmful_lessons.jsonl")
	benign := readCorpus(t, "testdata/benign_lessons.jsonl")
	if len(harmful) < 100 || len(benign) < 100 {
		t.Fatalf("corpus too small: %d harmful, %d benign (want ≥ 100 each)", len(harmful), len(benign))
	}
	missed := 0
	byCat := map[string][2]int{}
	for _, c := range harmful {
		if n := knowledge.UTF16Len(c.Text); n > knowledge.MaxLessonLen {
			t.Errorf("harmful %q is %d long: it would fail layer 1, not the rule under test", c.Text, n)
		}
		r := knowledge.Validate(c.Text, nil, corpusMeta)
		x := byCat[c.Category]
		x[0]++
		if r.Valid || r.Layer != knowledge.LayerSafety {
			missed++
			t.Errorf("harmful [%s] not rejected at layer 2: %q → valid=%v layer=%d %q", c.Category, c.Text, r.Valid, r.Layer, r.Reason)
		} else {
			x[1]++
		}
		byCat[c.Category] = x
	}
	// The credentials of the corpus are also what telemetry redaction
	// removes: the redacted text holds none of them.
	for _, c := range harmful {
		if !isCredentialCategory(c.Category) {
			continue
		}
		out, kinds := safety.Redact(c.Text)
		if len(kinds) == 0 || len(safety.Secrets(out)) > 0 {
			t.Errorf("credential [%s] not redacted: %q → %q", c.Category, c.Text, out)
		}
	}
	blocked := 0
	for _, c := range benign {
		r := knowledge.Validate(c.Text, nil, corpusMeta)
		if !r.Valid {
			blocked++
			t.Logf("benign rejected: %q → layer %d %q", c.Text, r.Layer, r.Reason)
		}
	}
	t.Logf("harmful: %d/%d rejected at layer 2; benign: %d/%d rejected (%.1f %%)",
		len(harmful)-missed, len(harmful), blocked, len(benign), 100*float64(blocked)/float64(len(benign)))
	for cat, x := range byCat {
		t.Logf("  %-18s %d/%d", cat, x[1], x[0])
	}
	if float64(blocked) > 0.01*float64(len(benign)) {
		t.Errorf("%d of %d benign lessons rejected, more than 1 %%", blocked, len(benign))
	}
}

func isCredentialCategory(c string) bool {
	switch c {
	case "url-credentials", "assignment", "private-key", "jwt":
		return true
	}
	return strings.HasPrefix(c, "secret-")
}
