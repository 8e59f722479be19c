package conformance_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// Handlers for swarm_learning.json (swarm-tools learning systems). The
// departures L1–L4 of conformance/README.md are asserted as lore's value.

const learningFile = "swarm_learning"

// num reads a JSON number or the strings "NaN", "Infinity", "-Infinity".
func init() {
	register(learningFile, "calculateDecayedValue", func(t T, c Case) {
		var in struct {
			Timestamp string          `json:"timestamp"`
			Now       string          `json:"now"`
			HalfLife  json.RawMessage `json:"half_life_days"`
		}
		var want struct {
			Value json.RawMessage `json:"value"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		ts, terr := learning.ParseTime("timestamp", in.Timestamp)
		hl := num(t, in.HalfLife)
		if c.Lore == "departs" { // L1: bad timestamps and half-lives are refused
			if terr != nil {
				wantBadInput(t, terr, "timestamp")
			} else {
				// refused by the rule, and by the configuration a
				// half-life is set through
				_, err := learning.DecayFactor(ts, mustTime(t, in.Now), hl)
				wantBadInput(t, err, "half_life_days")
				cfg := learning.DefaultLearningConfig()
				cfg.HalfLifeDays = hl
				wantBadInput(t, cfg.Validate(), "halfLifeDays")
			}
			t.Logf("departs L1: refused (reference: %s)", want.Value)
			return
		}
		if terr != nil {
			t.Fatal(terr)
		}
		got, err := learning.DecayFactor(ts, mustTime(t, in.Now), hl)
		if err != nil {
			t.Fatal(err)
		}
		sameFloat(t, "value", got, num(t, want.Value))
	})

	register(learningFile, "calculateCriterionWeight", func(t T, c Case) {
		var in struct {
			Events []struct {
				ID        string          `json:"id"`
				Criterion string          `json:"criterion"`
				Type      string          `json:"type"`
				Timestamp string          `json:"timestamp"`
				RawValue  json.RawMessage `json:"raw_value"`
			} `json:"events"`
			Now    string          `json:"now"`
			Config json.RawMessage `json:"config"`
		}
		var want struct {
			Criterion     string  `json:"criterion"`
			Weight        float64 `json:"weight"`
			HelpfulCount  int     `json:"helpful_count"`
			HarmfulCount  int     `json:"harmful_count"`
			LastValidated *string `json:"last_validated"`
			HalfLifeDays  float64 `json:"half_life_days"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		evs := make([]learning.FeedbackEvent, len(in.Events))
		for i, e := range in.Events {
			evs[i] = learning.FeedbackEvent{ID: e.ID, Criterion: e.Criterion, Type: learning.FeedbackType(e.Type),
				Time: mustTime(t, e.Timestamp), RawValue: num(t, e.RawValue)}
		}
		got, err := learning.CalculateCriterionWeight(evs, mustTime(t, in.Now), learningConfig(t, in.Config))
		if err != nil {
			t.Fatal(err)
		}
		sameFloat(t, "weight", got.Weight, want.Weight)
		if got.Criterion != want.Criterion || got.HelpfulCount != want.HelpfulCount ||
			got.HarmfulCount != want.HarmfulCount || got.HalfLifeDays != want.HalfLifeDays {
			t.Errorf("got %+v, want %+v", got, want)
		}
		sameTimePtr(t, "last_validated", got.LastValidated, want.LastValidated)
	})

	register(learningFile, "shouldDeprecateCriterion", func(t T, c Case) {
		var in struct {
			Weight learning.Weight `json:"weight"`
			Config json.RawMessage `json:"config"`
		}
		var want struct {
			Result bool `json:"result"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		// The decision reads the record's counts; the rest of the record
		// must be one lore could hold.
		w := in.Weight
		if w.Criterion == "" || !(w.Weight >= 0 && w.Weight <= 1) || !(w.HalfLifeDays > 0) {
			t.Fatalf("input: weight record %+v: want a criterion, a weight in [0,1] and a half-life > 0", w)
		}
		if got := learning.ShouldDeprecateCriterion(w.HelpfulCount, w.HarmfulCount, learningConfig(t, in.Config)); got != want.Result {
			t.Errorf("%s (%d helpful, %d harmful): got %v, want %v", w.Criterion, w.HelpfulCount, w.HarmfulCount, got, want.Result)
		}
	})

	scoreCase := func(t T, c Case, scoreKey string) {
		var in struct {
			Signals refSignals      `json:"signals"`
			Now     string          `json:"now"`
			Config  json.RawMessage `json:"config"`
		}
		var want map[string]json.RawMessage
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		var wantType, wantReason string
		decode(t, want["type"], &wantType)
		decode(t, want["reasoning"], &wantReason)
		cfg := learningConfig(t, in.Config)
		s, terr := in.Signals.toSignals(t)
		data := in.Signals.outcomeData(t)
		serr := events.ValidateData(outcomeType, data)
		if c.Lore == "departs" { // L1: negative, NaN and missing signals are refused
			// The rule names the first bad field; the event schema, the
			// layer that parses signals at every door, refuses a bad field
			// it carries, naming it.
			field := badSignal(t, in.Signals)
			err := s.Validate()
			switch field {
			case "":
				t.Fatalf("departs L1: no bad signal in the input")
			case "timestamp":
				err = terr
			}
			wantBadInput(t, err, field)
			if _, err := learning.ScoreImplicitFeedback(s, mustTime(t, in.Now), cfg); !errors.Is(err, learning.ErrBadInput) {
				t.Errorf("ScoreImplicitFeedback of bad signals: err = %v, want bad input", err)
			}
			// The schema reports one bad field it carries, not necessarily
			// the rule's first.
			var carried []string
			for _, f := range badSignals(t, in.Signals) {
				if f != "timestamp" && len(rawOf(in.Signals, f)) > 0 {
					carried = append(carried, f)
				}
			}
			if len(carried) > 0 && (serr == nil || !slices.ContainsFunc(carried, func(f string) bool {
				return strings.Contains(serr.Error(), `"data.`+f+`"`)
			})) {
				t.Errorf("%s data %s: schema error %v, want one naming data. and one of %v", outcomeType, data, serr, carried)
			}
			t.Logf("departs L1: %s refused by the rule and the event schema (reference: %s %s)", field, wantType, wantReason)
			return
		}
		if serr != nil {
			t.Errorf("%s data %s refused: %v", outcomeType, data, serr)
		}
		if terr != nil {
			// The reference scores an unparseable timestamp (type from the
			// raw score, decayed_value NaN); SPEC §1 refuses it. lore's type
			// and reasoning, which need no time, must still match.
			wantBadInput(t, terr, "timestamp")
			_, typ := learning.RawScore(s, cfg)
			if string(typ) != wantType {
				t.Errorf("type = %s, want %s", typ, wantType)
			}
			t.Logf("unparseable timestamp refused (SPEC §1); type checked, reference decayed_value %s", want[scoreKey])
			return
		}
		got, err := learning.ScoreImplicitFeedback(s, mustTime(t, in.Now), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Type) != wantType || got.Reasoning != wantReason {
			t.Errorf("got %s %q, want %s %q", got.Type, got.Reasoning, wantType, wantReason)
		}
		sameFloat(t, scoreKey, got.DecayedValue, num(t, want[scoreKey]))
	}
	register(learningFile, "scoreImplicitFeedback", func(t T, c Case) { scoreCase(t, c, "decayed_value") })
	register(learningFile, "scoreOutcome", func(t T, c Case) { scoreCase(t, c, "score") })

	register(learningFile, "scoreImplicitFeedback.grid", func(t T, c Case) {
		var in struct {
			Now string `json:"now"`
		}
		var want struct {
			Rows []struct {
				Success    bool    `json:"success"`
				DurationMs float64 `json:"duration_ms"`
				ErrorCount float64 `json:"error_count"`
				RetryCount float64 `json:"retry_count"`
				Type       string  `json:"type"`
				Raw        float64 `json:"raw"`
			} `json:"rows"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		if len(want.Rows) == 0 {
			t.Fatal("grid has no rows")
		}
		now := mustTime(t, in.Now)
		for _, r := range want.Rows {
			got, err := learning.ScoreImplicitFeedback(learning.Signals{DurationMs: r.DurationMs, ErrorCount: r.ErrorCount,
				RetryCount: r.RetryCount, Success: r.Success, Time: now}, now, learning.DefaultLearningConfig())
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Type) != r.Type {
				t.Errorf("%+v: type %s", r, got.Type)
			}
			sameFloat(t, fmt.Sprintf("raw %+v", r), got.Raw, r.Raw)
			sameFloat(t, fmt.Sprintf("decayed %+v", r), got.DecayedValue, r.Raw)
		}
	})

	register(learningFile, "calculateDecayedCounts", func(t T, c Case) {
		var in struct {
			Events []refMaturityFeedback `json:"events"`
			Now    string                `json:"now"`
			Config json.RawMessage       `json:"config"`
		}
		var want struct {
			Helpful float64 `json:"decayedHelpful"`
			Harmful float64 `json:"decayedHarmful"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		h, x, err := learning.CalculateDecayedCounts(maturityEvents(t, in.Events), mustTime(t, in.Now), maturityConfig(t, in.Config))
		if err != nil {
			t.Fatal(err)
		}
		if c.Lore == "departs" { // L2: neutral counts in neither sum
			// lore's sums are those of the events without the neutral ones;
			// the reference's helpful sum agrees, its harmful sum counts
			// neutral feedback and is not lore's.
			var kept []refMaturityFeedback
			for _, e := range in.Events {
				if e.Type != string(learning.Neutral) {
					kept = append(kept, e)
				}
			}
			if len(kept) == len(in.Events) {
				t.Fatal("departs L2: no neutral feedback in the input")
			}
			kh, kx, err := learning.CalculateDecayedCounts(maturityEvents(t, kept), mustTime(t, in.Now), maturityConfig(t, in.Config))
			if err != nil {
				t.Fatal(err)
			}
			sameFloat(t, "decayedHelpful", h, kh)
			sameFloat(t, "decayedHarmful", x, kx)
			sameFloat(t, "decayedHelpful (reference)", h, want.Helpful)
			if want.Harmful <= x {
				t.Errorf("reference harmful %v does not count the neutral feedback (lore %v)", want.Harmful, x)
			}
			t.Logf("departs L2: neutral counts in neither sum (reference: harmful %v, lore %v)", want.Harmful, x)
			return
		}
		sameFloat(t, "decayedHelpful", h, want.Helpful)
		sameFloat(t, "decayedHarmful", x, want.Harmful)
	})

	register(learningFile, "calculateMaturityState", func(t T, c Case) {
		var in struct {
			Events []refMaturityFeedback `json:"events"`
			Now    string                `json:"now"`
			Config json.RawMessage       `json:"config"`
		}
		var want struct {
			State   string  `json:"state"`
			Helpful float64 `json:"decayedHelpful"`
			Harmful float64 `json:"decayedHarmful"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		s, h, x, err := learning.CalculateMaturityState(maturityEvents(t, in.Events), mustTime(t, in.Now), maturityConfig(t, in.Config))
		if err != nil {
			t.Fatal(err)
		}
		if string(s) != want.State {
			t.Errorf("state = %s, want %s", s, want.State)
		}
		sameFloat(t, "decayedHelpful", h, want.Helpful)
		sameFloat(t, "decayedHarmful", x, want.Harmful)
	})

	register(learningFile, "createPatternMaturity", func(t T, c Case) {
		var in struct {
			PatternID string `json:"pattern_id"`
			Now       string `json:"now"`
		}
		var want refMaturity
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		checkMaturity(t, learning.NewMaturity(in.PatternID, mustTime(t, in.Now)), want)
	})

	register(learningFile, "updatePatternMaturity", func(t T, c Case) {
		var in struct {
			Maturity refMaturity           `json:"maturity"`
			Events   []refMaturityFeedback `json:"events"`
			Now      string                `json:"now"`
		}
		var want refMaturity
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		m := in.Maturity.toMaturity(t)
		now := mustTime(t, in.Now)
		if c.Lore == "departs" { // L3: a manual promotion holds at the next update
			at := m.LastValidated
			for _, p := range []*time.Time{m.PromotedAt, m.DeprecatedAt} {
				if p != nil {
					at = *p
				}
			}
			m.Manual = &learning.Manual{State: m.State, Reason: "validated by hand", At: at}
			got, err := learning.UpdateMaturity(m, maturityEvents(t, in.Events), now, learning.DefaultMaturityConfig())
			if err != nil {
				t.Fatal(err)
			}
			want.State = string(m.State)
			checkMaturity(t, got, want)
			if got.Manual == nil || got.Manual.Reason != "validated by hand" {
				t.Errorf("manual state lost: %+v", got.Manual)
			}
			t.Logf("departs L3: manual promotion holds (reference overwrote it with candidate)")
			return
		}
		got, err := learning.UpdateMaturity(m, maturityEvents(t, in.Events), now, learning.DefaultMaturityConfig())
		if err != nil {
			t.Fatal(err)
		}
		checkMaturity(t, got, want)
	})

	register(learningFile, "promotePattern", func(t T, c Case) {
		var in struct {
			Maturity refMaturity `json:"maturity"`
			Now      string      `json:"now"`
		}
		var want struct {
			Throws string `json:"throws"`
			refMaturity
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if in.Now != "" {
			now = mustTime(t, in.Now)
		}
		got, _, err := learning.Promote(in.Maturity.toMaturity(t), "", "", now)
		if want.Throws != "" {
			if err == nil || err.Error() != want.Throws {
				t.Fatalf("err = %v, want %q", err, want.Throws)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkMaturity(t, got, want.refMaturity)
	})

	register(learningFile, "deprecatePattern", func(t T, c Case) {
		var in struct {
			Maturity refMaturity `json:"maturity"`
			Reason   string      `json:"reason"`
			Now      string      `json:"now"`
		}
		var want refMaturity
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if in.Now != "" {
			now = mustTime(t, in.Now)
		}
		got := learning.Deprecate(in.Maturity.toMaturity(t), in.Reason, "", now)
		checkMaturity(t, got, want)
		if c.Lore == "departs" { // L3: the reason is kept
			if got.Manual == nil || got.Manual.Reason != in.Reason || got.Manual.State != learning.Deprecated {
				t.Errorf("manual = %+v, want deprecated with reason %q", got.Manual, in.Reason)
			}
			t.Logf("departs L3: deprecation reason %q kept (reference discards it)", in.Reason)
		}
	})

	register(learningFile, "getMaturityMultiplier", func(t T, c Case) {
		var in struct {
			State string `json:"state"`
		}
		var want struct {
			Result *float64 `json:"result"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		m, ok := learning.Multiplier(learning.MaturityState(in.State))
		if ok != (want.Result != nil) || (ok && m != *want.Result) {
			t.Errorf("got %v %v, want %v", m, ok, want.Result)
		}
	})

	register(learningFile, "formatMaturityForPrompt", func(t T, c Case) {
		var in struct {
			Maturity refMaturity `json:"maturity"`
		}
		var want struct {
			Text string `json:"text"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		if got := learning.FormatMaturityForPrompt(in.Maturity.toMaturity(t)); got != want.Text {
			t.Errorf("got %q, want %q", got, want.Text)
		}
	})

	register(learningFile, "formatPatternsWithMaturityForPrompt", func(t T, c Case) {
		var in struct {
			Patterns []struct {
				Content  string      `json:"content"`
				Maturity refMaturity `json:"maturity"`
			} `json:"patterns_in_insertion_order"`
		}
		var want struct {
			Text string `json:"text"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		var list []learning.ContentMaturity
		for _, p := range in.Patterns {
			list = append(list, learning.ContentMaturity{Content: p.Content, Maturity: p.Maturity.toMaturity(t)})
		}
		if got := learning.FormatPatternsWithMaturityForPrompt(list); got != want.Text {
			t.Errorf("got %q, want %q", got, want.Text)
		}
	})

	register(learningFile, "shouldInvertPattern", func(t T, c Case) {
		var in struct {
			SuccessCount int             `json:"success_count"`
			FailureCount int             `json:"failure_count"`
			Kind         string          `json:"kind"`
			Config       json.RawMessage `json:"config"`
		}
		var want struct {
			Result bool `json:"result"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		p := learning.Pattern{Kind: in.Kind, SuccessCount: in.SuccessCount, FailureCount: in.FailureCount}
		if got := learning.ShouldInvert(p, antiConfig(t, in.Config)); got != want.Result {
			t.Errorf("got %v, want %v", got, want.Result)
		}
	})

	register(learningFile, "invertToAntiPattern", func(t T, c Case) {
		var in struct {
			Pattern refPattern      `json:"pattern"`
			Reason  string          `json:"reason"`
			Now     string          `json:"now"`
			Config  json.RawMessage `json:"config"`
		}
		var want struct {
			Inverted refPattern `json:"inverted"`
			Reason   string     `json:"reason"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		inv := learning.InvertToAntiPattern(in.Pattern.toPattern(t), in.Reason, mustTime(t, in.Now), antiConfig(t, in.Config))
		checkPattern(t, "inverted", inv.Inverted, want.Inverted)
		if inv.Reason != want.Reason {
			t.Errorf("reason = %q, want %q", inv.Reason, want.Reason)
		}
	})

	register(learningFile, "recordPatternObservation", func(t T, c Case) {
		var in struct {
			Pattern refPattern      `json:"pattern"`
			Success bool            `json:"success"`
			BeadID  string          `json:"bead_id"`
			Now     string          `json:"now"`
			Config  json.RawMessage `json:"config"`
		}
		var want struct {
			Pattern   refPattern `json:"pattern"`
			Inversion *struct {
				Original refPattern `json:"original"`
				Inverted refPattern `json:"inverted"`
				Reason   string     `json:"reason"`
			} `json:"inversion"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		p, inv := learning.RecordObservation(in.Pattern.toPattern(t), in.Success, in.BeadID, mustTime(t, in.Now), antiConfig(t, in.Config))
		checkPattern(t, "pattern", p, want.Pattern)
		if (inv == nil) != (want.Inversion == nil) {
			t.Fatalf("inversion = %+v, want %+v", inv, want.Inversion)
		}
		if inv != nil {
			checkPattern(t, "original", inv.Original, want.Inversion.Original)
			checkPattern(t, "inverted", inv.Inverted, want.Inversion.Inverted)
			if inv.Reason != want.Inversion.Reason {
				t.Errorf("reason = %q, want %q", inv.Reason, want.Inversion.Reason)
			}
		}
	})

	register(learningFile, "extractPatternsFromDescription", func(t T, c Case) {
		var in struct {
			Description string `json:"description"`
		}
		var want struct {
			Patterns []string `json:"patterns"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		if got := learning.ExtractPatternsFromDescription(in.Description); !reflect.DeepEqual(got, nonNil(want.Patterns)) {
			t.Errorf("got %q, want %q", got, want.Patterns)
		}
	})

	register(learningFile, "formatAntiPatternsForPrompt", func(t T, c Case) {
		var in struct {
			Patterns []refPattern `json:"patterns"`
		}
		var want struct {
			Text string `json:"text"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		if got := learning.FormatAntiPatternsForPrompt(patterns(t, in.Patterns)); got != want.Text {
			t.Errorf("got %q, want %q", got, want.Text)
		}
	})

	register(learningFile, "formatSuccessfulPatternsForPrompt", func(t T, c Case) {
		var in struct {
			Patterns []refPattern    `json:"patterns"`
			MinRate  json.RawMessage `json:"min_success_rate"`
		}
		var want struct {
			Text string `json:"text"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		// A number, or "default X": the reference's default, which must be
		// lore's.
		var rate float64
		if json.Unmarshal(in.MinRate, &rate) != nil {
			var s string
			decode(t, in.MinRate, &s)
			if _, err := fmt.Sscanf(s, "default %g", &rate); err != nil {
				t.Fatalf("input: min_success_rate %q: want a number or \"default X\"", s)
			}
			if d := learning.DefaultConfig().MinSuccessRate; d != rate {
				t.Errorf("default min success rate %v, the reference's %v", d, rate)
			}
		}
		if got := learning.FormatSuccessfulPatternsForPrompt(patterns(t, in.Patterns), rate); got != want.Text {
			t.Errorf("got %q, want %q", got, want.Text)
		}
	})

	register(learningFile, "ErrorAccumulator.getErrorContext", func(t T, c Case) {
		var in struct {
			refErrorLog
			IncludeResolved bool `json:"include_resolved"`
			// TZ and Locale are how the reference printed its Time lines.
			TZ     string `json:"TZ"`
			Locale string `json:"locale"`
		}
		var want struct {
			Text string `json:"text"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		got := learning.ErrorContext(in.entries(t), in.IncludeResolved)
		wantText := want.Text
		if c.Lore == "departs" { // L4: Time lines in RFC 3339 UTC
			wantText = rfc3339Lines(t, want.Text, in.TZ, in.Locale)
			if wantText == want.Text {
				t.Fatalf("no locale Time line to rewrite in %q", want.Text)
			}
			t.Logf("departs L4: Time lines RFC 3339 UTC")
		} else if localeTime.MatchString(want.Text) {
			t.Fatalf("a conforming case with locale Time lines: %q", want.Text)
		}
		if got != wantText {
			t.Errorf("got\n%s\nwant\n%s", got, wantText)
		}
	})

	register(learningFile, "ErrorAccumulator.getErrorStats", func(t T, c Case) {
		var in refErrorLog
		decodeInput(t, c, &in)
		got, err := json.Marshal(learning.CalculateErrorStats(in.entries(t)))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		decode(t, got, &a)
		decode(t, c.Expected, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("got %s, want %s", got, c.Expected)
		}
	})

	register(learningFile, "classifyFailure", func(t T, c Case) {
		var in struct {
			Message string `json:"message"`
		}
		var want struct {
			FailureMode string `json:"failure_mode"`
		}
		decodeInput(t, c, &in)
		decode(t, c.Expected, &want)
		if got := learning.ClassifyFailure(in.Message); got != want.FailureMode {
			t.Errorf("got %s, want %s", got, want.FailureMode)
		}
	})
}
