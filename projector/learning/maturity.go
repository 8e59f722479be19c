package learning

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaturityState is a pattern's lifecycle state.
type MaturityState string

// States. NB: must not change: stored and on the wire.
const (
	Candidate   MaturityState = "candidate"
	Established MaturityState = "established"
	Proven      MaturityState = "proven"
	Deprecated  MaturityState = "deprecated"
)

// ParseMaturityState accepts the four state names.
func ParseMaturityState(field, s string) (MaturityState, error) {
	switch st := MaturityState(s); st {
	case Candidate, Established, Proven, Deprecated:
		return st, nil
	}
	return "", badInput(field, "%q is not candidate, established, proven or deprecated", s)
}

// floatEpsilon is the reference's FLOAT_EPSILON tolerance on thresholds.
const floatEpsilon = 0.01

// MaturityFeedback is one helpful/harmful signal on a pattern. Neutral
// counts in neither decayed sum (SPEC §3; the reference counts it harmful).
type MaturityFeedback struct {
	PatternID string       `json:"pattern_id"`
	Type      FeedbackType `json:"type"`
	Time      time.Time    `json:"timestamp"`
	Weight    float64      `json:"weight"`
}

// CalculateDecayedCounts sums weight × decay of helpful and harmful feedback
// at now, left to right.
func CalculateDecayedCounts(evs []MaturityFeedback, now time.Time, cfg MaturityConfig) (helpful, harmful float64, err error) {
	for _, e := range evs {
		d, err := DecayFactor(e.Time, now, cfg.HalfLifeDays)
		if err != nil {
			return 0, 0, err
		}
		v := float64(e.Weight * d)
		switch e.Type {
		case Helpful:
			helpful += v
		case Harmful:
			harmful += v
		}
	}
	return helpful, harmful, nil
}

// StateFromDecayed is calculateMaturityState's decision on decayed sums, in
// the reference's order: deprecated, candidate, proven, established.
func StateFromDecayed(helpful, harmful float64, cfg MaturityConfig) MaturityState {
	total := helpful + harmful
	safeTotal := 0.0
	if total > floatEpsilon {
		safeTotal = total
	}
	ratio := 0.0
	if safeTotal > 0 {
		ratio = harmful / safeTotal
	}
	switch {
	case ratio > cfg.DeprecationThreshold && safeTotal >= cfg.MinFeedback-floatEpsilon:
		return Deprecated
	case safeTotal < cfg.MinFeedback-floatEpsilon:
		return Candidate
	case helpful >= cfg.MinHelpful-floatEpsilon && ratio < cfg.MaxHarmful:
		return Proven
	}
	return Established
}

// CalculateMaturityState is calculateMaturityState with the clock passed in.
func CalculateMaturityState(evs []MaturityFeedback, now time.Time, cfg MaturityConfig) (MaturityState, float64, float64, error) {
	h, x, err := CalculateDecayedCounts(evs, now, cfg)
	if err != nil {
		return "", 0, 0, err
	}
	return StateFromDecayed(h, x, cfg), h, x, nil
}

// Multiplier is getMaturityMultiplier; ok is false for an unknown state.
func Multiplier(s MaturityState) (m float64, ok bool) {
	switch s {
	case Candidate:
		return 0.5, true
	case Established:
		return 1.0, true
	case Proven:
		return 1.5, true
	case Deprecated:
		return 0, true
	}
	return 0, false
}

// Manual is a state set by hand (promote or deprecate), with its reason.
// INVARIANT: it holds until the next manual event or a reset (SPEC §3).
type Manual struct {
	State  MaturityState `json:"state"`
	Reason string        `json:"reason,omitempty"`
	At     time.Time     `json:"at"`
	Source string        `json:"source,omitempty"`
}

// Maturity is a pattern's maturity record (the reference's PatternMaturity)
// plus lore's manual state.
type Maturity struct {
	PatternID     string        `json:"pattern_id"`
	State         MaturityState `json:"state"`
	HelpfulCount  int           `json:"helpful_count"`
	HarmfulCount  int           `json:"harmful_count"`
	LastValidated time.Time     `json:"last_validated"`
	PromotedAt    *time.Time    `json:"promoted_at,omitempty"`
	DeprecatedAt  *time.Time    `json:"deprecated_at,omitempty"`
	Manual        *Manual       `json:"manual,omitempty"`
}

// NewMaturity is createPatternMaturity: a candidate validated now.
func NewMaturity(patternID string, now time.Time) Maturity {
	return Maturity{PatternID: patternID, State: Candidate, LastValidated: now}
}

