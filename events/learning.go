package events

// Event types of the learning systems (implicit feedback, decay, maturity,
// anti-patterns, error accumulator).

// OutcomeRecorded reports how a subtask (bead) ended.
type OutcomeRecorded struct {
	BeadID         string   `json:"bead_id"`
	DurationMs     int64    `json:"duration_ms"`
	ErrorCount     *int     `json:"error_count,omitempty"` // defaults to the bead's recorded errors
	RetryCount     int      `json:"retry_count"`
	Success        bool     `json:"success"`
	FilesTouched   []string `json:"files_touched,omitempty"`
	Strategy       string   `json:"strategy,omitempty"`
	FailureMode    string   `json:"failure_mode,omitempty"`
	FailureDetails string   `json:"failure_details,omitempty"`
	// Criteria are evaluation criteria this outcome scores.
	Criteria []string `json:"criteria,omitempty"`
	// Decomposition is the decomposition text; strategies are extracted from it.
	Decomposition string `json:"decomposition,omitempty"`
}

func (o *OutcomeRecorded) AggregateID() string { return o.BeadID }

// ErrorRecorded is one error met while executing a bead.
type ErrorRecorded struct {
	BeadID     string `json:"bead_id"`
	ErrorType  string `json:"error_type"`
	Message    string `json:"message"`
	StackTrace string `json:"stack_trace,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Context    string `json:"context,omitempty"`
}

func (e *ErrorRecorded) AggregateID() string { return e.BeadID }

// ErrorResolved marks an error (by its event id) as resolved.
type ErrorResolved struct {
	BeadID  string `json:"bead_id"`
	ErrorID string `json:"error_id"`
}

func (e *ErrorResolved) AggregateID() string { return e.BeadID }

func init() {
	Register(Kind{Type: "outcome.recorded/v1", Aggregate: "bead",
		Doc: "a subtask ended: duration, errors, retries, success, criteria and strategy it used",
		New: func() Payload { return new(OutcomeRecorded) }})
	Register(Kind{Type: "error.recorded/v1", Aggregate: "bead",
		Doc: "an error met while executing a bead (validation, timeout, conflict, tool_failure, unknown)",
		New: func() Payload { return new(ErrorRecorded) }})
	Register(Kind{Type: "error.resolved/v1", Aggregate: "bead",
		Doc: "an error of a bead was resolved", New: func() Payload { return new(ErrorResolved) }})
}
