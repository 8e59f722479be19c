package events

import json "github.com/goccy/go-json"

// Event types of cross-loop learning: loops report their start, iterations
// and completion; patterns are extracted at completion, injected at start,
// applied, pruned to an archive, imported from shared files.
//
// Every loop event lives on the loop's own subject (aggregate "loop", id =
// loop id), so one loop's events are ordered and an appender can guard them
// with optimistic concurrency on that subject.

// LoopStarted: a loop began. The loop id (ralph-<slug>-<8 hex>) is chosen
// before append (by the writer or the command), never in a fold.
type LoopStarted struct {
	LoopID   string `json:"loop_id"`
	Task     string `json:"task"`
	Category string `json:"category,omitempty"`
	Agent    string `json:"agent,omitempty"`
}

func (e *LoopStarted) AggregateID() string { return e.LoopID }

// LoopIteration: one iteration of a loop, with the error it met, the fix it
// applied and the test results.
type LoopIteration struct {
	LoopID         string   `json:"loop_id"`
	Iteration      int      `json:"iteration"`
	ErrorType      string   `json:"error_type,omitempty"`
	ErrorMessage   string   `json:"error_message,omitempty"`
	Location       string   `json:"location,omitempty"`
	FixDescription string   `json:"fix_description,omitempty"`
	FixDiff        string   `json:"fix_diff,omitempty"`
	DurationMs     *int64   `json:"duration_ms,omitempty"`
	TestsPassed    *int     `json:"tests_passed,omitempty"`
	TestsFailed    *int     `json:"tests_failed,omitempty"`
	ToolsUsed      []string `json:"tools_used,omitempty"`
	FilesChanged   []string `json:"files_changed,omitempty"`
	Agent          string   `json:"agent,omitempty"`
}

func (e *LoopIteration) AggregateID() string { return e.LoopID }

// LoopCompleted: a loop ended (success | partial | failure). Extraction runs.
type LoopCompleted struct {
	LoopID      string `json:"loop_id"`
	Outcome     string `json:"outcome"`
	Iterations  int    `json:"iterations"`
	FailureMode string `json:"failure_mode,omitempty"`
	Approach    string `json:"approach,omitempty"`
}

func (e *LoopCompleted) AggregateID() string { return e.LoopID }