// enter moves m to state s at now, stamping promoted_at on entering proven
// and deprecated_at on entering deprecated; old stamps are never cleared.
func (m *Maturity) enter(s MaturityState, now time.Time) {
	if s == m.State {
		return
	}
	t := now
	switch s {
	case Proven:
		m.PromotedAt = &t
	case Deprecated:
		m.DeprecatedAt = &t
	}
	m.State = s
}

// UpdateMaturity is updatePatternMaturity with the clock passed in: raw
// counts and last_validated from the feedback, the state recomputed from
// decayed sums — unless a manual state holds, which is kept (SPEC §3).
func UpdateMaturity(m Maturity, evs []MaturityFeedback, now time.Time, cfg MaturityConfig) (Maturity, error) {
	s, _, _, err := CalculateMaturityState(evs, now, cfg)
	if err != nil {
		return m, err
	}
	m.HelpfulCount, m.HarmfulCount = 0, 0
	for _, e := range evs {
		switch e.Type {
		case Helpful:
			m.HelpfulCount++
		case Harmful:
			m.HarmfulCount++
		}
	}
	if m.Manual != nil {
		s = m.Manual.State
	}
	m.enter(s, now)
	m.LastValidated = now
	return m, nil
}

// ErrPromoteDeprecated is returned when promoting a deprecated pattern.
var ErrPromoteDeprecated = errors.New("Cannot promote a deprecated pattern") //nolint:staticcheck // the reference's message

// Promote is promotePattern: deprecated → ErrPromoteDeprecated; already
// proven → unchanged with a warning; a candidate with fewer than 3 helpful
// observations is promoted with a warning. The result is a manual state.
func Promote(m Maturity, reason, source string, now time.Time) (Maturity, string, error) {
	switch {
	case m.State == Deprecated:
		return m, "", ErrPromoteDeprecated
	case m.State == Proven:
		if m.Manual == nil { // pin the state by hand; nothing else changes
			m.Manual = &Manual{State: Proven, Reason: reason, At: now, Source: source}
		}
		return m, "Pattern already proven: " + m.PatternID, nil
	}
	warn := ""
	if m.State == Candidate && m.HelpfulCount < 3 {
		warn = "Promoting candidate with insufficient data: " + m.PatternID + " (" + jsNum(float64(m.HelpfulCount)) + " helpful observations)"
	}
	m.enter(Proven, now)
	m.LastValidated = now
	m.Manual = &Manual{State: Proven, Reason: reason, At: now, Source: source}
	return m, warn, nil
}

// Deprecate is deprecatePattern, keeping the reason (the reference drops
// it): already deprecated → unchanged but pinned; else deprecated now,
// manually.
func Deprecate(m Maturity, reason, source string, now time.Time) Maturity {
	if m.State == Deprecated {
		if m.Manual == nil { // pin the state by hand; nothing else changes
			m.Manual = &Manual{State: Deprecated, Reason: reason, At: now, Source: source}
		}
		return m
	}
	m.enter(Deprecated, now)
	m.LastValidated = now
	m.Manual = &Manual{State: Deprecated, Reason: reason, At: now, Source: source}
	return m
}

// ExplainState says why decayed sums give their state, with the numbers the
// rule compared ("Debugging Pattern Issues").
func ExplainState(helpful, harmful float64, cfg MaturityConfig) string {
	total := helpful + harmful
	ratio := 0.0
	if total > floatEpsilon {
		ratio = harmful / total
	}
	minTotal, minHelpful := cfg.MinFeedback-floatEpsilon, cfg.MinHelpful-floatEpsilon
	switch StateFromDecayed(helpful, harmful, cfg) {
	case Deprecated:
		return fmt.Sprintf("deprecated: decayed harmful ratio %.3f > %.2f with decayed total %.3f >= %.2f",
			ratio, cfg.DeprecationThreshold, total, minTotal)
	case Candidate:
		return fmt.Sprintf("candidate: decayed total %.3f < %.2f (helpful %.3f + harmful %.3f): not enough recent feedback",
			total, minTotal, helpful, harmful)
	case Proven:
		return fmt.Sprintf("proven: decayed helpful %.3f >= %.2f and harmful ratio %.3f < %.2f",
			helpful, minHelpful, ratio, cfg.MaxHarmful)
	}
	var why []string
	if helpful < minHelpful {
		why = append(why, fmt.Sprintf("decayed helpful %.3f < %.2f", helpful, minHelpful))
	}
	if ratio >= cfg.MaxHarmful {
		why = append(why, fmt.Sprintf("harmful ratio %.3f >= %.2f", ratio, cfg.MaxHarmful))
	}
	return fmt.Sprintf("established: decayed total %.3f >= %.2f and harmful ratio %.3f <= %.2f, not proven: %s",
		total, minTotal, ratio, cfg.DeprecationThreshold, strings.Join(why, " and "))
}
