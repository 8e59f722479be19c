package sim

import (
	"encoding/json"
	"math"
	"strconv"
)

// Ratio is a proportion that may be undefined (NaN: an empty denominator);
// it encodes as null in JSON.
type Ratio float64

// Undefined is the ratio of an empty denominator.
var Undefined = Ratio(math.NaN())

// Defined is false for an undefined ratio.
func (r Ratio) Defined() bool { return !math.IsNaN(float64(r)) }

// MarshalJSON writes null for an undefined ratio.
func (r Ratio) MarshalJSON() ([]byte, error) {
	if !r.Defined() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(r), 'f', 4, 64), nil
}

// UnmarshalJSON reads null as undefined.
func (r *Ratio) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = Undefined
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*r = Ratio(f)
	return nil
}

func ratio(num, den int) Ratio {
	if den == 0 {
		return Undefined
	}
	return Ratio(float64(num) / float64(den))
}

// PR is the precision and recall of a set lore claims against the truth.
type PR struct {
	Precision Ratio `json:"precision"`
	Recall    Ratio `json:"recall"`
	// Claimed is how many strategies lore put in the set, Correct how many
	// of them are truly in it, Truth how many truly are.
	Claimed int `json:"claimed"`
	Correct int `json:"correct"`
	Truth   int `json:"truth"`
}

// Score compares the labels lore claims with the labels that truly belong:
// precision = correct/claimed, recall = correct/truth (undefined when the
// denominator is 0). Only labels in universe count (lore may know patterns
// the workload does not use).
func Score(claimed, truth map[string]bool, universe []string) PR {
	var pr PR
	for _, l := range universe {
		c, t := claimed[l], truth[l]
		if c {
			pr.Claimed++
		}
		if t {
			pr.Truth++
		}
		if c && t {
			pr.Correct++
		}
	}
	pr.Precision, pr.Recall = ratio(pr.Correct, pr.Claimed), ratio(pr.Correct, pr.Truth)
	return pr
}

// TruthSets returns the labels that should be proven (good) and inverted (bad).
func TruthSets(ss []Strategy) (good, bad map[string]bool) {
	good, bad = map[string]bool{}, map[string]bool{}
	for _, s := range ss {
		switch s.Truth() {
		case TruthGood:
			good[s.Label] = true
		case TruthBad:
			bad[s.Label] = true
		}
	}
	return good, bad
}

// Point is the state of a run after Obs observations (recorded attempts).
type Point struct {
	Obs int `json:"obs"`
	// SuccessRate is the cumulative share of successful attempts.
	SuccessRate Ratio `json:"success_rate"`
	Proven      PR    `json:"proven"`
	Anti        PR    `json:"anti"`
	// ConfidentBad scores what lore calls bad with confidence.
	ConfidentBad PR `json:"confident_bad"`
}

// Metric picks one value of a point.
type Metric func(Point) Ratio

// Metrics plotted.
var (
	MetricSuccess Metric = func(p Point) Ratio { return p.SuccessRate }
	MetricProvenP Metric = func(p Point) Ratio { return p.Proven.Precision }
	MetricProvenR Metric = func(p Point) Ratio { return p.Proven.Recall }
	MetricAntiP   Metric = func(p Point) Ratio { return p.Anti.Precision }
	MetricAntiR   Metric = func(p Point) Ratio { return p.Anti.Recall }
	MetricConfP   Metric = func(p Point) Ratio { return p.ConfidentBad.Precision }
	MetricConfR   Metric = func(p Point) Ratio { return p.ConfidentBad.Recall }
)

// XY is one point of a plotted line; Y is NaN where the value is undefined.
type XY struct{ X, Y float64 }

// StepAt is a curve's value at obs: the value of its last point with
// Obs <= obs (curves are steps between measurements); undefined before the
// first point or after the last.
func StepAt(curve []Point, obs int, m Metric) Ratio {
	if len(curve) == 0 || obs < curve[0].Obs || obs > curve[len(curve)-1].Obs {
		return Undefined
	}
	v := Undefined
	for _, p := range curve {
		if p.Obs > obs {
			break
		}
		v = m(p)
	}
	return v
}

// MeanCurve averages curves (one per seed) on a grid of steps points from 0
// to the shortest curve's end (so every mean is over the same seeds): at
// each x, the mean of the curves' defined values; NaN where none is defined.
func MeanCurve(curves [][]Point, m Metric, steps int) []XY {
	end := -1
	for _, c := range curves {
		if len(c) == 0 {
			return nil
		}
		if last := c[len(c)-1].Obs; end < 0 || last < end {
			end = last
		}
	}
	if steps < 1 || end <= 0 {
		return nil
	}
	out := make([]XY, 0, steps+1)
	for i := 0; i <= steps; i++ {
		x := int(math.Round(float64(end) * float64(i) / float64(steps)))
		sum, n := 0.0, 0
		for _, c := range curves {
			if v := StepAt(c, x, m); v.Defined() {
				sum += float64(v)
				n++
			}
		}
		y := math.NaN()
		if n > 0 {
			y = sum / float64(n)
		}
		out = append(out, XY{X: float64(x), Y: y})
	}
	return out
}

