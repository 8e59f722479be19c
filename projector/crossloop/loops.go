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
