package learning_test

import (
	"math"
	"testing"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// FuzzLearningInputs: the learning rules' input parsers and validators
// either accept a value of their domain or refuse it with an error; the
// rules fed with fuzzed times and raw values in their schema's domain return
// an error or a finite weight in range — never a panic, NaN or infinity.
func FuzzLearningInputs(f *testing.F) {
	f.Add("helpful", "proven", "2026-01-01T00:00:00Z", "timeout", 0.5, 90.0, int64(0))
	f.Add("harmful", "deprecated", "2026-02-30", "tool_failure", 1.0, 0.0, int64(-1))
	f.Add("", "", "", "", math.NaN(), math.Inf(1), int64(math.MaxInt64))
	f.Add("neutral", "candidate", "1969-12-31T23:59:59.999999999-23:59", "cosmic", -1e308, 1e-300, int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, typ, state, ts, errType string, raw, halfLife float64, ms int64) {
		if ft, err := learning.ParseFeedbackType("type", typ); err == nil && ft != learning.Helpful && ft != learning.Harmful && ft != learning.Neutral {
			t.Fatalf("accepted feedback type %q", typ)
		}
		if st, err := learning.ParseMaturityState("state", state); err == nil &&
			st != learning.Candidate && st != learning.Established && st != learning.Proven && st != learning.Deprecated {
			t.Fatalf("accepted maturity state %q", state)
		}
		_ = learning.ValidErrorType(errType)
		if learning.ClassifyFailure(errType) == "" {
			t.Fatalf("no failure class for %q", errType)
		}
		_ = learning.ExtractPatternsFromDescription(ts + " " + errType)
		now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		at, err := learning.ParseTime("timestamp", ts)
		if err != nil {
			at = time.UnixMilli(ms).UTC()
		}
		d, err := learning.DecayFactor(at, now, halfLife)
		if err == nil && !(d >= 0 && d <= 1) {
			t.Fatalf("decay factor %v out of [0,1] (t %s, half-life %v)", d, at, halfLife)
		}
		// raw_value reaches the rule through feedback.recorded's schema:
		// a finite number in [0, 1] (JSON has no NaN or infinity).
		if math.IsNaN(raw) || math.IsInf(raw, 0) {
			return
		}
		ft := learning.Helpful
		if raw < 0 {
			ft, raw = learning.Harmful, -raw
		}
		raw = math.Mod(raw, 1)
		w, err := learning.CalculateCriterionWeight([]learning.FeedbackEvent{{Criterion: "c", Type: ft, Time: at, RawValue: raw}},
			now, learning.DefaultLearningConfig())
		if err == nil && (math.IsNaN(w.Weight) || math.IsInf(w.Weight, 0)) {
			t.Fatalf("weight %v for raw value %v at %s", w.Weight, raw, at)
		}
	})
}