// MeanOf is the mean of the defined values (undefined when none is).
func MeanOf(vs []Ratio) Ratio {
	sum, n := 0.0, 0
	for _, v := range vs {
		if v.Defined() {
			sum += float64(v)
			n++
		}
	}
	if n == 0 {
		return Undefined
	}
	return Ratio(sum / float64(n))
}

// Summary is the mean of one arm's runs over seeds.
type Summary struct {
	Runs        int     `json:"runs"`
	Iterations  float64 `json:"mean_iterations"`
	Failed      float64 `json:"failed_tasks"`
	SuccessRate Ratio   `json:"success_rate"`
	ProvenP     Ratio   `json:"proven_precision"`
	ProvenR     Ratio   `json:"proven_recall"`
	AntiP       Ratio   `json:"anti_precision"`
	AntiR       Ratio   `json:"anti_recall"`
	// ObsToProven / ObsToAnti are the mean observations of a good (bad)
	// strategy when lore first said proven (inverted or deprecated), over
	// the strategies it detected at all.
	ObsToProven Ratio `json:"obs_to_proven"`
	ObsToAnti   Ratio `json:"obs_to_anti"`
	// Detected counts those detections; Good / Bad the strategies to detect.
	ProvenDetected int `json:"proven_detected"`
	AntiDetected   int `json:"anti_detected"`
	Good           int `json:"good"`
	Bad            int `json:"bad"`
	// ConfidentBadP is the precision of what lore calls bad with
	// confidence (Result.ConfidentBad), averaged over the runs where it
	// claims something; ConfidentBadClaimed the mean count it claims.
	ConfidentBadP       Ratio   `json:"confident_bad_precision"`
	ConfidentBadR       Ratio   `json:"confident_bad_recall"`
	ConfidentBadClaimed float64 `json:"confident_bad_claimed"`
	// GoodFound20 is the share of the strategies good before any drift
	// that lore recommended (proven or established, not inverted) within
	// their first FoundWithin observations.
	GoodFound20 Ratio `json:"good_found_within_20"`
}

// FoundWithin is the observations within which a good strategy counts as
// found (Summary.GoodFound20).
const FoundWithin = 20

// Summarize averages runs (of one arm); precision and recall average the
// runs where they are defined.
func Summarize(rs []Result) Summary {
	s := Summary{Runs: len(rs)}
	if len(rs) == 0 {
		return s
	}
	var sr, pp, prr, ap, ar, toP, toA, cp, cr []Ratio
	earlyGood, found := 0, 0
	for _, r := range rs {
		cp, cr = append(cp, r.ConfidentBad.Precision), append(cr, r.ConfidentBad.Recall)
		s.ConfidentBadClaimed += float64(r.ConfidentBad.Claimed) / float64(len(rs))
		for _, st := range r.Strategies {
			if st.EarlyTruth == TruthGood {
				earlyGood++
				if st.GoodAfter > 0 && st.GoodAfter <= FoundWithin {
					found++
				}
			}
		}
		s.Iterations += r.Iterations / float64(len(rs))
		s.Failed += float64(r.Failed) / float64(len(rs))
		sr = append(sr, ratio(r.Successes, r.Attempts))
		pp, prr = append(pp, r.Proven.Precision), append(prr, r.Proven.Recall)
		ap, ar = append(ap, r.Anti.Precision), append(ar, r.Anti.Recall)
		for _, st := range r.Strategies {
			switch st.Truth {
			case TruthGood:
				s.Good++
				if st.ProvenAfter > 0 {
					s.ProvenDetected++
					toP = append(toP, Ratio(st.ProvenAfter))
				}
			case TruthBad:
				s.Bad++
				if st.AntiAfter > 0 {
					s.AntiDetected++
					toA = append(toA, Ratio(st.AntiAfter))
				}
			}
		}
	}
	s.SuccessRate, s.ProvenP, s.ProvenR, s.AntiP, s.AntiR = MeanOf(sr), MeanOf(pp), MeanOf(prr), MeanOf(ap), MeanOf(ar)
	s.ObsToProven, s.ObsToAnti = MeanOf(toP), MeanOf(toA)
	s.ConfidentBadP, s.ConfidentBadR, s.GoodFound20 = MeanOf(cp), MeanOf(cr), ratio(found, earlyGood)
	return s
}
