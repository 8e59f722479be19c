package conformance_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/projector/crossloop"
)

// Handlers for aiwg_cross_task.json (SPEC §6).

func init() {
	const file = "aiwg_cross_task"
	for _, def := range []string{"", "ErrorPattern", "SuccessPattern", "AntiPattern", "CodeTemplate", "EffectivenessMetrics"} {
		fn := "schema.validate(shared-patterns root document)"
		if def != "" {
			fn = "schema.validate(shared-patterns#/$defs/" + def + ")"
		}
		def := def
		register(file, fn, func(t *testing.T, c Case) { crossSchemaCase(t, c, def) })
	}
	register(file, "loop_id.matches_schema", func(t *testing.T, c Case) {
		var id string
		var want bool
		clMustJSON(t, c.Input, &id)
		clMustJSON(t, c.Expected, &want)
		if got := crossloop.ValidLoopID(id); got != want {
			t.Errorf("ValidLoopID(%q) = %v, want %v", id, got, want)
		}
	})
	register(file, "generateLoopId.slug", func(t *testing.T, c Case) {
		var task string
		var want struct {
			Slug    string `json:"slug"`
			Matches bool   `json:"id_matches_loop_state_regex"`
		}
		clMustJSON(t, c.Input, &task)
		clMustJSON(t, c.Expected, &want)
		if got := crossloop.LoopSlug(task); got != want.Slug {
			t.Errorf("LoopSlug(%q) = %q, want %q", task, got, want.Slug)
		}
		id, err := crossloop.NewLoopID(task)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "ralph-"+want.Slug+"-") || crossloop.ValidLoopID(id) != want.Matches {
			t.Errorf("NewLoopID(%q) = %q: want prefix ralph-%s- and valid=%v", task, id, want.Slug, want.Matches)
		}
	})
	register(file, "LearningExtractor.categorizeError", func(t *testing.T, c Case) {
		// open: lore has no error categories of its own; an error's
		// signature is its type plus its generalised message, so a short
		// message is its own pattern.
		var in string
		clMustJSON(t, c.Input, &in)
		if got := crossloop.GeneralizeMessage(in); got != in {
			t.Errorf("GeneralizeMessage(%q) = %q, want it unchanged", in, got)
		}
		t.Logf("open, settled: the signature of %q is the message itself", in)
	})
	register(file, "LearningExtractor.normalizeApproach", func(t *testing.T, c Case) {
		// open: lore keeps a success loop's fix descriptions verbatim as the
		// approach steps, however short.
		var in string
		clMustJSON(t, c.Input, &in)
		l := &crossloop.Loop{ID: "ralph-x-00000000", Task: "t", Outcome: crossloop.OutcomeSuccess,
			Iterations: []crossloop.Iteration{{N: 1, FixDescription: in}}}
		cs := crossloop.Extract(l, crossloop.ExtractOptions{Types: map[string]bool{crossloop.TypeSuccess: true}})
		if len(cs) != 1 || !reflect.DeepEqual(cs[0].Pattern.Steps, []string{in}) {
			t.Errorf("success steps from %q = %+v", in, cs)
		}
		t.Logf("open, settled: %q stays a step as written", in)
	})
	register(file, "pattern.apply_sequence", crossApplySequence)
	register(file, "pattern.success_rate", func(t *testing.T, c Case) {
		var in struct{ Successful, Failed int }
		var want struct {
			Rate      float64 `json:"success_rate"`
			Displayed string  `json:"displayed"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.SuccessRate(in.Successful, in.Failed)
		if got != want.Rate || fmt.Sprintf("%.2f", got) != want.Displayed {
			t.Errorf("SuccessRate(%d,%d) = %v, want %v (%s)", in.Successful, in.Failed, got, want.Rate, want.Displayed)
		}
	})
	register(file, "pattern.effectiveness_trend.append", func(t *testing.T, c Case) {
		var want struct {
			Fields []string `json:"snapshot_fields"`
		}
		clMustJSON(t, c.Expected, &want)
		p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
		t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
		crossloop.Discover(p, "ralph-a-00000000", "a", t0)
		crossloop.Apply(p, "ralph-b-00000000", "b", true, t0.Add(time.Hour))
		if len(p.Trend) != 2 || p.Trend[1].SampleSize != 2 || p.Trend[1].SuccessRate != 1 {
			t.Fatalf("trend = %+v, want 2 snapshots, the last of 2 samples at 1.0", p.Trend)
		}
		raw, _ := json.Marshal(p.Trend[1])
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		for _, f := range want.Fields {
			if _, ok := m[f]; !ok {
				t.Errorf("snapshot %s has no field %q", raw, f)
			}
		}
	})
	register(file, "pattern.source_loops.add", func(t *testing.T, c Case) {
		var in struct {
			LoopID  string `json:"loop_id"`
			Present bool   `json:"already_present"`
		}
		clMustJSON(t, c.Input, &in)
		p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
		t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
		crossloop.Discover(p, "ralph-fix-auth-a1b2c3d4", "software-implementer", t0)
		before := len(p.SourceLoops)
		t1 := t0.Add(90 * time.Minute)
		crossloop.Apply(p, in.LoopID, "debugger", true, t1)
		if p.UsageCount != 2 {
			t.Errorf("usage_count = %d, want 2", p.UsageCount)
		}
		if in.Present {
			if len(p.SourceLoops) != before {
				t.Errorf("source loops grew for a loop already present: %+v", p.SourceLoops)
			}
			return
		}
		last := p.SourceLoops[len(p.SourceLoops)-1]
		if len(p.SourceLoops) != before+1 || last.LoopID != in.LoopID || !last.Timestamp.Equal(t1) || last.ContributedBy != "debugger" {
			t.Errorf("appended = %+v", last)
		}
	})
	register(file, "metrics.overall_success_rate", func(t *testing.T, c Case) {
		var in struct {
			S int `json:"successful_applications"`
			T int `json:"total_applications"`
		}
		var want struct {
			Rate      float64 `json:"overall_success_rate"`
			Displayed float64 `json:"displayed"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.OverallSuccessRate(in.S, in.T)
		if got != want.Rate || fmt.Sprintf("%.2f", got) != fmt.Sprint(want.Displayed) {
			t.Errorf("OverallSuccessRate = %v, want %v", got, want.Rate)
		}
		st := crossloop.NewStats()
		st.Successful, st.Failed = in.S, in.T-in.S
		if m := crossloop.ComputeMetrics(st); m.Usage.OverallSuccessRate != want.Rate || m.Usage.Total != in.T {
			t.Errorf("metrics usage = %+v", m.Usage)
		}
	})
	register(file, "metrics.improvement_percentage", func(t *testing.T, c Case) {
		var in struct {
			With    float64 `json:"average_iterations_with"`
			Without float64 `json:"average_iterations_without"`
		}
		var want struct {
			Imp       float64 `json:"improvement_percentage"`
			Displayed float64 `json:"displayed"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.Improvement(in.Without, in.With)
		if got != want.Imp || crossloop.Round1(got) != want.Displayed {
			t.Errorf("Improvement = %v (%v), want %v (%v)", got, crossloop.Round1(got), want.Imp, want.Displayed)
		}
	})
	register(file, "metrics.per_loop_improvement", func(t *testing.T, c Case) {
		var in struct {
			B float64 `json:"baseline_iterations"`
			A float64 `json:"actual_iterations"`
		}
		var want struct {
			Imp       *float64 `json:"improvement"`
			Displayed string   `json:"displayed"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.Improvement(in.B, in.A)
		if want.Imp != nil && got != *want.Imp {
			t.Errorf("Improvement(%v,%v) = %v, want %v", in.B, in.A, got, *want.Imp)
		}
		// the displayed forms differ between documents ("33.3%", "-37.5%"
		// for fewer iterations, "33% faster"); lore shows one decimal.
		digits := strings.TrimLeft(strings.TrimSuffix(strings.TrimSuffix(want.Displayed, " faster"), "%"), "-")
		if r := fmt.Sprintf("%.1f", crossloop.Round1(got)); !strings.HasPrefix(r, digits) {
			t.Errorf("displayed %s, want %s", r, want.Displayed)
		}
	})
	register(file, "metrics.loops_counted", func(t *testing.T, c Case) {
		var in struct {
			With    int `json:"loops_with_pattern_injection"`
			Without int `json:"loops_without_pattern_injection"`
		}
		clMustJSON(t, c.Input, &in)
		st := crossloop.NewStats()
		st.Categories["debugging"] = &crossloop.Cat{With: in.With, WithIter: in.With * 3, Without: in.Without, WithoutIter: in.Without * 5}
		m := crossloop.ComputeMetrics(st)
		if m.Benefit.With != in.With || m.Benefit.Without != in.Without || m.Benefit.AvgWithout != 5 {
			t.Errorf("benefit = %+v", m.Benefit)
		}
		if b, ok := st.Baseline("debugging"); !ok || b != 5 {
			t.Errorf("baseline = %v %v, want the mean of loops without injection (5)", b, ok)
		}
	})
	register(file, "inject.filter_min_success_rate", func(t *testing.T, c Case) {
		var in struct {
			Min  float64 `json:"min_success_rate"`
			Rate float64 `json:"success_rate"`
		}
		var want struct {
			Included bool `json:"included"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		p := &crossloop.Pattern{Type: crossloop.TypeError, SuccessRate: in.Rate}
		if got := crossloop.Keep(p, in.Min, nil); got != want.Included {
			t.Errorf("Keep(rate %v, min %v) = %v", in.Rate, in.Min, got)
		}
	})
	register(file, "inject.rank_score", func(t *testing.T, c Case) {
		// open, settled by SPEC §6: score = relevance × effectiveness
		// (success rate × maturity multiplier); at equal maturity 0.88×0.94
		// beats 0.92×0.87.
		var in struct {
			Relevance float64 `json:"relevance"`
			Rate      float64 `json:"success_rate"`
			Other     struct {
				Relevance float64 `json:"relevance"`
				Rate      float64 `json:"success_rate"`
			} `json:"other"`
		}
		clMustJSON(t, c.Input, &in)
		a := crossloop.Score(in.Relevance, in.Rate*1.0)
		b := crossloop.Score(in.Other.Relevance, in.Other.Rate*1.0)
		if !(a > b) || a != in.Relevance*in.Rate {
			t.Errorf("scores %v vs %v: want the first ranked first", a, b)
		}
		t.Logf("open, settled: relevance × effectiveness: %.4f > %.4f", a, b)
	})
	register(file, "inject.limits", func(t *testing.T, c Case) {
		// open, settled by SPEC §6: top-k is global across types (5); an
		// explicit top-k is capped at max_patterns_injected (10).
		var in struct {
			TopK int `json:"top_k_patterns"`
			Max  int `json:"max_patterns_injected"`
		}
		clMustJSON(t, c.Input, &in)
		cfg := crossloop.DefaultConfig()
		if cfg.TopK != in.TopK || cfg.MaxInjected != in.Max {
			t.Errorf("defaults %d/%d, want %d/%d", cfg.TopK, cfg.MaxInjected, in.TopK, in.Max)
		}
		if cfg.Limit(0) != 5 || cfg.Limit(7) != 7 || cfg.Limit(25) != 10 {
			t.Errorf("limits: %d %d %d", cfg.Limit(0), cfg.Limit(7), cfg.Limit(25))
		}
	})
	register(file, "extract.dedup_merge", func(t *testing.T, c Case) {
		var in struct {
			Sim float64 `json:"similarity"`
			Th  float64 `json:"similarity_threshold"`
		}
		clMustJSON(t, c.Input, &in)
		got := crossloop.ShouldMerge(in.Sim, in.Th)
		if c.Lore == "open" {
			// settled by SPEC §6: "> 0.80", strictly.
			if got {
				t.Errorf("ShouldMerge(%v, %v) = true, want false (strict)", in.Sim, in.Th)
			}
			t.Logf("open, settled: exactly %.2f does not merge", in.Sim)
			return
		}
		var want struct {
			Merged bool `json:"merged"`
		}
		clMustJSON(t, c.Expected, &want)
		if got != want.Merged {
			t.Errorf("ShouldMerge(%v, %v) = %v, want %v", in.Sim, in.Th, got, want.Merged)
		}
	})
	register(file, "extract.which_loops", func(t *testing.T, c Case) {
		// open, settled by SPEC §6: every completion extracts; a failed loop
		// gives error→fix pairs it resolved and anti-patterns, never a
		// success approach.
		one, zero := 1, 0
		l := &crossloop.Loop{ID: "ralph-x-00000000", Task: "fix it", Outcome: crossloop.OutcomeFailure,
			Iterations: []crossloop.Iteration{
				{N: 1, ErrorType: "TypeError", ErrorMessage: "x is null"},
				{N: 2, FixDescription: "Added a null check before use", TestsPassed: &one, TestsFailed: &zero}}}
		types := map[string]bool{}
		for _, cd := range crossloop.Extract(l, crossloop.ExtractOptions{Templates: true}) {
			types[cd.Pattern.Type] = true
		}
		if !types[crossloop.TypeError] || !types[crossloop.TypeAnti] || types[crossloop.TypeSuccess] {
			t.Errorf("types from a failed loop = %v", types)
		}
		t.Log("open, settled: a failed loop yields error→fix pairs and anti-patterns")
	})
	register(file, "prune.decide", func(t *testing.T, c Case) {
		var in struct {
			Rate  *float64 `json:"success_rate"`
			Usage int      `json:"usage_count"`
			Days  float64  `json:"days_since_last_used"`
		}
		clMustJSON(t, c.Input, &in)
		pol := crossloop.DefaultPrunePolicy()
		if in.Rate == nil {
			// open: minimum uses before judging — 3 (the config), not 5.
			if pol.MinUsageCount != 3 || !crossloop.DecidePrune(0.4, 3, 0, pol) || crossloop.DecidePrune(0.4, 2, 0, pol) {
				t.Errorf("min usage count = %d, want 3", pol.MinUsageCount)
			}
			t.Log("open, settled: 3 uses before the success rate is judged")
			return
		}
		got := crossloop.DecidePrune(*in.Rate, in.Usage, in.Days, pol)
		now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		p := &crossloop.Pattern{Type: crossloop.TypeError, SuccessRate: *in.Rate, UsageCount: in.Usage,
			LastUsed: now.Add(-time.Duration(in.Days * 24 * float64(time.Hour)))}
		if gp, _ := crossloop.PruneDecision(p, pol, now); gp != got {
			t.Errorf("PruneDecision = %v, DecidePrune = %v", gp, got)
		}
		if c.Lore == "open" {
			if got {
				t.Errorf("exactly %v days: pruned, want kept (> 90 strictly)", in.Days)
			}
			t.Log("open, settled: unused for exactly 90 days is kept")
			return
		}
		var want struct {
			Prune bool `json:"prune"`
		}
		clMustJSON(t, c.Expected, &want)
		if got != want.Prune {
			t.Errorf("prune(%+v) = %v, want %v", in, got, want.Prune)
		}
	})
	register(file, "prune.archive_file", func(t *testing.T, c Case) {
		var in struct {
			Month string `json:"pruned_in_month"`
		}
		var want struct {
			File string `json:"file"`
		}
		clMustJSON(t, c.Input, &in)
		clMustJSON(t, c.Expected, &want)
		m := crossloop.ArchiveMonth(time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC))
		if m != in.Month || ".aiwg/ralph/shared/archive/"+crossloop.ArchiveFile(m) != want.File {
			t.Errorf("archive month %s file %s, want %s", m, crossloop.ArchiveFile(m), want.File)
		}
	})
}

func clMustJSON(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func crossSchemaCase(t *testing.T, c Case, def string) {
	var want struct {
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	}
	clMustJSON(t, c.Expected, &want)
	errs, err := crossloop.ValidateDoc(def, c.Input)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want.Errors)
	if (len(errs) == 0) != want.Valid || !reflect.DeepEqual(clNonNil(errs), clNonNil(want.Errors)) {
		t.Errorf("errors = %q, want valid=%v %q", errs, want.Valid, want.Errors)
	}
}

func clNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func crossApplySequence(t *testing.T, c Case) {
	var in struct {
		Start        json.RawMessage `json:"start"`
		Applications []string        `json:"applications"`
	}
	clMustJSON(t, c.Input, &in)
	p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	var startStr string
	if json.Unmarshal(in.Start, &startStr) == nil {
		crossloop.Discover(p, "ralph-a-00000000", "a", t0)
	} else {
		// "0.93 (14/15)": 14 successes and 1 failure so far
		p.Successful, p.Failed, p.UsageCount = 14, 1, 15
		p.SuccessRate = crossloop.SuccessRate(14, 1)
	}
	for i, a := range in.Applications {
		crossloop.Apply(p, fmt.Sprintf("ralph-l%d-00000000", i), "b", a == "success", t0.Add(time.Duration(i+1)*time.Hour))
	}
	var want struct {
		Usage     int      `json:"usage_count"`
		S         *int     `json:"successful_applications"`
		F         *int     `json:"failed_applications"`
		Rate      *float64 `json:"success_rate"`
		Displayed string   `json:"success_rate_displayed"`
	}
	clMustJSON(t, c.Expected, &want)
	if p.UsageCount != want.Usage {
		t.Errorf("usage = %d, want %d", p.UsageCount, want.Usage)
	}
	if want.S != nil && (p.Successful != *want.S || p.Failed != *want.F) {
		t.Errorf("counts = %d/%d, want %d/%d", p.Successful, p.Failed, *want.S, *want.F)
	}
	if want.Rate != nil && p.SuccessRate != *want.Rate {
		t.Errorf("rate = %v, want %v", p.SuccessRate, *want.Rate)
	}
	if want.Displayed != "" && fmt.Sprintf("%.2f", p.SuccessRate) != want.Displayed {
		t.Errorf("displayed %.2f, want %s", p.SuccessRate, want.Displayed)
	}
}
