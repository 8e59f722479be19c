package crossloop_test

import (
	"testing"
	"time"

	"github.com/loredev/lore/projector/crossloop"
)

func TestRules(t *testing.T) {
	tests := []struct {
		name      string
		got, want any
	}{
		{"message generalised", crossloop.GeneralizeMessage("Cannot read property 'email' of null"), `Cannot read property '.*' of null`},
		{"numbers generalised", crossloop.GeneralizeMessage("timed out after 5000 ms"), `timed out after \d+ ms`},
		{"location hint", crossloop.LocationHint("src/auth/validate.ts:42"), "*.ts:validate*"},
		{"language", crossloop.LanguageOf("a/b.py:3"), "python"},
		{"fix category", crossloop.FixCategory("Added null check for user object", ""), "add_null_check"},
		{"pattern id", crossloop.PatternID("error", "null-check", 15), "pat-error-null-check-015"},
		{"template id", crossloop.PatternID("template", "null check", 2), "tmpl-null-check-002"},
		{"identical merge", crossloop.ShouldMerge(crossloop.Similarity("a b c d", "a b c d"), 0.8), true},
		{"one word differs", crossloop.Similarity("a b c", "a b d") < 0.8, true},
		{"empty texts alike", crossloop.Similarity("", ""), 1.0},
		{"category bonus capped", crossloop.Relevance(0.9, true), 1.0},
		{"archive month", crossloop.ArchiveMonth(time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC)), "2026-02"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	code, ph := crossloop.GeneralizeCode("+ if (user == null) {\n+   throw new ValidationError(\"User is required\");\n+ }")
	if code != "if ({{variable}} == null) {\n  throw new ValidationError(\"{{message}}\");\n}\n" || len(ph) != 2 {
		t.Errorf("template %q %v", code, ph)
	}
}

// TestMergeTokensFindSimilar: any two signatures with Jaccard ≥ t share a
// merge token (prefix filtering), so merges never need a scan.
func TestMergeTokensFindSimilar(t *testing.T) {
	a := "TypeError Cannot read property of null in validate user email field now"
	b := "TypeError Cannot read property of null in validate user email field"
	if s := crossloop.Similarity(a, b); s <= 0.8 {
		t.Fatalf("similarity %v", s)
	}
	ta, tb := crossloop.MergeTokens(a, 0.8), crossloop.MergeTokens(b, 0.8)
	shared := false
	for _, x := range ta {
		for _, y := range tb {
			shared = shared || x == y
		}
	}
	if !shared {
		t.Errorf("no shared merge token: %v / %v", ta, tb)
	}
}

func TestMaturityAndEffectiveness(t *testing.T) {
	p := &crossloop.Pattern{Type: crossloop.TypeError, Successful: 9, Failed: 1, SuccessRate: 0.9}
	if s, m := crossloop.Maturity(p); s != "proven" || m != 1.5 || crossloop.Effectiveness(p) != 0.9*1.5 {
		t.Errorf("proven: %s %v", s, m)
	}
	anti := &crossloop.Pattern{Type: crossloop.TypeAnti, Failed: 1}
	if s, _ := crossloop.Maturity(anti); s != "candidate" || crossloop.KeepRate(anti) != 1 {
		t.Errorf("anti: %s", s)
	}
}

// TestImprovementNeedsBothSides: the registry's improvement compares loops
// with and without injection; with either side empty it is 0.
func TestImprovementNeedsBothSides(t *testing.T) {
	for _, c := range []struct {
		name                     string
		with, withIter, wo, woIt int
		want                     float64
	}{
		{"no loop with injection", 0, 0, 6, 12, 0},
		{"no loop without injection", 5, 10, 0, 0, 0},
		{"both", 5, 10, 4, 12, 33.3},
	} {
		s := &crossloop.Stats{Categories: map[string]*crossloop.Cat{"debugging": {
			With: c.with, WithIter: c.withIter, Without: c.wo, WithoutIter: c.woIt}}}
		if got := crossloop.ComputeMetrics(s).Benefit.Improvement; got != c.want {
			t.Errorf("%s: improvement %v, want %v", c.name, got, c.want)
		}
	}
}
