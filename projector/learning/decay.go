package learning

import (
	"math"
	"time"
)

// msPerDay converts milliseconds to days, as the reference does.
const msPerDay = 86400000

// DecayFactor is calculateDecayedValue: 0.5^(age_days / half_life_days),
// age in fractional days, never negative (a future time decays to 1.0).
// A half-life ≤ 0 or NaN is refused (the reference silently uses 1 day).
func DecayFactor(t, now time.Time, halfLifeDays float64) (float64, error) {
	if !positive(halfLifeDays) {
		return 0, badInput("half_life_days", "must be > 0, got %s", jsNum(halfLifeDays))
	}
	if t.IsZero() {
		return 0, badInput("timestamp", "is required")
	}
	age := math.Max(0, msBetween(t, now)/msPerDay)
	return math.Pow(0.5, age/halfLifeDays), nil
}

// rebaseExponent bounds the exponent of the terms kept relative to an
// epoch: past it the epoch moves forward, so sums never overflow.
const rebaseExponent = 512

// DecaySums keeps a helpful and a harmful sum of decayed values in O(1)
// per added term and per evaluation, however many terms it holds.
//
// INVARIANT: Helpful = Σ v_i · 2^(x_i) over helpful terms (Harmful likewise)
// where x_i = (t_i − Epoch) / (msPerDay · H) for the half-life H the sums
// are kept with; evaluated at now, each sum times 2^(−(now − Epoch)/(msPerDay·H))
// equals Σ v_i · 0.5^((now − t_i)/H) — the direct formula — to rounding,
// as long as now ≥ Newest (no term has a negative age to clamp).
// NB: must not change: stored in the read model.
type DecaySums struct {
	EpochMs  int64   `json:"epoch_ms"`
	Helpful  float64 `json:"helpful"`
	Harmful  float64 `json:"harmful"`
	NewestMs int64   `json:"newest_ms"`
	Terms    int64   `json:"terms"`
}

func exponent(epochMs int64, t time.Time, halfLifeDays float64) float64 {
	return msBetween(time.UnixMilli(epochMs), t) / msPerDay / halfLifeDays
}

// Add adds v (at time t) to the helpful or harmful sum; neutral is ignored
// (it counts in neither sum). REQUIRES: halfLifeDays > 0, v finite.
func (d *DecaySums) Add(t time.Time, typ FeedbackType, v, halfLifeDays float64) {
	if typ != Helpful && typ != Harmful {
		return
	}
	tm := t.UnixMilli()
	if d.Terms == 0 {
		d.EpochMs, d.Helpful, d.Harmful, d.NewestMs = tm, 0, 0, tm
	}
	x := exponent(d.EpochMs, t, halfLifeDays)
	if x > rebaseExponent {
		// Move the epoch to t: old terms shrink by 2^-x (tiny ones underflow,
		// as they would in the direct formula next to the new term).
		scale := math.Exp2(-x)
		d.Helpful, d.Harmful = d.Helpful*scale, d.Harmful*scale
		d.EpochMs = tm
		x = exponent(d.EpochMs, t, halfLifeDays)
	}
	term := v * math.Pow(2, x)
	if typ == Helpful {
		d.Helpful += term
	} else {
		d.Harmful += term
	}
	if tm > d.NewestMs {
		d.NewestMs = tm
	}
	d.Terms++
}

// At evaluates both sums at now. exact is false when now precedes the
// newest term (some ages would be clamped to 0): the caller must then sum
// the terms directly.
func (d DecaySums) At(now time.Time, halfLifeDays float64) (helpful, harmful float64, exact bool) {
	if d.Terms == 0 {
		return 0, 0, true
	}
	if now.UnixMilli() < d.NewestMs {
		return 0, 0, false
	}
	f := math.Pow(2, -exponent(d.EpochMs, now, halfLifeDays))
	return d.Helpful * f, d.Harmful * f, true
}

// CriterionWeight is the weight rule: max(0.1, H/(H+Harm)) when H+Harm > 0,
// else 1.0 (also when a sum is NaN, as in the reference).
func CriterionWeight(helpful, harmful float64) float64 {
	total := helpful + harmful
	if total > 0 {
		return math.Max(0.1, helpful/total)
	}
	return 1.0
}
