// Package crossloop is lore's cross-loop learning registry: patterns
// extracted when a loop completes (error→fix pairs, success approaches,
// anti-patterns, code templates), injected when a loop starts, updated each
// time a loop applies one, pruned to a monthly archive, and exported or
// imported in the shared registry's file shapes.
//
// Rules are pure functions in small files (time passed in); fold.go folds the
// loop events into the "crossloop" read model and query.go answers from it.
package crossloop

import "time"

// Pattern types. NB: must not change: stored in the read model and in ids.
const (
	TypeError    = "error"
	TypeSuccess  = "success"
	TypeAnti     = "anti"
	TypeTemplate = "template"
)

// Types lists the pattern types in display order.
var Types = []string{TypeError, TypeSuccess, TypeAnti, TypeTemplate}

// ValidType reports whether t is a pattern type.
func ValidType(t string) bool {
	switch t {
	case TypeError, TypeSuccess, TypeAnti, TypeTemplate:
		return true
	}
	return false
}

// Pattern is one registry entry, of any type. Fields of other types stay
// empty. NB: the JSON names reach disk (the read model); add, never rename.
type Pattern struct {
	ID       string   `json:"pattern_id"`
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Category string   `json:"category,omitempty"`
	Tags     []string `json:"tags,omitempty"`

	// error patterns
	ErrorType      string   `json:"error_type,omitempty"`
	ErrorPattern   string   `json:"error_pattern,omitempty"`
	LocationHints  []string `json:"error_location_hints,omitempty"`
	FixDescription string   `json:"fix_description,omitempty"`
	FixCategory    string   `json:"fix_category,omitempty"`
	DiffPattern    string   `json:"diff_pattern,omitempty"`

	// error patterns and code templates
	CodeTemplate string            `json:"code_template,omitempty"`
	Language     string            `json:"language,omitempty"`
	Placeholders map[string]string `json:"placeholders,omitempty"`
	UseCase      string            `json:"use_case,omitempty"`

	// success patterns
	TaskPattern   string   `json:"task_description_pattern,omitempty"`
	Approach      string   `json:"approach,omitempty"`
	Steps         []string `json:"steps,omitempty"`
	ToolsUsed     []string `json:"tools_used,omitempty"`
	IterationsSum float64  `json:"iterations_sum,omitempty"`
	IterationsN   int      `json:"iterations_n,omitempty"`
	IterationsMin int      `json:"iterations_min,omitempty"`
	IterationsMax int      `json:"iterations_max,omitempty"`
	Preconditions []string `json:"preconditions,omitempty"`
	Benefits      []string `json:"benefits,omitempty"`
	Limitations   []string `json:"limitations,omitempty"`

	// anti-patterns
	FailureMode       string   `json:"failure_mode,omitempty"`
	Symptoms          []string `json:"failure_symptoms,omitempty"`
	WhyItFails        string   `json:"why_it_fails,omitempty"`
	BetterAlternative string   `json:"better_alternative,omitempty"`
	BetterPatternID   string   `json:"better_alternative_pattern_id,omitempty"`
	OccurrenceCount   int      `json:"occurrence_count,omitempty"`

	// error patterns: ids of related patterns (as a file states them)
	RelatedPatterns []string `json:"related_patterns,omitempty"`

	// effectiveness (effectiveness.go)
	// RateStated: SuccessRate (and StatedFailureRate of an anti-pattern)
	// are the figures an imported file states, which whole counts cannot
	// always reproduce (0.95 of 3 uses); the next update recomputes them
	// from the counts.
	RateStated        bool         `json:"rate_stated,omitempty"`
	StatedFailureRate float64      `json:"stated_failure_rate,omitempty"`
	Successful        int          `json:"successful_applications"`
	Failed            int          `json:"failed_applications"`
	SuccessRate       float64      `json:"success_rate"`
	UsageCount        int          `json:"usage_count"`
	Trend             []TrendPoint `json:"effectiveness_trend,omitempty"`

	FirstDiscovered time.Time `json:"first_discovered"`
	LastUsed        time.Time `json:"last_used"`
	// SourceLoops is the lineage: who discovered, merged into or applied it.
	SourceLoops []SourceLoop `json:"source_loops,omitempty"`

	// Archive: a pruned pattern stays, archived under the month of pruning.
	Archived      bool   `json:"archived,omitempty"`
	ArchiveMonth  string `json:"archive_month,omitempty"`
	ArchiveReason string `json:"archive_reason,omitempty"`
}

// Lineage roles of a source loop.
const (
	RoleDiscovered = "discovered"
	RoleMerged     = "merged"
	RoleApplied    = "applied"
	RoleImported   = "imported"
)

// SourceLoop is one loop in a pattern's lineage.
type SourceLoop struct {
	LoopID        string    `json:"loop_id"`
	Timestamp     time.Time `json:"timestamp"`
	ContributedBy string    `json:"contributed_by,omitempty"`
	Role          string    `json:"role"`
	// Success is the result of the application (applied) or the loop's
	// contribution (discovered, merged).
	Success          bool   `json:"success"`
	Outcome          string `json:"outcome,omitempty"`
	Iterations       int    `json:"iterations_required,omitempty"`
	FailureIteration int    `json:"failure_iteration,omitempty"`
}

// TrendPoint is one effectiveness snapshot, appended on every update.
type TrendPoint struct {
	Timestamp   time.Time `json:"timestamp"`
	SuccessRate float64   `json:"success_rate_snapshot"`
	SampleSize  int       `json:"sample_size"`
	SourceLoop  string    `json:"source_loop,omitempty"`
}

// FailureRate is the anti-pattern's rate: failed / (successful + failed).
func (p *Pattern) FailureRate() float64 {
	if p.RateStated && p.Type == TypeAnti {
		return p.StatedFailureRate
	}
	n := p.Successful + p.Failed
	if n == 0 {
		return 0
	}
	return float64(p.Failed) / float64(n)
}

// AverageIterations of a success pattern's source loops (0 when none).
func (p *Pattern) AverageIterations() float64 {
	if p.IterationsN == 0 {
		return 0
	}
	return p.IterationsSum / float64(p.IterationsN)
}

// HasLoop reports whether loopID is already in the lineage.
func (p *Pattern) HasLoop(loopID string) bool {
	for _, s := range p.SourceLoops {
		if s.LoopID == loopID {
			return true
		}
	}
	return false
}

// Signature is the text two patterns of one type are compared on for a
// merge: error type + message pattern; approach steps; template body;
// anti-pattern approach + failure mode.
func (p *Pattern) Signature() string {
	switch p.Type {
	case TypeError:
		return p.ErrorType + " " + p.ErrorPattern
	case TypeSuccess:
		s := ""
		for _, st := range p.Steps {
			s += st + " "
		}
		if s == "" {
			s = p.Approach
		}
		return s
	case TypeAnti:
		return p.ApproachDescription() + " " + p.FailureMode
	case TypeTemplate:
		return p.CodeTemplate
	}
	return ""
}

// ApproachDescription of an anti-pattern (stored in Approach).
func (p *Pattern) ApproachDescription() string { return p.Approach }

// SearchText is what relevance is computed on: the pattern's words and tags.
func (p *Pattern) SearchText() string {
	s := p.Title + " " + p.Category + " " + p.ErrorType + " " + p.ErrorPattern + " " +
		p.FixDescription + " " + p.Approach + " " + p.UseCase + " " + p.WhyItFails + " " +
		p.TaskPattern + " " + p.FailureMode + " " + p.Language
	for _, st := range p.Steps {
		s += " " + st
	}
	for _, t := range p.Tags {
		s += " " + t
	}
	return s
}
