package crossloop

import (
	"math"
	"time"
)

// PrunePolicy holds the prune thresholds (defaults of the shared registry's
// pruning policy).
type PrunePolicy struct {
	// MinSuccessRate: a pattern below it (strictly) with at least
	// MinUsageCount uses is pruned.
	MinSuccessRate float64 `json:"min_success_rate"`
	MinUsageCount  int     `json:"min_usage_count"`
	// MaxAgeDays: a pattern unused for more than this many days (strictly,
	// fractional days since last_used) is pruned.
	MaxAgeDays float64 `json:"max_age_days"`
}

// DefaultPrunePolicy: 0.5, 3 uses, 90 days.
func DefaultPrunePolicy() PrunePolicy {
	return PrunePolicy{MinSuccessRate: 0.5, MinUsageCount: 3, MaxAgeDays: 90}
}

// Prune reasons.
const (
	ReasonLowSuccess = "low_success_rate"
	ReasonUnused     = "unused"
)

// PruneDecision says whether a pattern goes to the archive at now, and why.
// An anti-pattern is judged on its failure rate: it goes when the approach
// it warns against works more often than not.
func PruneDecision(p *Pattern, pol PrunePolicy, now time.Time) (prune bool, reason string) {
	if p.Archived {
		return false, ""
	}
	if p.UsageCount >= pol.MinUsageCount && KeepRate(p) < pol.MinSuccessRate {
		return true, ReasonLowSuccess
	}
	last := p.LastUsed
	if last.IsZero() {
		last = p.FirstDiscovered
	}
	if !last.IsZero() && DaysBetween(last, now) > pol.MaxAgeDays {
		return true, ReasonUnused
	}
	return false, ""
}

// DecidePrune is PruneDecision on bare numbers (conformance cases).
func DecidePrune(successRate float64, usage int, daysSinceLastUsed float64, pol PrunePolicy) bool {
	if usage >= pol.MinUsageCount && successRate < pol.MinSuccessRate {
		return true
	}
	return daysSinceLastUsed > pol.MaxAgeDays
}

// DaysBetween is the fractional number of days from a to b, never negative.
func DaysBetween(a, b time.Time) float64 {
	return math.Max(0, b.Sub(a).Hours()/24)
}

// ArchiveMonth is the archive key of a prune at t: its UTC month, YYYY-MM.
func ArchiveMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// ArchiveFile is the archive file name of a month: YYYY-MM-patterns.json.
func ArchiveFile(month string) string { return month + "-patterns.json" }
