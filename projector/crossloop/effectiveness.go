package crossloop

import "time"

// Discover initialises the counters of a new pattern: the discovering loop
// counts as one application, a success (for an anti-pattern, one failure:
// the approach failed in the loop it came from).
func Discover(p *Pattern, loopID, agent string, t time.Time) {
	p.FirstDiscovered, p.LastUsed = t, t
	record(p, loopID, agent, RoleDiscovered, p.Type != TypeAnti, t)
}

// Merge folds a new occurrence into an existing pattern (similarity above
// the threshold): usage, source loops and success rate aggregate as for an
// application; the occurrence is a success, or a failure for anti-patterns.
func Merge(p *Pattern, loopID, agent string, t time.Time) {
	record(p, loopID, agent, RoleMerged, p.Type != TypeAnti, t)
}

// Apply records one application of a pattern by a loop: usage_count + 1,
// successful or failed + 1, success_rate = successful/(successful+failed),
// a trend snapshot, the loop added to the lineage if new, last_used = t.
// For an anti-pattern success means the approach worked this time.
func Apply(p *Pattern, loopID, agent string, success bool, t time.Time) {
	record(p, loopID, agent, RoleApplied, success, t)
}

func record(p *Pattern, loopID, agent, role string, success bool, t time.Time) {
	recordKnown(p, loopID != "" && p.HasLoop(loopID), loopID, agent, role, success, t)
}

// recordKnown is record with the lineage test done by the caller: known
// reports whether loopID is already in p's lineage.
func recordKnown(p *Pattern, known bool, loopID, agent, role string, success bool, t time.Time) {
	p.UsageCount++
	if success {
		p.Successful++
	} else {
		p.Failed++
	}
	p.SuccessRate = SuccessRate(p.Successful, p.Failed)
	p.RateStated, p.StatedFailureRate = false, 0
	if p.Type == TypeAnti {
		p.OccurrenceCount = p.Successful + p.Failed
	}
	p.Trend = append(p.Trend, TrendPoint{Timestamp: t, SuccessRate: p.SuccessRate,
		SampleSize: p.Successful + p.Failed, SourceLoop: loopID})
	if loopID != "" && !known {
		p.SourceLoops = append(p.SourceLoops, SourceLoop{LoopID: loopID, Timestamp: t,
			ContributedBy: agent, Role: role, Success: success})
	}
	if t.After(p.LastUsed) {
		p.LastUsed = t
	}
}

// SuccessRate is successful/(successful+failed), 0 when both are 0.
func SuccessRate(successful, failed int) float64 {
	if successful+failed == 0 {
		return 0
	}
	return float64(successful) / float64(successful+failed)
}

// Maturity of a pattern from its raw counts, with the multipliers of SPEC
// §3: deprecated (failure ratio > 0.3 with ≥ 3 samples) ×0, candidate (< 3
// samples) ×0.5, proven (≥ 5 good and failure ratio < 0.15) ×1.5, else
// established ×1.0. For an anti-pattern the roles swap: a failure of the
// approach confirms the warning.
func Maturity(p *Pattern) (state string, multiplier float64) {
	good, bad := p.Successful, p.Failed
	if p.Type == TypeAnti {
		good, bad = bad, good
	}
	total := good + bad
	switch {
	case total >= 3 && float64(bad)/float64(total) > 0.3:
		return "deprecated", 0
	case total < 3:
		return "candidate", 0.5
	case good >= 5 && float64(bad)/float64(total) < 0.15:
		return "proven", 1.5
	}
	return "established", 1.0
}

// Effectiveness = rate × maturity multiplier; the rate is the success rate,
// or the failure rate for anti-patterns.
func Effectiveness(p *Pattern) float64 {
	_, m := Maturity(p)
	return KeepRate(p) * m
}

// KeepRate is the rate injection filters on: success rate, or failure rate
// for anti-patterns.
func KeepRate(p *Pattern) float64 {
	if p.Type == TypeAnti {
		return p.FailureRate()
	}
	return p.SuccessRate
}
