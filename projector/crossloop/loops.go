package crossloop

import (
	"fmt"
	"sort"
	"time"

	json "github.com/goccy/go-json"
)

// LoopSummary is one loop in a listing: its state and iteration count,
// without its iterations.
type LoopSummary struct {
	ID         string    `json:"loop_id"`
	Task       string    `json:"task"`
	Category   string    `json:"category,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Started    time.Time `json:"started_at"`
	Iterations int       `json:"iterations"`
	Outcome    string    `json:"outcome,omitempty"` // empty while running
	Completed  time.Time `json:"completed_at,omitempty"`
	Injected   []string  `json:"injected_patterns,omitempty"` // pattern ids injected into the loop
}

// Running reports whether the loop has not completed.
func (s LoopSummary) Running() bool { return s.Outcome == "" }

// LoopFilter selects loops for ListLoops.
type LoopFilter struct {
	Running bool `json:"running,omitempty"` // only loops not completed
	Limit   int  `json:"limit,omitempty"`   // at most this many, newest first (0: 50)
}

// ListLoops lists loops, running ones first, then by start time, newest
// first, ties by id. It reads the loop heads only.
func ListLoops(r Reader, f LoopFilter) ([]LoopSummary, error) {
	var out []LoopSummary
	err := r.Scan([]byte(prefLoop), func(_, v []byte) error {
		var h loopHead
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode loop: %w", err)
		}
		if f.Running && h.Outcome != "" {
			return nil
		}
		out = append(out, LoopSummary{ID: h.ID, Task: h.Task, Category: h.Category, Agent: h.Agent, Started: h.Started,
			Iterations: h.count(), Outcome: h.Outcome, Completed: h.Completed, Injected: h.Injected})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Running() != b.Running() {
			return a.Running()
		}
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.ID < b.ID
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// LoopState is one loop as the seed's per-loop state shows it
// (loop_state.cross_loop_learning): the patterns injected into it, with
// whether and how it applied them; the patterns it contributed; and the
// improvement estimate against its category's baseline.
type LoopState struct {
	LoopSummary
	FailureMode string               `json:"failure_mode,omitempty"`
	Injected    []InjectedPattern    `json:"injected_patterns"`
	Extracted   []ExtractedPattern   `json:"extracted_patterns"`
	Estimate    *ImprovementEstimate `json:"improvement_estimate,omitempty"`
}

// InjectedPattern is a pattern injected into (or applied by) a loop.
// Applied patterns that were not injected are listed too (injected false).
type InjectedPattern struct {
	PatternID     string `json:"pattern_id"`
	Injected      bool   `json:"injected"`
	Applied       bool   `json:"applied"`
	Successful    bool   `json:"successful"`
	IterationUsed int    `json:"iteration_used,omitempty"`
}

// ExtractedPattern is a pattern a loop contributed, with its success rate
// now (failure rate for anti-patterns).
type ExtractedPattern struct {
	PatternID   string  `json:"pattern_id"`
	New         bool    `json:"new"`
	Archived    bool    `json:"archived,omitempty"`
	Restored    bool    `json:"restored,omitempty"`
	Type        string  `json:"type,omitempty"`
	SuccessRate float64 `json:"success_rate"`
}

// ImprovementEstimate is a completed loop's iterations against the
// baseline: the mean iterations of the completed loops of its category
// run without injection (none: no baseline, no improvement).
type ImprovementEstimate struct {
	BaselineIterations *float64 `json:"baseline_iterations"`
	ActualIterations   int      `json:"actual_iterations"`
	Improvement        *float64 `json:"improvement"` // percent, one decimal
}

// ShowLoop reads one loop's state; ok is false for an unknown loop.
func ShowLoop(r Reader, id string) (*LoopState, bool, error) {
	h, ok, err := loadLoopHead(r, id)
	if err != nil || !ok {
		return nil, ok, err
	}
	s := &LoopState{LoopSummary: LoopSummary{ID: h.ID, Task: h.Task, Category: h.Category, Agent: h.Agent, Started: h.Started,
		Iterations: h.count(), Outcome: h.Outcome, Completed: h.Completed, Injected: h.Injected},
		FailureMode: h.FailureMode, Injected: []InjectedPattern{}, Extracted: []ExtractedPattern{}}
	at := map[string]int{}
	for _, pid := range h.Injected {
		at[pid] = len(s.Injected)
		s.Injected = append(s.Injected, InjectedPattern{PatternID: pid, Injected: true})
	}
	for _, a := range h.Applied { // the latest application of a pattern stands
		i, seen := at[a.PatternID]
		if !seen {
			i = len(s.Injected)
			at[a.PatternID] = i
			s.Injected = append(s.Injected, InjectedPattern{PatternID: a.PatternID})
		}
		ip := &s.Injected[i]
		ip.Applied, ip.Successful, ip.IterationUsed = true, a.Success, a.Iteration
	}
	for _, e := range h.Extracted {
		ep := ExtractedPattern{PatternID: e.PatternID, New: e.New, Archived: e.Archived, Restored: e.Restored}
		if p, ok, err := loadHead(r, e.PatternID); err != nil {
			return nil, false, err
		} else if ok {
			ep.Type, ep.SuccessRate = p.Type, KeepRate(&p.Pattern)
		}
		s.Extracted = append(s.Extracted, ep)
	}
	if h.Outcome != "" {
		st, err := LoadStats(r)
		if err != nil {
			return nil, false, err
		}
		l := h.Loop
		l.NIterations = h.count()
		im := st.Impact(&l)
		s.Estimate = &ImprovementEstimate{ActualIterations: im.ActualIterations}
		if im.HasBaseline {
			b, i := im.BaselineIterations, im.Improvement
			s.Estimate.BaselineIterations, s.Estimate.Improvement = &b, &i
		}
	}
	return s, true, nil
}
