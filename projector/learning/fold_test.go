package learning_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// TestSimulatedLoops runs four loops for 200 simulated days: one pattern
// becomes proven, one is inverted into an anti-pattern, a stale one decays
// back to candidate (seen at a later now and announced by a clock tick).
func TestSimulatedLoops(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	good := learning.PatternID("Split by feature")
	stale := learning.PatternID("Sequential execution order")
	bad := learning.PatternID("file-based")
	for d := 0; d < 200; d++ {
		for loop := 0; loop < 4; loop++ {
			at := day(float64(d) + float64(loop)/10)
			bead := "bd-" + string(rune('a'+loop)) + "." + itoa(d)
			switch {
			case loop == 0 && d%2 == 0: // fast clean successes splitting by feature
				s.must("outcome.recorded/v1", at, &events.OutcomeRecorded{BeadID: bead, DurationMs: 120000,
					RetryCount: 0, Success: true, Criteria: []string{"type_safe"},
					Decomposition: "We'll split by feature, one team each"})
			case loop == 1 && d < 20 && d%2 == 0: // sequential order works, then is abandoned
				s.must("outcome.recorded/v1", at, &events.OutcomeRecorded{BeadID: bead, DurationMs: 60000,
					Success: true, Decomposition: "keep a sequential order"})
			case loop == 2 && d%10 == 0: // file-based strategy keeps failing
				s.must("error.recorded/v1", at, &events.ErrorRecorded{BeadID: bead, ErrorType: "conflict", Message: "reservation taken"})
				s.must("outcome.recorded/v1", at.Add(time.Minute), &events.OutcomeRecorded{BeadID: bead, DurationMs: 2400000,
					RetryCount: 2, Success: false, Strategy: "file-based", Criteria: []string{"no_bugs", "type_safe"},
					FailureDetails: "file reservation conflict"})
			}
		}
	}
	r := s.store()
	now := day(199.5)

	// Proven.
	g, ok, err := s.m.Pattern(r, "default", good, now)
	if err != nil || !ok {
		t.Fatalf("pattern %s: %v %v", good, ok, err)
	}
	if g.State != learning.Proven || g.Multiplier != 1.5 || g.Inverted {
		t.Errorf("split by feature: %+v", g)
	}
	if g.DecayedHelpful < 4.99 || g.HarmfulRatio != 0 {
		t.Errorf("split by feature decayed %v/%v", g.DecayedHelpful, g.DecayedHarmful)
	}

	// Inverted and deprecated.
	b, _, err := s.m.Pattern(r, "default", "file-based", now) // by content
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != bad || !b.Inverted || b.State != learning.Deprecated || b.SuccessCount != 0 || b.FailureCount != 20 {
		t.Errorf("file-based: %+v", b)
	}
	if want := "AVOID: file-based. Failed 20/20 times (100% failure rate)"; b.AntiPattern != want {
		t.Errorf("anti-pattern %q, want %q", b.AntiPattern, want)
	}
	inv := s.emitted("pattern.inverted/v1")
	if len(inv) != 1 || inv[0].Subject != bad {
		t.Fatalf("inversions announced: %+v", inv)
	}
	if d := inv[0].Data.(*events.PatternInverted); d.Content != "AVOID: file-based. Failed 3/3 times (100% failure rate)" {
		t.Errorf("inversion text %q", d.Content)
	}

	// The stale pattern: proven at day 20, candidate at a later now.
	st, _, err := s.m.Pattern(r, "default", stale, day(19))
	if err != nil || st.State != learning.Proven {
		t.Fatalf("sequential at day 19: %v %+v", err, st)
	}
	st, _, err = s.m.Pattern(r, "default", stale, now)
	if err != nil || st.State != learning.Candidate || st.AnnouncedState != learning.Proven {
		t.Fatalf("sequential at day 199: %v %+v", err, st)
	}
	if !strings.Contains(st.Why[0], "candidate: decayed total") {
		t.Errorf("why: %q", st.Why)
	}
	// A tick announces the time-only transition once; a second tick is silent.
	s.must("clock.ticked/v1", day(200), &events.ClockTicked{})
	s.must("clock.ticked/v1", day(201), &events.ClockTicked{})
	var toCandidate int
	for _, e := range s.emitted("pattern.maturity_changed/v1") {
		d := e.Data.(*events.PatternMaturityChanged)
		if e.Subject == stale && d.To == "candidate" {
			toCandidate++
			if d.From != "proven" || !strings.HasPrefix(d.Reason, "time passed: candidate") {
				t.Errorf("tick transition %+v", d)
			}
		}
	}
	if toCandidate != 1 {
		t.Errorf("stale pattern announced %d times as candidate, want 1", toCandidate)
	}

	// Criteria: no_bugs only ever harmful → deprecated once; weights match
	// the direct formula.
	ws, err := s.m.Weights(r, "default", now)
	if err != nil || len(ws) != 2 {
		t.Fatalf("weights: %v %+v", err, ws)
	}
	nb := ws[0]
	if nb.Criterion != "no_bugs" || !nb.Deprecated || nb.EffectiveWeight != 0 || nb.Weight != 0.1 || nb.HarmfulCount != 20 {
		t.Errorf("no_bugs: %+v", nb)
	}
	// type_safe was deprecated early (2 helpful, 1 harmful: one bad of three)
	// and recovered; each transition into deprecated is announced once.
	if dep := s.emitted("criterion.deprecated/v1"); len(dep) != 2 || dep[0].Subject != "type_safe" || dep[1].Subject != "no_bugs" {
		t.Errorf("criterion deprecations: %+v", dep)
	}
	ts := ws[1]
	if ts.Deprecated || ts.EffectiveWeight != ts.Weight {
		t.Errorf("type_safe should have recovered: %+v", ts)
	}
	var h, x float64
	for d := 0; d < 200; d++ {
		if d%2 == 0 {
			f, _ := learning.DecayFactor(day(float64(d)), now, 90)
			h += 1.0 * f
		}
		if d%10 == 0 {
			f, _ := learning.DecayFactor(day(float64(d)+0.2).Add(time.Minute), now, 90)
			x += 0.22 * f // failed, slow, 1 error, 2 retries: 0 + .04 + .12 + .06
		}
	}
	if math.Abs(ts.DecayedHelpful-h)/h > 1e-9 || math.Abs(ts.DecayedHarmful-x)/x > 1e-9 {
		t.Errorf("type_safe decayed %v/%v, direct %v/%v", ts.DecayedHelpful, ts.DecayedHarmful, h, x)
	}
	if ts.HelpfulCount != 100 || ts.HarmfulCount != 20 {
		t.Errorf("type_safe counts %+v", ts)
	}

	// The failed outcome's error count came from the bead's errors, and its
	// failure mode from classifyFailure.
	o, err := s.m.LastOutcome(r, "default", "bd-c.10")
	if err != nil || o == nil {
		t.Fatalf("last outcome: %v %v", o, err)
	}
	if o.ErrorCount != 1 || o.FailureMode != "conflict" || o.Type != learning.Harmful {
		t.Errorf("outcome %+v", o)
	}

	// The decomposition block: proven pattern in, failing one excluded.
	dp, err := s.m.Decomposition(r, "default", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(dp.Proven) != 1 || dp.Proven[0] != "Split by feature" || len(dp.Excluded) != 1 || dp.Excluded[0] != "file-based" {
		t.Errorf("decomposition %+v", dp)
	}
	if !strings.HasPrefix(dp.Text, "## Proven Patterns\n\nThese patterns consistently work well:\n\n- Split by feature [PROVEN - 100% helpful from 100 observations]") ||
		!strings.Contains(dp.Text, "## Anti-Patterns to Avoid") || !strings.Contains(dp.Text, "- AVOID: file-based. Failed 20/20 times (100% failure rate)\n") {
		t.Errorf("decomposition text:\n%s", dp.Text)
	}

	// The in-memory fold and the Pebble fold agree.
	mv, _, _ := s.m.Pattern(s.tx, "default", good, now)
	if mv.DecayedHelpful != g.DecayedHelpful || mv.State != g.State {
		t.Errorf("memTx %+v vs store %+v", mv, g)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestManualStatesHold(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	id := learning.PatternID("Split by component")
	obs := func(d float64, ok bool) {
		s.must("pattern.observed/v1", day(d), &events.PatternObserved{Content: "Split by component", Success: ok, BeadID: "bd-1"})
	}
	obs(0, true)
	s.must("pattern.promoted/v1", day(1), &events.PatternPromoted{PatternID: id, Reason: "reviewed"})
	obs(2, true) // the reference would recompute candidate here; lore keeps proven
	r := s.store()
	v, _, err := s.m.Pattern(r, "default", id, day(3))
	if err != nil || v.State != learning.Proven || v.ComputedState != learning.Candidate || v.Manual == nil || v.Manual.Reason != "reviewed" {
		t.Fatalf("after promote: %v %+v", err, v)
	}
	s.must("pattern.deprecated/v1", day(4), &events.PatternDeprecated{PatternID: id, Reason: "Causes file conflicts in 80% of cases"})
	for i := 0; i < 10; i++ {
		obs(5, true)
	}
	r = s.store()
	v, _, _ = s.m.Pattern(r, "default", id, day(6))
	if v.State != learning.Deprecated || v.Manual.Reason != "Causes file conflicts in 80% of cases" || v.Multiplier != 0 {
		t.Fatalf("after deprecate: %+v", v)
	}
	// Promoting a deprecated pattern is refused by the fold (poison).
	err = s.add("pattern.promoted/v1", day(7), &events.PatternPromoted{PatternID: id})
	if !errors.Is(err, learning.ErrPromoteDeprecated) || err.Error() != "Cannot promote a deprecated pattern" {
		t.Fatalf("promote deprecated: %v", err)
	}
	// A reset starts over; then computed states apply again.
	s.must("pattern.reset/v1", day(8), &events.PatternReset{PatternID: id, Reason: "new codebase"})
	for i := 0; i < 5; i++ {
		obs(9, true)
	}
	r = s.store()
	v, _, _ = s.m.Pattern(r, "default", id, day(9))
	if v.State != learning.Proven || v.Manual != nil || v.HelpfulCount != 5 || v.SuccessCount != 5 {
		t.Fatalf("after reset: %+v", v)
	}
	var manual []string
	for _, e := range s.emitted("pattern.maturity_changed/v1") {
		d := e.Data.(*events.PatternMaturityChanged)
		manual = append(manual, d.From+">"+d.To)
	}
	// After the reset, 3 helpful → established, 5 → proven.
	if got, want := strings.Join(manual, " "), "candidate>proven proven>deprecated deprecated>candidate candidate>established established>proven"; got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
}

func TestErrorAccumulatorFold(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	rec := func(d float64, typ, msg string, tool string) {
		s.must("error.recorded/v1", day(d), &events.ErrorRecorded{BeadID: "bd-123.1", ErrorType: typ, Message: msg, ToolName: tool})
	}
	rec(0, "validation", "Type error in src/auth.ts", "typecheck")
	rec(0.001, "timeout", "Worker exceeded 10m", "")
	rec(0.002, "validation", "Missing import", "typecheck")
	first := s.evs[0].ID
	s.must("error.resolved/v1", day(0.01), &events.ErrorResolved{BeadID: "bd-123.1", ErrorID: first})
	s.must("error.resolved/v1", day(0.02), &events.ErrorResolved{BeadID: "bd-123.1", ErrorID: "no-such-id"})
	// An unknown error type never reaches the fold: the schema refuses it.
	if err := s.add("error.recorded/v1", day(1), &events.ErrorRecorded{BeadID: "bd-123.1", ErrorType: "segfault", Message: "x"}); !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), "data.error_type") {
		t.Fatalf("unknown type: %v", err)
	}
	r := s.store()
	st, err := s.m.ErrorStats(r, "default", "bd-123.1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 3 || st.Unresolved != 2 || len(st.ByType) != 2 || st.ByType[0] != (learning.TypeCount{Type: "validation", Count: 2}) {
		t.Errorf("stats %+v", st)
	}
	ctx, err := s.m.ErrorContext(r, "default", "bd-123.1", false)
	if err != nil {
		t.Fatal(err)
	}
	want := "## Previous Errors\n\nThe following errors were encountered during execution:\n\n### timeout (1 error)\n\n- **Worker exceeded 10m**\n  - Time: 2026-01-01T00:01:26Z\n\n### validation (1 error)\n\n- **Missing import**\n  - Tool: typecheck\n  - Time: 2026-01-01T00:02:52Z\n\n**Action Required**: Address these errors before proceeding. Consider:\n- What caused each error?\n- How can you prevent similar errors?\n- Are there patterns across error types?\n"
	if ctx != want {
		t.Errorf("context:\n%q\nwant\n%q", ctx, want)
	}
	all, _ := s.m.ErrorContext(r, "default", "bd-123.1", true)
	if !strings.Contains(all, "  - Time: 2026-01-01T00:00:00Z (resolved)\n") {
		t.Errorf("with resolved:\n%s", all)
	}
	if none, _ := s.m.ErrorContext(r, "default", "bd-none", false); none != "" {
		t.Errorf("no errors: %q", none)
	}
	// error_count defaults to the bead's total (3, resolved included).
	s.must("outcome.recorded/v1", day(1), &events.OutcomeRecorded{BeadID: "bd-123.1", DurationMs: 1000, Success: true})
	s.must("outcome.recorded/v1", day(1), &events.OutcomeRecorded{BeadID: "bd-9", DurationMs: 1000, Success: true, ErrorCount: intp(1)})
	r = s.store()
	if o, _ := s.m.LastOutcome(r, "default", "bd-123.1"); o.ErrorCount != 3 || o.Reasoning != "Fast completion (1s), 3 errors, 0 retries, succeeded" {
		t.Errorf("outcome %+v", o)
	}
	if o, _ := s.m.LastOutcome(r, "default", "bd-9"); o.ErrorCount != 1 {
		t.Errorf("outcome %+v", o)
	}
}

func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	for name, c := range map[string]struct {
		typ   string
		p     events.Payload
		field string
	}{
		"negative duration": {"outcome.recorded/v1", &events.OutcomeRecorded{BeadID: "b", DurationMs: -1}, "data.duration_ms"},
		"negative retries":  {"outcome.recorded/v1", &events.OutcomeRecorded{BeadID: "b", RetryCount: -1}, "data.retry_count"},
		"feedback type":     {"feedback.recorded/v1", &events.FeedbackRecorded{Criterion: "c", Type: "great", RawValue: 1}, "data.type"},
		"raw value > 1":     {"feedback.recorded/v1", &events.FeedbackRecorded{Criterion: "c", Type: "helpful", RawValue: 2}, "data.raw_value"},
		"deprecate reason":  {"pattern.deprecated/v1", &events.PatternDeprecated{PatternID: "p"}, "data.reason"},
		"observe nothing":   {"pattern.observed/v1", &events.PatternObserved{Success: true}, "data"},
	} {
		err := s.add(c.typ, day(0), c.p)
		if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v (want field %s)", name, err, c.field)
		}
	}
	if len(s.tx.kv) != 0 {
		t.Errorf("refused events left state: %d keys", len(s.tx.kv))
	}
}

// TestQueryBeforeNewestFeedback evaluates at a now earlier than some
// feedback: ages clamp at 0 as the direct formula says.
func TestQueryBeforeNewestFeedback(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	s.must("feedback.recorded/v1", day(0), &events.FeedbackRecorded{Criterion: "readable", Type: "helpful", RawValue: 1})
	s.must("feedback.recorded/v1", day(100), &events.FeedbackRecorded{Criterion: "readable", Type: "harmful", RawValue: 1})
	s.must("feedback.recorded/v1", day(50), &events.FeedbackRecorded{Criterion: "readable", Type: "neutral", RawValue: 1})
	r := s.store()
	v, ok, err := s.m.Criterion(r, "default", "readable", day(10))
	if err != nil || !ok {
		t.Fatal(err)
	}
	h, _ := learning.DecayFactor(day(0), day(10), 90)
	if v.DecayedHelpful != h || v.DecayedHarmful != 1 {
		t.Errorf("at day 10: %v %v, want %v 1", v.DecayedHelpful, v.DecayedHarmful, h)
	}
	if v.NeutralCount != 1 || v.LastValidated == nil || !v.LastValidated.Equal(day(0)) {
		t.Errorf("%+v", v)
	}
}