// PatternApplied: a loop applied a pattern, successfully or not.
type PatternApplied struct {
	LoopID    string `json:"loop_id"`
	PatternID string `json:"pattern_id"`
	Success   bool   `json:"success"`
	Iteration int    `json:"iteration,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

func (e *PatternApplied) AggregateID() string { return e.LoopID }

// LoopInjected: these patterns were injected into the loop's context.
type LoopInjected struct {
	LoopID     string   `json:"loop_id"`
	PatternIDs []string `json:"pattern_ids"`
}

func (e *LoopInjected) AggregateID() string { return e.LoopID }

// ExtractRequested: a manual extraction from one loop or from all completed loops.
type ExtractRequested struct {
	LoopID string   `json:"loop_id,omitempty"`
	All    bool     `json:"all,omitempty"`
	Types  []string `json:"types,omitempty"`
}

func (e *ExtractRequested) AggregateID() string {
	if e.All || e.LoopID == "" {
		return "all"
	}
	return e.LoopID
}

// Check: exactly one of loop_id and all.
func (e *ExtractRequested) Check() error {
	if (e.LoopID == "") == !e.All {
		return errField("data.loop_id", "give loop_id or all=true, not both")
	}
	return nil
}

// PrunedPattern is one pattern of a prune decision, with its reason.
type PrunedPattern struct {
	PatternID string `json:"pattern_id"`
	Reason    string `json:"reason"`
}

// RegistryPruned: a prune decision: these patterns go to the archive of month.
type RegistryPruned struct {
	Month    string          `json:"month"`
	Patterns []PrunedPattern `json:"patterns"`
}

func (e *RegistryPruned) AggregateID() string { return "registry" }

// RegistryImported: patterns read from a shared registry file, in the
// registry's own pattern shape (projector/crossloop.Pattern).
type RegistryImported struct {
	Source   string            `json:"source,omitempty"`
	Patterns []json.RawMessage `json:"patterns"`
}

func (e *RegistryImported) AggregateID() string { return "registry" }

// PatternExtracted (derived): a loop contributed a pattern, new or merged.
type PatternExtracted struct {
	PatternID string `json:"pattern_id"`
	Type      string `json:"type"`
	LoopID    string `json:"loop_id"`
	New       bool   `json:"new"`
}

func (e *PatternExtracted) AggregateID() string { return e.PatternID }

// PatternArchived (derived): a pattern was pruned to the archive.
type PatternArchived struct {
	PatternID string `json:"pattern_id"`
	Month     string `json:"month"`
	Reason    string `json:"reason"`
}

func (e *PatternArchived) AggregateID() string { return e.PatternID }

type fieldError struct{ field, msg string }

func (e fieldError) Error() string { return "field \"" + e.field + "\": " + e.msg }

func errField(field, msg string) error { return fieldError{field, msg} }

func init() {
	Register(Kind{Type: "loop.started/v1", Aggregate: "loop",
		Doc: "an agent loop started: task, category, loop id", New: func() Payload { return new(LoopStarted) }})
	Register(Kind{Type: "loop.iteration/v1", Aggregate: "loop",
		Doc: "one loop iteration: error met, fix applied, test results, tools", New: func() Payload { return new(LoopIteration) }})
	Register(Kind{Type: "loop.completed/v1", Aggregate: "loop",
		Doc: "a loop ended (success, partial, failure); patterns are extracted", New: func() Payload { return new(LoopCompleted) }})
	Register(Kind{Type: "pattern.applied/v1", Aggregate: "loop",
		Doc: "a loop applied a registry pattern, successfully or not", New: func() Payload { return new(PatternApplied) }})
	Register(Kind{Type: "loop.injected/v1", Aggregate: "loop",
		Doc: "registry patterns injected into a loop's context", New: func() Payload { return new(LoopInjected) }})
	Register(Kind{Type: "registry.extract_requested/v1", Aggregate: "registry",
		Doc: "manual pattern extraction from a loop or all completed loops", New: func() Payload { return new(ExtractRequested) }})
	Register(Kind{Type: "registry.pruned/v1", Aggregate: "registry",
		Doc: "a prune decision: patterns archived under a month", New: func() Payload { return new(RegistryPruned) }})
	Register(Kind{Type: "registry.imported/v1", Aggregate: "registry",
		Doc: "patterns imported from a shared registry file", New: func() Payload { return new(RegistryImported) }})
	Register(Kind{Type: "registry.pattern_extracted/v1", Aggregate: "pattern", Derived: true,
		Doc: "a loop contributed a pattern (new or merged)", New: func() Payload { return new(PatternExtracted) }})
	Register(Kind{Type: "registry.pattern_archived/v1", Aggregate: "pattern", Derived: true,
		Doc: "a pattern was pruned to the archive", New: func() Payload { return new(PatternArchived) }})
}

// PatternRestored (derived): an archived pattern came back to the active
// registry: a loop (or an import) reinforced it and the prune rule in
// force no longer archives it.
type PatternRestored struct {
	PatternID string `json:"pattern_id"`
	Month     string `json:"month"`      // the archive it leaves
	PrunedFor string `json:"pruned_for"` // the reason it was pruned
	Cause     string `json:"cause"`      // the loop id, or "import"
}

func (e *PatternRestored) AggregateID() string { return e.PatternID }

func init() {
	Register(Kind{Type: "registry.pattern_restored/v1", Aggregate: "pattern", Derived: true,
		Doc: "an archived pattern was reinforced and restored to the registry", New: func() Payload { return new(PatternRestored) }})
}

// CrossloopConfigured sets the cross-loop configuration every replica folds
// with (the seed's ralph.cross_loop_learning extraction.* and injection.*
// keys and lore's pruning.*, keys over the defaults). Being an event, it
// replays identically, and an audit at a past time folds with the
// configuration in force then.
type CrossloopConfigured struct {
	Config json.RawMessage `json:"config"`
}

func (*CrossloopConfigured) AggregateID() string { return ConfigAggregate }

func init() {
	Register(Kind{Type: "crossloop.configured/v1", Aggregate: "crossloop-config",
		Doc: "the cross-loop (ralph.cross_loop_learning) configuration every replica folds with",
		New: func() Payload { return new(CrossloopConfigured) }})
}
