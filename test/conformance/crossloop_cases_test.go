package conformance_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
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
		register(file, fn, func(t T, c Case) { crossSchemaCase(t, c, def) })
		wholeInput[file+":"+fn] = true
	}
	register(file, "loop_id.matches_schema", func(t T, c Case) {
		var id string
		var want bool
		decodeInput(t, c, &id)
		clMustJSON(t, c.Expected, &want)
		if got := crossloop.ValidLoopID(id); got != want {
			t.Errorf("ValidLoopID(%q) = %v, want %v", id, got, want)
		}
	})
	register(file, "generateLoopId.slug", func(t T, c Case) {
		var task string
		var want struct {
			Slug    string `json:"slug"`
			Matches bool   `json:"id_matches_loop_state_regex"`
		}
		decodeInput(t, c, &task)
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
	register(file, "LearningExtractor.categorizeError", func(t T, c Case) {
		// open: lore has no error categories of its own; an error's
		// signature is its type plus its generalised message, so a short
		// message is its own pattern.
		var in string
		decodeInput(t, c, &in)
		if got := crossloop.GeneralizeMessage(in); got != in {
			t.Errorf("GeneralizeMessage(%q) = %q, want it unchanged", in, got)
		}
		t.Logf("open, settled: the signature of %q is the message itself", in)
	})
	register(file, "LearningExtractor.normalizeApproach", func(t T, c Case) {
		// open: lore keeps a success loop's fix descriptions verbatim as the
		// approach steps, however short.
		var in string
		decodeInput(t, c, &in)
		l := &crossloop.Loop{ID: "ralph-x-00000000", Task: "t", Outcome: crossloop.OutcomeSuccess,
			Iterations: []crossloop.Iteration{{N: 1, FixDescription: in}}}
		cs := crossloop.Extract(l, crossloop.ExtractOptions{Types: map[string]bool{crossloop.TypeSuccess: true}})
		if len(cs) != 1 || !reflect.DeepEqual(cs[0].Pattern.Steps, []string{in}) {
			t.Errorf("success steps from %q = %+v", in, cs)
		}
		t.Logf("open, settled: %q stays a step as written", in)
	})
	register(file, "pattern.apply_sequence", crossApplySequence)
	register(file, "pattern.success_rate", func(t T, c Case) {
		var in struct{ Successful, Failed int }
		var want struct {
			Rate      float64 `json:"success_rate"`
			Displayed string  `json:"displayed"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.SuccessRate(in.Successful, in.Failed)
		if got != want.Rate || fmt.Sprintf("%.2f", got) != want.Displayed {
			t.Errorf("SuccessRate(%d,%d) = %v, want %v (%s)", in.Successful, in.Failed, got, want.Rate, want.Displayed)
		}
	})
	register(file, "pattern.effectiveness_trend.append", func(t T, c Case) {
		var in struct {
			AfterEach bool `json:"after_each_application"`
		}
		var want struct {
			Fields []string `json:"snapshot_fields"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		if !in.AfterEach {
			t.Fatal("input: lore appends a snapshot after each application; a case saying otherwise is not settled")
		}
		p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
		t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
		crossloop.Discover(p, "ralph-a-00000000", "a", t0)
		crossloop.Apply(p, "ralph-b-00000000", "b", true, t0.Add(time.Hour))
		crossloop.Apply(p, "ralph-c-00000000", "c", false, t0.Add(2*time.Hour))
		// one snapshot at discovery, then one after each application
		if len(p.Trend) != 3 || p.Trend[1].SampleSize != 2 || p.Trend[1].SuccessRate != 1 ||
			p.Trend[2].SampleSize != 3 || p.Trend[2].SuccessRate != p.SuccessRate {
			t.Fatalf("trend = %+v, want 3 snapshots, after each application", p.Trend)
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
	register(file, "pattern.source_loops.add", func(t T, c Case) {
		var in struct {
			LoopID  string `json:"loop_id"`
			Present bool   `json:"already_present"`
		}
		decodeInput(t, c, &in)
		p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
		t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
		first := "ralph-other-00000000"
		if in.Present {
			first = in.LoopID
		} else if in.LoopID == first {
			first = "ralph-another-00000000"
		}
		crossloop.Discover(p, first, "software-implementer", t0)
		before := len(p.SourceLoops)
		t1 := t0.Add(90 * time.Minute)
		crossloop.Apply(p, in.LoopID, "debugger", true, t1)
		if p.UsageCount != 2 {
			t.Errorf("usage_count = %d, want 2", p.UsageCount)
		}
		var want struct {
			Appended *struct {
				LoopID string `json:"loop_id"`
			} `json:"appended"`
			StillIncremented *bool `json:"usage_count_still_incremented"`
		}
		clMustJSON(t, c.Expected, &want)
		if (want.Appended == nil) != in.Present || (want.StillIncremented != nil && !*want.StillIncremented) {
			t.Fatalf("expected %s disagrees with already_present=%v", c.Expected, in.Present)
		}
		if want.Appended == nil {
			if len(p.SourceLoops) != before {
				t.Errorf("source loops grew for a loop already present: %+v", p.SourceLoops)
			}
			return
		}
		if want.Appended.LoopID != in.LoopID {
			t.Fatalf("expected appends %s, input loop %s", want.Appended.LoopID, in.LoopID)
		}
		last := p.SourceLoops[len(p.SourceLoops)-1]
		if len(p.SourceLoops) != before+1 || last.LoopID != in.LoopID || !last.Timestamp.Equal(t1) || last.ContributedBy != "debugger" {
			t.Errorf("appended = %+v", last)
		}
	})
	register(file, "metrics.overall_success_rate", func(t T, c Case) {
		var in struct {
			S int `json:"successful_applications"`
			F int `json:"failed_applications"`
			T int `json:"total_applications"`
		}
		var want struct {
			Rate      float64 `json:"overall_success_rate"`
			Displayed float64 `json:"displayed"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		if in.S+in.F != in.T {
			t.Fatalf("input: successful %d + failed %d != total %d", in.S, in.F, in.T)
		}
		got := crossloop.OverallSuccessRate(in.S, in.T)
		if got != want.Rate || fmt.Sprintf("%.2f", got) != fmt.Sprint(want.Displayed) {
			t.Errorf("OverallSuccessRate = %v, want %v", got, want.Rate)
		}
		st := crossloop.NewStats()
		st.Successful, st.Failed = in.S, in.F
		if m := crossloop.ComputeMetrics(st); m.Usage.OverallSuccessRate != want.Rate || m.Usage.Total != in.T {
			t.Errorf("metrics usage = %+v", m.Usage)
		}
	})
	register(file, "metrics.improvement_percentage", func(t T, c Case) {
		var in struct {
			With    float64 `json:"average_iterations_with"`
			Without float64 `json:"average_iterations_without"`
		}
		var want struct {
			Imp       float64 `json:"improvement_percentage"`
			Displayed float64 `json:"displayed"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		got := crossloop.Improvement(in.Without, in.With)
		if got != want.Imp || crossloop.Round1(got) != want.Displayed {
			t.Errorf("Improvement = %v (%v), want %v (%v)", got, crossloop.Round1(got), want.Imp, want.Displayed)
		}
	})
	register(file, "metrics.per_loop_improvement", func(t T, c Case) {
		var in struct {
			B float64 `json:"baseline_iterations"`
			A float64 `json:"actual_iterations"`
		}
		var want struct {
			Imp       *float64 `json:"improvement"`
			Displayed string   `json:"displayed"`
		}
		decodeInput(t, c, &in)
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
	register(file, "metrics.loops_counted", func(t T, c Case) {
		var in struct {
			With    int `json:"loops_with_pattern_injection"`
			Without int `json:"loops_without_pattern_injection"`
		}
		decodeInput(t, c, &in)
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
	register(file, "inject.filter_min_success_rate", func(t T, c Case) {
		// A case names the pattern's type, or none: then the filter must
		// give the same answer for every type judged on its success rate.
		// An anti-pattern is judged on its failure rate (KeepRate).
		var in struct {
			Min         float64  `json:"min_success_rate"`
			Rate        *float64 `json:"success_rate"`
			FailureRate *float64 `json:"failure_rate"`
			Type        string   `json:"type"`
		}
		var want struct {
			Included bool `json:"included"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		types := []string{in.Type}
		if in.Type == "" {
			types = []string{crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeTemplate}
		} else if !crossloop.ValidType(in.Type) {
			t.Fatalf("input: unknown pattern type %q", in.Type)
		}
		for _, typ := range types {
			p := &crossloop.Pattern{Type: typ}
			switch {
			case typ == crossloop.TypeAnti && in.FailureRate != nil && in.Rate == nil:
				p.Successful, p.Failed = clCounts(t, *in.FailureRate)
			case typ != crossloop.TypeAnti && in.Rate != nil && in.FailureRate == nil:
				p.SuccessRate = *in.Rate
			default:
				t.Fatalf("input: a %s pattern needs exactly its rate (success_rate, or failure_rate for an anti-pattern)", typ)
			}
			if got := crossloop.Keep(p, in.Min, nil); got != want.Included {
				t.Errorf("Keep(%s pattern, keep rate %v, min %v) = %v, want %v", typ, crossloop.KeepRate(p), in.Min, got, want.Included)
			}
			// The type filter of an injection excludes other types.
			if crossloop.Keep(p, 0, map[string]bool{"none": true}) {
				t.Errorf("Keep(%s pattern) with a type filter excluding it = true", typ)
			}
		}
	})
	register(file, "inject.rank_score", func(t T, c Case) {
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
		decodeInput(t, c, &in)
		a := crossloop.Score(in.Relevance, in.Rate*1.0)
		b := crossloop.Score(in.Other.Relevance, in.Other.Rate*1.0)
		if !(a > b) || a != in.Relevance*in.Rate {
			t.Errorf("scores %v vs %v: want the first ranked first", a, b)
		}
		t.Logf("open, settled: relevance × effectiveness: %.4f > %.4f", a, b)
	})
	register(file, "inject.limits", func(t T, c Case) {
		// open, settled by SPEC §6: top-k is global across types (5); an
		// explicit top-k is capped at max_patterns_injected (10).
		var in struct {
			TopK int `json:"top_k_patterns"`
			Max  int `json:"max_patterns_injected"`
		}
		decodeInput(t, c, &in)
		cfg := crossloop.DefaultConfig()
		if cfg.TopK != in.TopK || cfg.MaxInjected != in.Max {
			t.Errorf("defaults %d/%d, want %d/%d", cfg.TopK, cfg.MaxInjected, in.TopK, in.Max)
		}
		between := (in.TopK + in.Max + 1) / 2
		if cfg.Limit(0) != in.TopK || cfg.Limit(between) != between || cfg.Limit(in.Max+15) != in.Max {
			t.Errorf("limits: %d %d %d, want %d %d %d", cfg.Limit(0), cfg.Limit(between), cfg.Limit(in.Max+15), in.TopK, between, in.Max)
		}
	})
	register(file, "extract.dedup_merge", func(t T, c Case) {
		var in struct {
			Sim float64 `json:"similarity"`
			Th  float64 `json:"similarity_threshold"`
		}
		decodeInput(t, c, &in)
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
	register(file, "extract.which_loops", func(t T, c Case) {
		// open, settled by SPEC §6: every completion extracts; a failed loop
		// gives error→fix pairs it resolved and anti-patterns, never a
		// success approach.
		var in struct {
			Outcome string `json:"loop_outcome"`
		}
		decodeInput(t, c, &in)
		switch in.Outcome {
		case crossloop.OutcomeSuccess, crossloop.OutcomePartial, crossloop.OutcomeFailure:
		default:
			t.Fatalf("input: unknown loop outcome %q", in.Outcome)
		}
		one, zero := 1, 0
		l := &crossloop.Loop{ID: "ralph-x-00000000", Task: "fix it", Outcome: in.Outcome,
			Iterations: []crossloop.Iteration{
				{N: 1, ErrorType: "TypeError", ErrorMessage: "x is null"},
				{N: 2, FixDescription: "Added a null check before use", TestsPassed: &one, TestsFailed: &zero}}}
		types := map[string]bool{}
		for _, cd := range crossloop.Extract(l, crossloop.ExtractOptions{Templates: true}) {
			types[cd.Pattern.Type] = true
		}
		if !types[crossloop.TypeError] || types[crossloop.TypeAnti] != (in.Outcome == crossloop.OutcomeFailure) ||
			types[crossloop.TypeSuccess] != (in.Outcome == crossloop.OutcomeSuccess) {
			t.Errorf("types from a %s loop = %v", in.Outcome, types)
		}
		t.Logf("open, settled: a %s loop yields %v", in.Outcome, types)
	})
	register(file, "prune.decide", func(t T, c Case) {
		// A case's policy (lore patterns prune --min-success-rate,
		// --min-usage-count, --max-age-days) overrides the defaults.
		var in struct {
			Rate           *float64 `json:"success_rate"`
			Usage          *int     `json:"usage_count"`
			Days           *float64 `json:"days_since_last_used"`
			MinUsageEval   *string  `json:"min_usage_count_for_evaluation"`
			MinSuccessRate *float64 `json:"min_success_rate"`
			MinUsageCount  *int     `json:"min_usage_count"`
			MaxAgeDays     *float64 `json:"max_age_days"`
		}
		decodeInput(t, c, &in)
		pol := crossloop.DefaultPrunePolicy()
		if in.MinSuccessRate != nil {
			pol.MinSuccessRate = *in.MinSuccessRate
		}
		if in.MinUsageCount != nil {
			pol.MinUsageCount = *in.MinUsageCount
		}
		if in.MaxAgeDays != nil {
			pol.MaxAgeDays = *in.MaxAgeDays
		}
		if in.MinUsageEval != nil {
			// open: the minimum uses before judging; the case lists the
			// candidate values, lore's policy must be one of them and the
			// rule must judge the rate from exactly that many uses.
			if in.Rate != nil || in.Usage != nil || in.Days != nil {
				t.Fatal("input: min_usage_count_for_evaluation is a question of its own")
			}
			var cands []int
			for _, f := range strings.FieldsFunc(*in.MinUsageEval, func(r rune) bool { return r < '0' || r > '9' }) {
				var n int
				fmt.Sscan(f, &n)
				cands = append(cands, n)
			}
			if !slices.Contains(cands, pol.MinUsageCount) {
				t.Errorf("min usage count %d, want one of %v (%q)", pol.MinUsageCount, cands, *in.MinUsageEval)
			}
			low := pol.MinSuccessRate / 2
			if !crossloop.DecidePrune(low, pol.MinUsageCount, 0, pol) || crossloop.DecidePrune(low, pol.MinUsageCount-1, 0, pol) {
				t.Errorf("rate %v judged at other than %d uses", low, pol.MinUsageCount)
			}
			t.Logf("open, settled: %d uses before the success rate is judged (candidates %v)", pol.MinUsageCount, cands)
			return
		}
		if in.Rate == nil || in.Usage == nil || in.Days == nil {
			t.Fatal("input: success_rate, usage_count and days_since_last_used are required")
		}
		got := crossloop.DecidePrune(*in.Rate, *in.Usage, *in.Days, pol)
		now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		p := &crossloop.Pattern{Type: crossloop.TypeError, SuccessRate: *in.Rate, UsageCount: *in.Usage,
			LastUsed: now.Add(-time.Duration(*in.Days * 24 * float64(time.Hour)))}
		gp, why := crossloop.PruneDecision(p, pol, now)
		if gp != got {
			t.Errorf("PruneDecision = %v (%s), DecidePrune = %v", gp, why, got)
		}
		if c.Lore == "open" {
			// settled by SPEC §6: unused for more than max_age_days, strictly.
			if want := *in.Days > pol.MaxAgeDays; got != want {
				t.Errorf("%v days unused (max %v): pruned = %v, want %v", *in.Days, pol.MaxAgeDays, got, want)
			}
			t.Logf("open, settled: unused for %v days (max %v, strictly more) pruned = %v", *in.Days, pol.MaxAgeDays, got)
			return
		}
		var want struct {
			Prune    bool   `json:"prune"`
			Reason   string `json:"reason"`
			Archived *bool  `json:"archived"`
		}
		clMustJSON(t, c.Expected, &want)
		if got != want.Prune {
			t.Errorf("prune(%+v) = %v, want %v", in, got, want.Prune)
		}
		// A pruned pattern is archived, never deleted.
		if want.Archived != nil && *want.Archived != gp {
			t.Errorf("archived = %v, want %v", gp, *want.Archived)
		}
		// "needs more data": too few uses for the rate to be judged.
		if want.Reason == "needs more data" && *in.Usage >= pol.MinUsageCount {
			t.Errorf("%d uses judged as too few (min %d)", *in.Usage, pol.MinUsageCount)
		}
	})
	register(file, "prune.archive_file", func(t T, c Case) {
		var in struct {
			Month string `json:"pruned_in_month"`
		}
		var want struct {
			File string `json:"file"`
		}
		decodeInput(t, c, &in)
		clMustJSON(t, c.Expected, &want)
		start, err := time.Parse("2006-01", in.Month)
		if err != nil {
			t.Fatalf("input: pruned_in_month: %v", err)
		}
		// the last hour of the month (UTC) still files into it
		m := crossloop.ArchiveMonth(start.AddDate(0, 1, 0).Add(-time.Hour))
		if m != in.Month || ".aiwg/ralph/shared/archive/"+crossloop.ArchiveFile(m) != want.File {
			t.Errorf("archive month %s file %s, want %s", m, crossloop.ArchiveFile(m), want.File)
		}
	})
}

func clMustJSON(t T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func crossSchemaCase(t T, c Case, def string) {
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

// clCounts gives success and failure counts out of 1000 whose failure rate
// is rate.
func clCounts(t T, rate float64) (successful, failed int) {
	t.Helper()
	if rate < 0 || rate > 1 {
		t.Fatalf("input: failure_rate %v outside [0,1]", rate)
	}
	failed = int(math.Round(rate * 1000))
	return 1000 - failed, failed
}

func clNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func crossApplySequence(t T, c Case) {
	var in struct {
		Start        json.RawMessage `json:"start"`
		Applications []string        `json:"applications"`
	}
	decodeInput(t, c, &in)
	p := &crossloop.Pattern{ID: "pat-error-x-001", Type: crossloop.TypeError}
	t0 := time.Date(2026, 2, 2, 15, 0, 0, 0, time.UTC)
	var startStr string
	if json.Unmarshal(in.Start, &startStr) == nil {
		if !strings.HasPrefix(startStr, "extracted") {
			t.Fatalf("input: start %q: want \"extracted ...\" or a record", startStr)
		}
		crossloop.Discover(p, "ralph-a-00000000", "a", t0)
	} else {
		// {"usage_count": 15, "success_rate": "0.93 (14/15)"}: 14 successes
		// of 15 uses so far.
		var st struct {
			Usage int    `json:"usage_count"`
			Rate  string `json:"success_rate"`
		}
		if err := strictUnmarshal(in.Start, &st); err != nil {
			t.Fatalf("input: start: %v", err)
		}
		var shown float64
		var ok, n int
		if _, err := fmt.Sscanf(st.Rate, "%g (%d/%d)", &shown, &ok, &n); err != nil || n != st.Usage || ok > n {
			t.Fatalf("input: start %+v: want \"RATE (S/N)\" with N = usage_count (%v)", st, err)
		}
		p.Successful, p.Failed, p.UsageCount = ok, n-ok, n
		p.SuccessRate = crossloop.SuccessRate(ok, n-ok)
		if fmt.Sprintf("%.2f", p.SuccessRate) != fmt.Sprintf("%.2f", shown) {
			t.Errorf("start rate %.2f, the case shows %v", p.SuccessRate, shown)
		}
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
