// Package learning is the read model of lore's learning systems: implicit
// feedback scoring, confidence decay and criterion weights, pattern maturity,
// anti-pattern inversion and the error accumulator.
//
// The rules are pure functions (time passed in) that follow the reference
// (swarm-tools) exactly, float arithmetic included, except where SPEC.md
// departs: bad input is refused, neutral feedback counts in neither maturity
// sum, manual states hold until the next manual event or a reset, and the
// error context prints RFC 3339 times.
package learning

import (
	"errors"
	"fmt"
	"math"
)

// ErrBadInput marks input a rule refuses (negative, NaN or missing numbers,
// unparseable times, non-positive half-lives). Errors wrap it and name the
// field.
var ErrBadInput = errors.New("lore: learning: bad input")

func badInput(field, format string, args ...any) error {
	return fmt.Errorf("%w: field %q: %s", ErrBadInput, field, fmt.Sprintf(format, args...))
}

// LearningConfig tunes implicit feedback scoring, decay and criterion
// deprecation. Field names follow the reference's learningConfig.
type LearningConfig struct {
	HalfLifeDays              float64 `json:"halfLifeDays"`
	MinFeedbackForAdjustment  float64 `json:"minFeedbackForAdjustment"`
	MaxHarmfulRatio           float64 `json:"maxHarmfulRatio"`
	FastCompletionThresholdMs float64 `json:"fastCompletionThresholdMs"`
	SlowCompletionThresholdMs float64 `json:"slowCompletionThresholdMs"`
	MaxErrorsForHelpful       float64 `json:"maxErrorsForHelpful"`
}

// DefaultLearningConfig is the reference's DEFAULT_LEARNING_CONFIG.
func DefaultLearningConfig() LearningConfig {
	return LearningConfig{HalfLifeDays: 90, MinFeedbackForAdjustment: 3, MaxHarmfulRatio: 0.3,
		FastCompletionThresholdMs: 300000, SlowCompletionThresholdMs: 1800000, MaxErrorsForHelpful: 2}
}

// Validate refuses values the rules cannot use.
func (c LearningConfig) Validate() error { return c.validate("") }

// validate names a refused key with its path prefix ("learning.").
func (c LearningConfig) validate(at string) error {
	badInput := func(field, format string, args ...any) error { return badInput(at+field, format, args...) }
	switch {
	case !positive(c.HalfLifeDays):
		return badInput("halfLifeDays", "must be > 0, got %v", c.HalfLifeDays)
	case !nonNegative(c.MinFeedbackForAdjustment):
		return badInput("minFeedbackForAdjustment", "must be >= 0, got %v", c.MinFeedbackForAdjustment)
	case !unit(c.MaxHarmfulRatio):
		return badInput("maxHarmfulRatio", "must be in [0,1], got %v", c.MaxHarmfulRatio)
	case !nonNegative(c.FastCompletionThresholdMs):
		return badInput("fastCompletionThresholdMs", "must be >= 0, got %v", c.FastCompletionThresholdMs)
	case !nonNegative(c.SlowCompletionThresholdMs) || c.SlowCompletionThresholdMs < c.FastCompletionThresholdMs:
		return badInput("slowCompletionThresholdMs", "must be >= fastCompletionThresholdMs, got %v", c.SlowCompletionThresholdMs)
	case !nonNegative(c.MaxErrorsForHelpful):
		return badInput("maxErrorsForHelpful", "must be >= 0, got %v", c.MaxErrorsForHelpful)
	}
	return nil
}

// AntiPatternConfig tunes inversion (the reference's antiPatternConfig).
type AntiPatternConfig struct {
	MinObservations       float64 `json:"minObservations"`
	FailureRatioThreshold float64 `json:"failureRatioThreshold"`
	AntiPatternPrefix     string  `json:"antiPatternPrefix"`
}

// DefaultAntiPatternConfig is the reference's DEFAULT_ANTI_PATTERN_CONFIG.
func DefaultAntiPatternConfig() AntiPatternConfig {
	return AntiPatternConfig{MinObservations: 3, FailureRatioThreshold: 0.6, AntiPatternPrefix: "AVOID: "}
}

// Validate refuses values the rules cannot use.
func (c AntiPatternConfig) Validate() error { return c.validate("") }

func (c AntiPatternConfig) validate(at string) error {
	badInput := func(field, format string, args ...any) error { return badInput(at+field, format, args...) }
	switch {
	case !nonNegative(c.MinObservations):
		return badInput("minObservations", "must be >= 0, got %v", c.MinObservations)
	case !unit(c.FailureRatioThreshold):
		return badInput("failureRatioThreshold", "must be in [0,1], got %v", c.FailureRatioThreshold)
	}
	return nil
}

// MaturityConfig tunes pattern maturity (the reference's maturityConfig).
type MaturityConfig struct {
	MinFeedback          float64 `json:"minFeedback"`
	MinHelpful           float64 `json:"minHelpful"`
	MaxHarmful           float64 `json:"maxHarmful"`
	DeprecationThreshold float64 `json:"deprecationThreshold"`
	HalfLifeDays         float64 `json:"halfLifeDays"`
}

// DefaultMaturityConfig is the reference's DEFAULT_MATURITY_CONFIG.
func DefaultMaturityConfig() MaturityConfig {
	return MaturityConfig{MinFeedback: 3, MinHelpful: 5, MaxHarmful: 0.15, DeprecationThreshold: 0.3, HalfLifeDays: 90}
}

