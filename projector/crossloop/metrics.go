package crossloop

import (
	"math"
	"time"
)

// Stats are the registry's running totals, kept by the fold (O(1) per
// event) so that metrics never scan patterns or loops.
// NB: stored in the read model; add fields, never rename.
type Stats struct {
	ByType     map[string]int  `json:"by_type"`    // active (not archived) patterns
	Archived   int             `json:"archived"`   // archived patterns
	Successful int             `json:"successful"` // applications (pattern.applied)
	Failed     int             `json:"failed"`     // applications (pattern.applied)
	Counters   map[string]int  `json:"counters"`   // per-type id counter (NNN)
	Categories map[string]*Cat `json:"categories"` // completed loops per category
	Updated    time.Time       `json:"last_updated"`
	IndexDocs  int             `json:"index_docs"` // patterns in the text index
	IndexLen   int             `json:"index_len"`  // sum of their lengths in terms
}

// Cat counts completed loops of one category, with and without injection.
type Cat struct {
	With        int `json:"with"`
	WithIter    int `json:"with_iterations"`
	Without     int `json:"without"`
	WithoutIter int `json:"without_iterations"`
}

// NewStats returns empty stats.
func NewStats() *Stats {
	return &Stats{ByType: map[string]int{}, Counters: map[string]int{}, Categories: map[string]*Cat{}}
}

// Metrics is the effectiveness report, in the shared registry's shape.
type Metrics struct {
	TotalPatterns    int              `json:"total_patterns"`
	PatternsByType   PatternsByType   `json:"patterns_by_type"`
	Usage            UsageStats       `json:"pattern_usage_stats"`
	Benefit          CrossLoopBenefit `json:"cross_loop_benefit"`
	ArchivedPatterns int              `json:"archived_patterns"`
	LastUpdated      time.Time        `json:"last_updated"`
}

// PatternsByType counts active patterns.
type PatternsByType struct {
	Error    int `json:"error_patterns"`
	Success  int `json:"success_patterns"`
	Anti     int `json:"anti_patterns"`
	Template int `json:"code_templates"`
}

// UsageStats counts applications.
type UsageStats struct {
	Total              int     `json:"total_applications"`
	Successful         int     `json:"successful_applications"`
	Failed             int     `json:"failed_applications"`
	OverallSuccessRate float64 `json:"overall_success_rate"`
}

// CrossLoopBenefit compares loops with and without injection.
type CrossLoopBenefit struct {
	With        int     `json:"loops_with_pattern_injection"`
	Without     int     `json:"loops_without_pattern_injection"`
	AvgWith     float64 `json:"average_iterations_with"`
	AvgWithout  float64 `json:"average_iterations_without"`
	Improvement float64 `json:"improvement_percentage"`
}

// ComputeMetrics builds the report from the running totals.
func ComputeMetrics(s *Stats) Metrics {
	m := Metrics{PatternsByType: PatternsByType{Error: s.ByType[TypeError], Success: s.ByType[TypeSuccess],
		Anti: s.ByType[TypeAnti], Template: s.ByType[TypeTemplate]}, ArchivedPatterns: s.Archived,
		LastUpdated: s.Updated}
	m.TotalPatterns = m.PatternsByType.Error + m.PatternsByType.Success + m.PatternsByType.Anti + m.PatternsByType.Template
	m.Usage = UsageStats{Total: s.Successful + s.Failed, Successful: s.Successful, Failed: s.Failed,
		OverallSuccessRate: OverallSuccessRate(s.Successful, s.Successful+s.Failed)}
	var wi, woi int
	for _, c := range s.Categories {
		m.Benefit.With += c.With
		m.Benefit.Without += c.Without
		wi += c.WithIter
		woi += c.WithoutIter
	}
	m.Benefit.AvgWith = mean(wi, m.Benefit.With)
	m.Benefit.AvgWithout = mean(woi, m.Benefit.Without)
	// With no loop on one side there is nothing to compare: 0, not the
	// 100 % an empty "with" average would give.
	if m.Benefit.With > 0 && m.Benefit.Without > 0 {
		m.Benefit.Improvement = Round1(Improvement(m.Benefit.AvgWithout, m.Benefit.AvgWith))
	}
	return m
}

func mean(sum, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// OverallSuccessRate = successful / total applications (0 without any).
func OverallSuccessRate(successful, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(successful) / float64(total)
}

// Improvement = (without − with) / without · 100; 0 when without is 0.
// It is the formula of both the registry's improvement_percentage and a
// loop's improvement against its baseline. The difference is rounded to
// 1e-9 first, so binary noise of averages (5.1 − 3.2 = 1.8999999999999995)
// does not reach the result: (5.1, 3.2) gives 37.254901960784316.
func Improvement(without, with float64) float64 {
	if without == 0 {
		return 0
	}
	d := math.Round((without-with)*1e9) / 1e9
	return d / without * 100
}

// Round1 rounds to one decimal, halves away from zero.
func Round1(x float64) float64 { return math.Round(x*10) / 10 }

// Baseline of a category: mean iterations of its completed loops run
// without injection; ok is false when there are none.
func (s *Stats) Baseline(category string) (float64, bool) {
	c := s.Categories[category]
	if c == nil || c.Without == 0 {
		return 0, false
	}
	return mean(c.WithoutIter, c.Without), true
}

// LoopImpact is one loop's improvement estimate.
type LoopImpact struct {
	LoopID             string  `json:"loop_id"`
	Category           string  `json:"category"`
	Injected           int     `json:"injected_patterns"`
	BaselineIterations float64 `json:"baseline_iterations"`
	ActualIterations   int     `json:"actual_iterations"`
	Improvement        float64 `json:"improvement"`
	HasBaseline        bool    `json:"has_baseline"`
}

// Impact of a completed loop against its category's baseline.
func (s *Stats) Impact(l *Loop) LoopImpact {
	im := LoopImpact{LoopID: l.ID, Category: l.Category, Injected: len(l.Injected), ActualIterations: l.IterationCount()}
	if b, ok := s.Baseline(l.Category); ok {
		im.BaselineIterations, im.HasBaseline = b, true
		im.Improvement = Round1(Improvement(b, float64(im.ActualIterations)))
	}
	return im
}
