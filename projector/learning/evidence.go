package learning

import (
	"fmt"
	"math"
)

// Evidence with every verdict. The seed rules decide on thresholds alone:
// "Failed 2/3 times" inverts a pattern as surely as "Failed 40/50 times".
// lore reports beside each verdict the observations it rests on and an
// interval for the success rate, and marks a verdict tentative while that
// interval still straddles the verdict's threshold.
//
// The interval is the Wilson score interval. It is chosen over a Beta
// posterior because it needs no prior (a prior would be one more tuning knob
// with no reference value), is defined at 0 and n successes (unlike the
// normal approximation), stays inside [0, 1], and reproduces the
// conventional figures users check by hand ("2/3: 21–94 %"). It is applied
// to decayed counts, as the seeds decay them: a pattern's decayed helpful
// and harmful observations (its maturity sums), a criterion's decayed
// feedback. So old evidence weighs less, and a verdict nobody re-examines
// becomes tentative again as its evidence ages (drift is noticed). Before
// any decay the counts are the raw ones: "Failed 2/3 times" is 21–94 %.

// Evidence is the evidence behind one verdict.
type Evidence struct {
	// Successes and Failures are the (decayed, for maturity and criteria)
	// counts the interval is computed on; Observations their sum.
	Observations float64 `json:"observations"`
	Successes    float64 `json:"successes"`
	Failures     float64 `json:"failures"`
	// SuccessRate is Successes/Observations (0 without observations).
	SuccessRate float64 `json:"success_rate"`
	// Low and High bound the success rate at Confidence.
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	Confidence float64 `json:"confidence"`
	// Strength is "none", "little", "some" or "strong", by the interval's width.
	Strength string `json:"strength"`
	// Verdict is what the rule concluded (proven, established, candidate,
	// deprecated, inverted, weight); Threshold the success rate the verdict
	// is decided against, Side which side of it the verdict claims
	// ("above" or "below"; "" for no threshold).
	Verdict   string  `json:"verdict"`
	Threshold float64 `json:"threshold"`
	Side      string  `json:"side,omitempty"`
	// Tentative: the interval still contains the threshold, so the
	// observations do not yet support the verdict at Confidence.
	Tentative bool `json:"tentative"`
	// Confident: a verdict with a threshold whose interval lies entirely on
	// its side.
	Confident bool `json:"confident"`
}

// zFor is the two-sided standard normal quantile of a confidence level.
func zFor(confidence float64) float64 { return math.Sqrt2 * math.Erfinv(confidence) }

// Wilson is the Wilson score interval of a success rate: successes out of
// n (both may be fractional, decayed counts) at the confidence level.
// n <= 0 gives [0, 1].
func Wilson(successes, n, confidence float64) (low, high float64) {
	if !(n > 0) || !finite(successes) || !finite(n) {
		return 0, 1
	}
	p := math.Min(1, math.Max(0, successes/n))
	z := zFor(confidence)
	z2 := z * z
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}

// NewEvidence computes the evidence of a verdict on successes and failures
// against a threshold on the success rate; side is "below" when the
// verdict claims the rate is under the threshold (bad verdicts), "above"
// for good ones, "" when the verdict has no threshold.
func NewEvidence(successes, failures float64, verdict string, threshold float64, side string, confidence float64) Evidence {
	n := successes + failures
	e := Evidence{Observations: n, Successes: successes, Failures: failures, Confidence: confidence,
		Verdict: verdict, Threshold: threshold, Side: side}
	if n > 0 {
		e.SuccessRate = successes / n
	}
	e.Low, e.High = Wilson(successes, n, confidence)
	switch w := e.High - e.Low; {
	case !(n > 0):
		e.Strength = "none"
	case w > 0.5:
		e.Strength = "little"
	case w > 0.25:
		e.Strength = "some"
	default:
		e.Strength = "strong"
	}
	if side != "" {
		e.Tentative = e.Low <= threshold && threshold <= e.High
		e.Confident = !e.Tentative && ((side == "below" && e.High < threshold) || (side == "above" && e.Low > threshold))
	}
	return e
}

