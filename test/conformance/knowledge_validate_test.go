package conformance_test

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"

	"github.com/loredev/lore/projector/knowledge"
)

// The validateLesson handler of swarm_knowledge.json and its departures
// (K1, K2, negated commands).

// skFollowed is the reference version lore follows where SPEC.md is silent.
const skFollowed = "v7.103.2"

type skResult struct {
	Valid    bool    `json:"valid"`
	Layer    *int    `json:"layer"`
	Reason   *string `json:"reason"`
	Severity *string `json:"severity"`
}

func skResultOf(r knowledge.Result) skResult {
	out := skResult{Valid: r.Valid}
	if r.Layer != 0 {
		l, rs, sv := r.Layer, r.Reason, r.Severity
		out.Layer, out.Reason, out.Severity = &l, &rs, &sv
	}
	return out
}

// chmod777 is K1: chmod 777 in any form (flags before the mode).
var chmod777 = regexp.MustCompile(`(?i)\bchmod\s+(-\S+\s+)*0?777\b`)

// warningTokens are the reference's warning patterns (backticks, $(),
// format, kill -9, pkill, killall).
var warningTokens = regexp.MustCompile("`|\\$\\(|(?i)\\b(format|kill\\s+-9|pkill|killall)\\b")

// skDeparts is lore's verdict on a validateLesson departs case: K1 makes
// chmod 777 dangerous; K2 runs the later checks after a warning pattern,
// so the verdict is the error lore finds in the lesson once the warning
// patterns are taken out, or else the reference's warning.
func skDeparts(t T, candidate string, ex []knowledge.Existing, meta knowledge.Meta, ref skResult) (skResult, string) {
	t.Helper()
	if chmod777.MatchString(candidate) {
		return skResultOf(knowledge.Result{Layer: knowledge.LayerSafety, Reason: knowledge.ReasonDangerous, Severity: "error"}), "K1"
	}
	if ref.Severity != nil && *ref.Severity == knowledge.SeverityWarning && ref.Reason != nil && *ref.Reason == knowledge.ReasonDangerousWarn {
		if !warningTokens.MatchString(candidate) {
			t.Fatalf("departs K2: the reference warns about %q but no warning pattern is in it", candidate)
		}
		rest := knowledge.Validate(warningTokens.ReplaceAllString(candidate, ""), ex, meta)
		if !rest.Valid {
			return skResultOf(rest), "K2"
		}
		return ref, "K2"
	}
	t.Fatalf("departs: %q is neither K1 (chmod 777) nor K2 (a warning pattern)", candidate)
	return skResult{}, ""
}

// negatedCommand finds a clause that negates what follows ("never",
// "avoid", "don't", "do not"). lore's content-safety rules depart from a
// conforming case here: a dangerous command in a negated clause is a
// warning to the reader, not an instruction, and passes, so that lessons
// about safe practice are not false alarms (docs/knowledge.md, "Content
// safety").
var negatedCommand = regexp.MustCompile(`(?i)\b(never|avoid|don't|do not|must not)\b`)

func skValidate(t T, c Case) {
	var in struct {
		Candidate string   `json:"candidate"`
		Existing  []string `json:"existing_lessons"`
		Meta      struct {
			Category   string `json:"category"`
			Scope      string `json:"scope"`
			Confidence any    `json:"confidence"`
		} `json:"meta"`
	}
	decodeInput(t, c, &in)
	conf := math.NaN()
	if f, ok := in.Meta.Confidence.(float64); ok {
		conf = f
	}
	var ex []knowledge.Existing
	for _, s := range in.Existing {
		ex = append(ex, knowledge.Existing{Text: s})
	}
	meta := knowledge.Meta{Category: in.Meta.Category, Scope: in.Meta.Scope, Confidence: conf}
	got := skResultOf(knowledge.Validate(in.Candidate, ex, meta))
	var want skResult
	mustJSON(t, c.Expected, &want)
	if want.Reason != nil && *want.Reason == knowledge.ReasonDangerous && negatedCommand.MatchString(in.Candidate) && c.Lore == "conform" {
		// the negated command: no dangerous-command error, lore's verdict
		// otherwise
		if got.Reason != nil && *got.Reason == knowledge.ReasonDangerous {
			t.Errorf("Validate(%q): a negated dangerous command refused as %s", in.Candidate, *got.Reason)
		}
		t.Logf("departs (negated command): lore gives valid=%v where v7.103.2 gives %s", got.Valid, c.Expected)
		return
	} else if c.Lore == "departs" {
		var rule string
		want, rule = skDeparts(t, in.Candidate, ex, meta, want)
		w, _ := json.Marshal(want)
		t.Logf("departs (%s): lore gives %s where v7.103.2 gives %s", rule, w, c.Expected)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("Validate(%q) = %s, want %s", in.Candidate, g, w)
	}
}