// Validate refuses values the rules cannot use.
func (c MaturityConfig) Validate() error { return c.validate("") }

func (c MaturityConfig) validate(at string) error {
	badInput := func(field, format string, args ...any) error { return badInput(at+field, format, args...) }
	switch {
	case !nonNegative(c.MinFeedback):
		return badInput("minFeedback", "must be >= 0, got %v", c.MinFeedback)
	case !nonNegative(c.MinHelpful):
		return badInput("minHelpful", "must be >= 0, got %v", c.MinHelpful)
	case !unit(c.MaxHarmful):
		return badInput("maxHarmful", "must be in [0,1], got %v", c.MaxHarmful)
	case !unit(c.DeprecationThreshold):
		return badInput("deprecationThreshold", "must be in [0,1], got %v", c.DeprecationThreshold)
	case !positive(c.HalfLifeDays):
		return badInput("halfLifeDays", "must be > 0, got %v", c.HalfLifeDays)
	}
	return nil
}

// Config is the whole configuration of the learning read model.
type Config struct {
	Learning    LearningConfig    `json:"learning"`
	AntiPattern AntiPatternConfig `json:"anti_pattern"`
	Maturity    MaturityConfig    `json:"maturity"`
	// CriterionHalfLifeDays overrides Learning.HalfLifeDays per criterion.
	// NB: a change alters the read model: bump Model.Version or rebuild.
	CriterionHalfLifeDays map[string]float64 `json:"criterion_half_life_days,omitempty"`
	// MinSuccessRate is formatSuccessfulPatternsForPrompt's threshold (0.7).
	MinSuccessRate float64 `json:"min_success_rate"`
	// Evidence is lore's own layer over the seed rules (evidence.go).
	Evidence EvidenceConfig `json:"evidence"`
}

// Evidence policies.
const (
	// PolicySeed: the seed rules alone decide; states and prompt texts are
	// exactly the reference's (evidence is still reported beside them).
	PolicySeed = "seed"
	// PolicyEvidence: prompt blocks carry the evidence, the decomposition
	// prompt recommends exploring tentative verdicts, and an anti-pattern
	// the later observations no longer support is rehabilitated.
	PolicyEvidence = "evidence"
)

// EvidenceConfig tunes the evidence reported with every verdict and what
// the evidence policy does with it.
type EvidenceConfig struct {
	// Policy is seed (the default: the reference's behaviour) or evidence.
	Policy string `json:"policy"`
	// Confidence is the level of the success-rate intervals (0.95).
	Confidence float64 `json:"confidence"`
	// ExplorationShare is the share of decompositions the decomposition
	// prompt recommends spending on tentative verdicts (evidence policy);
	// 0 turns the recommendation off.
	ExplorationShare float64 `json:"exploration_share"`
}

// DefaultEvidenceConfig keeps the reference's behaviour (policy seed).
func DefaultEvidenceConfig() EvidenceConfig {
	return EvidenceConfig{Policy: PolicySeed, Confidence: 0.95, ExplorationShare: 0.05}
}

func (c EvidenceConfig) validate(at string) error {
	switch {
	case c.Policy != PolicySeed && c.Policy != PolicyEvidence:
		return badInput(at+"policy", "%q is not %s or %s", c.Policy, PolicySeed, PolicyEvidence)
	case !finite(c.Confidence) || c.Confidence < 0.5 || c.Confidence >= 1:
		return badInput(at+"confidence", "must be in [0.5,1), got %v", c.Confidence)
	case !finite(c.ExplorationShare) || c.ExplorationShare < 0 || c.ExplorationShare > 0.5:
		return badInput(at+"exploration_share", "must be in [0,0.5], got %v", c.ExplorationShare)
	}
	return nil
}

// DefaultConfig returns the reference defaults.
func DefaultConfig() Config {
	return Config{Learning: DefaultLearningConfig(), AntiPattern: DefaultAntiPatternConfig(),
		Maturity: DefaultMaturityConfig(), MinSuccessRate: 0.7, Evidence: DefaultEvidenceConfig()}
}

// Validate checks every part.
func (c Config) Validate() error {
	if err := c.Learning.validate("learning."); err != nil {
		return err
	}
	if err := c.AntiPattern.validate("anti_pattern."); err != nil {
		return err
	}
	if err := c.Maturity.validate("maturity."); err != nil {
		return err
	}
	for k, v := range c.CriterionHalfLifeDays {
		if !positive(v) {
			return badInput("criterion_half_life_days."+k, "must be > 0, got %v", v)
		}
	}
	if err := c.Evidence.validate("evidence."); err != nil {
		return err
	}
	if !unit(c.MinSuccessRate) {
		return badInput("min_success_rate", "must be in [0,1], got %v", c.MinSuccessRate)
	}
	return nil
}

// CriterionHalfLife is the half-life of a criterion in days.
func (c Config) CriterionHalfLife(criterion string) float64 {
	if v, ok := c.CriterionHalfLifeDays[criterion]; ok {
		return v
	}
	return c.Learning.HalfLifeDays
}

func finite(v float64) bool      { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func positive(v float64) bool    { return finite(v) && v > 0 }
func nonNegative(v float64) bool { return finite(v) && v >= 0 }
func unit(v float64) bool        { return finite(v) && v >= 0 && v <= 1 }
