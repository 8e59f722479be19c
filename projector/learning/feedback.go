package learning

import (
	"strings"
	"time"
)

// FeedbackType classifies a scored outcome or an explicit feedback.
type FeedbackType string

// The three feedback types. NB: must not change: stored and on the wire.
const (
	Helpful FeedbackType = "helpful"
	Harmful FeedbackType = "harmful"
	Neutral FeedbackType = "neutral"
)

// ParseFeedbackType accepts helpful, harmful or neutral.
func ParseFeedbackType(field, s string) (FeedbackType, error) {
	switch t := FeedbackType(s); t {
	case Helpful, Harmful, Neutral:
		return t, nil
	}
	return "", badInput(field, "%q is not helpful, harmful or neutral", s)
}

// Signals are an outcome's implicit signals. Numbers are float64 so that the
// arithmetic is JavaScript's; NaN, ±Inf and negatives are refused.
type Signals struct {
	BeadID     string
	DurationMs float64
	ErrorCount float64
	RetryCount float64
	Success    bool
	// Time is when the outcome happened; its decay is evaluated at now.
	Time time.Time
}

// Validate refuses negative, NaN and infinite counts and durations.
func (s Signals) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"duration_ms", s.DurationMs}, {"error_count", s.ErrorCount}, {"retry_count", s.RetryCount}} {
		if !nonNegative(f.v) {
			return badInput(f.name, "must be a number >= 0, got %s", jsNum(f.v))
		}
	}
	if s.Time.IsZero() {
		return badInput("timestamp", "is required")
	}
	return nil
}

// Scored is the result of scoreImplicitFeedback.
type Scored struct {
	Type FeedbackType `json:"type"`
	// Raw is the weighted score before decay.
	Raw float64 `json:"raw"`
	// DecayedValue is Raw × decay(Time, now).
	DecayedValue float64 `json:"decayed_value"`
	Reasoning    string  `json:"reasoning"`
}

// RawScore computes the reference's weighted score and type, left to right
// in float64 (explicit conversions forbid fused multiply-adds).
func RawScore(s Signals, cfg LearningConfig) (raw float64, typ FeedbackType) {
	duration := 0.6
	switch {
	case s.DurationMs < cfg.FastCompletionThresholdMs:
		duration = 1.0
	case s.DurationMs > cfg.SlowCompletionThresholdMs:
		duration = 0.2
	}
	errs := 0.2
	switch {
	case s.ErrorCount == 0:
		errs = 1.0
	case s.ErrorCount <= cfg.MaxErrorsForHelpful:
		errs = 0.6
	}
	retries := 0.3
	switch s.RetryCount {
	case 0:
		retries = 1.0
	case 1:
		retries = 0.7
	}
	success := 0.0
	if s.Success {
		success = 1.0
	}
	raw = float64(success * 0.4)
	raw = float64(raw + float64(duration*0.2))
	raw = float64(raw + float64(errs*0.2))
	raw = float64(raw + float64(retries*0.2))
	switch {
	case raw >= 0.7:
		typ = Helpful
	case raw <= 0.4:
		typ = Harmful
	default:
		typ = Neutral
	}
	return raw, typ
}

// ScoreImplicitFeedback is the reference's scoreImplicitFeedback with the
// clock passed in: it refuses bad signals (SPEC §1), scores them and decays
// the score by the outcome's own age at now.
func ScoreImplicitFeedback(s Signals, now time.Time, cfg LearningConfig) (Scored, error) {
	if err := s.Validate(); err != nil {
		return Scored{}, err
	}
	raw, typ := RawScore(s, cfg)
	decay, err := DecayFactor(s.Time, now, cfg.HalfLifeDays)
	if err != nil {
		return Scored{}, err
	}
	return Scored{Type: typ, Raw: raw, DecayedValue: float64(raw * decay), Reasoning: reasoning(s, typ)}, nil
}

// reasoning is the reference's text: "Fast"/"Slow" follow the type, not the
// duration; no singular forms.
func reasoning(s Signals, typ FeedbackType) string {
	secs := jsNum(jsRound(s.DurationMs / 1000))
	e, r := jsNum(s.ErrorCount), jsNum(s.RetryCount)
	outcome := "failed"
	if s.Success {
		outcome = "succeeded"
	}
	switch typ {
	case Helpful:
		return "Fast completion (" + secs + "s), " + e + " errors, " + r + " retries, " + outcome
	case Harmful:
		return "Slow completion (" + secs + "s), " + e + " errors, " + r + " retries, " + outcome
	}
	return "Mixed signals: " + secs + "s, " + e + " errors, " + r + " retries"
}

// ClassifyFailure is the reference's classifyFailure: lower-case substring
// rules, first match wins.
func ClassifyFailure(msg string) string {
	m := strings.ToLower(msg)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(m, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("timeout"):
		return "timeout"
	case has("conflict", "reservation"):
		return "conflict"
	case has("validation", "schema"):
		return "validation"
	case has("context", "token"):
		return "context_overflow"
	case has("blocked", "dependency"):
		return "dependency_blocked"
	case has("cancel"):
		return "user_cancelled"
	case has("tool", "command", "failed to execute"):
		return "tool_failure"
	}
	return "unknown"
}