// FailurePhrase is the evidence of a bad verdict as the prompt blocks show
// it under the evidence policy: "67%; 95% interval 21–94%, little
// evidence" (failure rate and its interval), ", tentative" appended when
// the verdict is.
func (e Evidence) FailurePhrase() string { return pct(1-e.SuccessRate) + "%; " + e.FailureInterval() }

// FailureInterval is "95% interval 21–94%, little evidence" for the
// failure rate, ", tentative" appended when the verdict is.
func (e Evidence) FailureInterval() string {
	s := fmt.Sprintf("%s%% interval %s–%s%%, %s evidence", pct(e.Confidence), pct(1-e.High), pct(1-e.Low), e.Strength)
	if e.Tentative {
		s += ", tentative"
	}
	return s
}

// SuccessPhrase is the evidence of a verdict on the success rate:
// "80% success; 95% interval 49–94%, little evidence".
func (e Evidence) SuccessPhrase() string {
	s := fmt.Sprintf("%s%% success; %s%% interval %s–%s%%, %s evidence", pct(e.SuccessRate), pct(e.Confidence),
		pct(e.Low), pct(e.High), e.Strength)
	if e.Tentative {
		s += ", tentative"
	}
	return s
}

// Why is the evidence as a line of `lore why`.
func (e Evidence) Why() string {
	s := fmt.Sprintf("evidence: %.2f successes, %.2f failures; success rate %s%%, %s%% interval %s–%s%% (Wilson), %s evidence",
		e.Successes, e.Failures, pct(e.SuccessRate), pct(e.Confidence), pct(e.Low), pct(e.High), e.Strength)
	switch {
	case e.Side == "":
	case e.Tentative:
		s += fmt.Sprintf("; verdict %s is tentative: the interval contains its threshold %s%%", e.Verdict, pct(e.Threshold))
	default:
		s += fmt.Sprintf("; verdict %s is confident: the interval lies %s its threshold %s%%", e.Verdict, e.Side, pct(e.Threshold))
	}
	return s
}

func pct(v float64) string { return jsNum(jsRound(v * 100)) }

// MaturityEvidence is the evidence of a maturity state on decayed helpful
// and harmful sums: proven claims a success rate above 1-maxHarmful,
// deprecated one below 1-deprecationThreshold; candidate and established
// claim no threshold.
func MaturityEvidence(state MaturityState, helpful, harmful float64, mc MaturityConfig, confidence float64) Evidence {
	switch state {
	case Proven:
		return NewEvidence(helpful, harmful, string(state), 1-mc.MaxHarmful, "above", confidence)
	case Deprecated:
		return NewEvidence(helpful, harmful, string(state), 1-mc.DeprecationThreshold, "below", confidence)
	}
	return NewEvidence(helpful, harmful, string(state), 0, "", confidence)
}

// InversionEvidence is the evidence of an inversion on a pattern's decayed
// helpful and harmful observations: it claims a success rate below
// 1-failureRatioThreshold.
func InversionEvidence(helpful, harmful float64, ac AntiPatternConfig, confidence float64) Evidence {
	return NewEvidence(helpful, harmful, "inverted", 1-ac.FailureRatioThreshold, "below", confidence)
}

// ShouldRehabilitate is the evidence policy's rule: an inverted pattern is
// rehabilitated once its decayed observations (helpful, harmful) show, at
// the configured confidence, a failure rate below the inversion threshold
// (the success-rate interval lies entirely above 1-failureRatioThreshold).
// It returns the reason, with the raw counts.
func ShouldRehabilitate(successes, failures int, helpful, harmful float64, ac AntiPatternConfig, ec EvidenceConfig) (string, bool) {
	if ec.Policy != PolicyEvidence {
		return "", false
	}
	e := InversionEvidence(helpful, harmful, ac, ec.Confidence)
	if !(e.Low > e.Threshold) {
		return "", false
	}
	return fmt.Sprintf("Failed %d/%d times; decayed failure rate %s; below the inversion threshold %s%% at %s%% confidence",
		failures, successes+failures, e.FailurePhrase(), pct(1-e.Threshold), pct(ec.Confidence)), true
}
