package learning

import (
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loredev/lore/events"
)

// Pattern kinds. NB: must not change: stored and on the wire.
const (
	KindPattern     = "pattern"
	KindAntiPattern = "anti_pattern"
)

// maxExampleBeads is how many newest bead ids a pattern keeps.
const maxExampleBeads = 10

// Pattern is a decomposition pattern (the reference's DecompositionPattern).
type Pattern struct {
	ID           string    `json:"id"`
	Content      string    `json:"content"`
	Kind         string    `json:"kind"`
	IsNegative   bool      `json:"is_negative"`
	SuccessCount int       `json:"success_count"`
	FailureCount int       `json:"failure_count"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Reason       string    `json:"reason,omitempty"`
	Tags         []string  `json:"tags"`
	ExampleBeads []string  `json:"example_beads"`
}

// Inversion is the result of turning a pattern into an anti-pattern.
type Inversion struct {
	Original Pattern `json:"original"`
	Inverted Pattern `json:"inverted"`
	Reason   string  `json:"reason"`
}

// ShouldInvert is shouldInvertPattern: never for an anti-pattern; raw
// success+failure ≥ minObservations and failure/total ≥ threshold.
func ShouldInvert(p Pattern, cfg AntiPatternConfig) bool {
	if p.Kind == KindAntiPattern {
		return false
	}
	total := float64(p.SuccessCount + p.FailureCount)
	if total < cfg.MinObservations || total == 0 {
		return false
	}
	return float64(p.FailureCount)/total >= cfg.FailureRatioThreshold
}

// InversionReason is "Failed F/T times (P% failure rate)", P = round(100·F/T).
func InversionReason(failures, total int) string {
	p := jsRound(float64(failures) / float64(total) * 100)
	return "Failed " + jsNum(float64(failures)) + "/" + jsNum(float64(total)) + " times (" + jsNum(p) + "% failure rate)"
}

var (
	stripAvoid = regexp.MustCompile(`^` + jsCI(`avoid:\s*`))
	stripDoNot = regexp.MustCompile(`^` + jsCI(`do not:\s*`))
	stripNever = regexp.MustCompile(`^` + jsCI(`never:\s*`))
)

// AntiPatternText is the anti-pattern's content: the prefix, the content
// with a leading "AVOID:", then "DO NOT:", then "NEVER:" stripped in that
// order (case-insensitive), ". ", the reason.
func AntiPatternText(content, reason string, cfg AntiPatternConfig) string {
	c := stripAvoid.ReplaceAllLiteralString(content, "")
	c = stripDoNot.ReplaceAllLiteralString(c, "")
	c = stripNever.ReplaceAllLiteralString(c, "")
	return cfg.AntiPatternPrefix + c + ". " + reason
}

// InvertToAntiPattern is invertToAntiPattern: id "anti-<id>", kind
// anti_pattern, the AVOID text; counts, tags, examples and created_at kept.
func InvertToAntiPattern(p Pattern, reason string, now time.Time, cfg AntiPatternConfig) Inversion {
	inv := p
	inv.ID = "anti-" + p.ID
	inv.Content = AntiPatternText(p.Content, reason, cfg)
	inv.Kind = KindAntiPattern
	inv.IsNegative = true
	inv.Reason = reason
	inv.UpdatedAt = now
	inv.Tags = append([]string(nil), p.Tags...)
	inv.ExampleBeads = append([]string(nil), p.ExampleBeads...)
	return Inversion{Original: p, Inverted: inv, Reason: reason}
}

// RecordObservation is recordPatternObservation: counts one success or
// failure, keeps the newest 10 bead ids (an empty id is not kept) and
// returns an inversion when the pattern now qualifies.
func RecordObservation(p Pattern, success bool, beadID string, now time.Time, cfg AntiPatternConfig) (Pattern, *Inversion) {
	if success {
		p.SuccessCount++
	} else {
		p.FailureCount++
	}
	p.UpdatedAt = now
	if beadID != "" {
		old := p.ExampleBeads
		if len(old) > maxExampleBeads-1 {
			old = old[len(old)-(maxExampleBeads-1):]
		}
		p.ExampleBeads = append(append(make([]string, 0, len(old)+1), old...), beadID)
	}
	if !ShouldInvert(p, cfg) {
		return p, nil
	}
	total := p.SuccessCount + p.FailureCount
	inv := InvertToAntiPattern(p, InversionReason(p.FailureCount, total), now, cfg)
	return p, &inv
}

// NormalizeContent is the form a pattern id is derived from: lower case,
// whitespace runs collapsed to one space, trimmed.
func NormalizeContent(content string) string {
	return strings.Join(strings.Fields(strings.ToLower(content)), " ")
}

// PatternID derives a stable id from a pattern's content (see
// events.PatternIDFor): "split-by-file-type-1a2b3c4d".
func PatternID(content string) string { return events.PatternIDFor(content) }

// lastPatternID is the last content patternIDOf derived an id from, and
// that id: observations of one pattern come in runs, and deriving the id
// (normalising and hashing the content) is most of what folding an
// observation named by content costs. Safe for concurrent folds and
// queries: PatternID is a pure function.
var lastPatternID atomic.Pointer[[2]string]

// patternIDOf is PatternID(content), remembered for the last content.
func patternIDOf(content string) string {
	if last := lastPatternID.Load(); last != nil && last[0] == content {
		return last[1]
	}
	id := PatternID(content)
	lastPatternID.Store(&[2]string{content, id})
	return id
}
