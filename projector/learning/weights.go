package learning

import (
	"time"
)

// FeedbackEvent is one feedback on a criterion (the reference's
// FeedbackEvent): RawValue is weighted by decay at evaluation time.
type FeedbackEvent struct {
	ID        string       `json:"id,omitempty"`
	Criterion string       `json:"criterion"`
	Type      FeedbackType `json:"type"`
	Time      time.Time    `json:"timestamp"`
	RawValue  float64      `json:"raw_value"`
	BeadID    string       `json:"bead_id,omitempty"`
	Context   string       `json:"context,omitempty"`
}

// Weight is a criterion's weight (the reference's CriterionWeight) plus the
// decayed sums it came from.
type Weight struct {
	Criterion     string     `json:"criterion"`
	Weight        float64    `json:"weight"`
	HelpfulCount  int        `json:"helpful_count"`
	HarmfulCount  int        `json:"harmful_count"`
	LastValidated *time.Time `json:"last_validated,omitempty"`
	HalfLifeDays  float64    `json:"half_life_days"`
	// DecayedHelpful and DecayedHarmful are the decayed sums at now.
	DecayedHelpful float64 `json:"decayed_helpful"`
	DecayedHarmful float64 `json:"decayed_harmful"`
}

// CalculateCriterionWeight is calculateCriterionWeight with the clock passed
// in: decayed helpful and harmful sums (neutral ignored), weight, raw
// counts and last_validated (the newest helpful feedback). Events are not
// filtered by criterion; an empty list is criterion "unknown", weight 1.0.
func CalculateCriterionWeight(evs []FeedbackEvent, now time.Time, cfg LearningConfig) (Weight, error) {
	w := Weight{Criterion: "unknown", Weight: 1.0, HalfLifeDays: cfg.HalfLifeDays}
	if len(evs) == 0 {
		return w, nil
	}
	w.Criterion = evs[0].Criterion
	var helpful, harmful float64
	for _, e := range evs {
		// A NaN raw value poisons its sum and gives weight 1.0, as in the
		// reference; events are validated before they reach this rule.
		d, err := DecayFactor(e.Time, now, cfg.HalfLifeDays)
		if err != nil {
			return Weight{}, err
		}
		v := float64(e.RawValue * d)
		switch e.Type {
		case Helpful:
			helpful += v
			w.HelpfulCount++
			if w.LastValidated == nil || e.Time.After(*w.LastValidated) {
				t := e.Time
				w.LastValidated = &t
			}
		case Harmful:
			harmful += v
			w.HarmfulCount++
		}
	}
	w.DecayedHelpful, w.DecayedHarmful = helpful, harmful
	w.Weight = CriterionWeight(helpful, harmful)
	return w, nil
}

// ShouldDeprecateCriterion: raw helpful+harmful ≥ minFeedbackForAdjustment
// and harmful/total > maxHarmfulRatio.
func ShouldDeprecateCriterion(helpfulCount, harmfulCount int, cfg LearningConfig) bool {
	total := float64(helpfulCount + harmfulCount)
	if total < cfg.MinFeedbackForAdjustment || total == 0 {
		return false
	}
	return float64(harmfulCount)/total > cfg.MaxHarmfulRatio
}
