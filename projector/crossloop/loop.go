package crossloop

import (
	"errors"
	"fmt"
	"time"
)

// Loop outcomes.
const (
	OutcomeSuccess = "success"
	OutcomePartial = "partial"
	OutcomeFailure = "failure"
)

// Loop is one agent loop as the registry knows it.
// NB: stored in the read model; add fields, never rename.
type Loop struct {
	ID       string    `json:"loop_id"`
	Task     string    `json:"task"`
	Category string    `json:"category,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	Started  time.Time `json:"started_at"`

	Iterations []Iteration `json:"iterations,omitempty"`

	Outcome     string    `json:"outcome,omitempty"` // empty while running
	Completed   time.Time `json:"completed_at,omitempty"`
	NIterations int       `json:"iterations_count,omitempty"` // as reported at completion
	FailureMode string    `json:"failure_mode,omitempty"`
	Approach    string    `json:"approach,omitempty"`

	Injected  []string      `json:"injected_patterns,omitempty"`
	Applied   []Application `json:"applied_patterns,omitempty"`
	Extracted []Extracted   `json:"extracted_patterns,omitempty"`
	// Counted: the loop is in the category totals (completed once).
	Counted bool `json:"counted,omitempty"`
}

// Iteration is one iteration of a loop.
type Iteration struct {
	N              int       `json:"iteration"`
	ErrorType      string    `json:"error_type,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	Location       string    `json:"location,omitempty"`
	FixDescription string    `json:"fix_description,omitempty"`
	FixDiff        string    `json:"fix_diff,omitempty"`
	TestsPassed    *int      `json:"tests_passed,omitempty"`
	TestsFailed    *int      `json:"tests_failed,omitempty"`
	Tools          []string  `json:"tools_used,omitempty"`
	FilesChanged   []string  `json:"files_changed,omitempty"`
	Agent          string    `json:"agent,omitempty"`
	Time           time.Time `json:"time"`
}

// HasError reports whether the iteration met an error.
func (it *Iteration) HasError() bool { return it.ErrorType != "" || it.ErrorMessage != "" }

// TestsGreen reports whether the iteration ran tests and none failed.
func (it *Iteration) TestsGreen() bool {
	return it.TestsPassed != nil && *it.TestsPassed > 0 && (it.TestsFailed == nil || *it.TestsFailed == 0)
}

// Application is one pattern applied by the loop.
type Application struct {
	PatternID string `json:"pattern_id"`
	Success   bool   `json:"successful"`
	Iteration int    `json:"iteration_used,omitempty"`
}

// Extracted is one pattern the loop contributed.
type Extracted struct {
	PatternID string `json:"pattern_id"`
	New       bool   `json:"new"`
	// Archived: the loop reinforced a pruned pattern, which stays
	// archived; Restored: the reinforcement brought it back.
	Archived bool `json:"archived,omitempty"`
	Restored bool `json:"restored,omitempty"`
}

// IterationCount is the reported count at completion, else the iterations seen.
func (l *Loop) IterationCount() int {
	if l.NIterations > 0 {
		return l.NIterations
	}
	return len(l.Iterations)
}

// ErrNotStarted is the reason a completion of a loop without a
// loop.started/v1 is refused (every door: the command answers 404, the
// fold dead-letters a raw event).
var ErrNotStarted = errors.New("loop was never started")

// ErrLoopNotStarted names the loop in ErrNotStarted.
func ErrLoopNotStarted(id string) error { return fmt.Errorf("loop %q: %w", id, ErrNotStarted) }

// LoopStarted reports whether a loop.started/v1 was folded for the loop.
func LoopStarted(r Reader, id string) (bool, error) {
	h, ok, err := loadLoopHead(r, id)
	if err != nil || !ok {
		return false, err
	}
	return h.Begun, nil
}
