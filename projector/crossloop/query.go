package crossloop

import (
	"fmt"
	"sort"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/projector"
)

// ListFilter selects patterns for `patterns list`.
type ListFilter struct {
	Type           string   `json:"type,omitempty"`
	MinSuccessRate *float64 `json:"min_success_rate,omitempty"`
	MaxSuccessRate *float64 `json:"max_success_rate,omitempty"`
	FromLoop       string   `json:"from_loop,omitempty"`
	Tag            string   `json:"tag,omitempty"`
	Archived       bool     `json:"archived,omitempty"` // include archived patterns
	// Offset skips this many matching patterns of the listing's order
	// (type, then id); Limit bounds how many are returned (0: all). A
	// large registry is read page by page: its whole listing may not fit
	// one reply.
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

// Match reports whether p passes the filter (rates: success rate, failure
// rate for anti-patterns).
func (f ListFilter) Match(p *Pattern) bool {
	if p.Archived && !f.Archived {
		return false
	}
	if f.Type != "" && p.Type != f.Type {
		return false
	}
	r := KeepRate(p)
	if f.MinSuccessRate != nil && r < *f.MinSuccessRate {
		return false
	}
	if f.MaxSuccessRate != nil && r > *f.MaxSuccessRate {
		return false
	}
	if f.FromLoop != "" && !p.HasLoop(f.FromLoop) {
		return false
	}
	if f.Tag != "" {
		found := false
		for _, t := range p.Tags {
			found = found || t == f.Tag
		}
		if !found {
			return false
		}
	}
	return true
}

// List returns the patterns matching f, by type order then id.
func List(r Reader, f ListFilter) ([]*Pattern, error) {
	ps, err := AllPatterns(r, f.Match)
	if err != nil {
		return nil, err
	}
	order := map[string]int{TypeError: 0, TypeSuccess: 1, TypeAnti: 2, TypeTemplate: 3}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Type != ps[j].Type {
			return order[ps[i].Type] < order[ps[j].Type]
		}
		return ps[i].ID < ps[j].ID
	})
	ps = ps[min(f.Offset, len(ps)):]
	if f.Limit > 0 && len(ps) > f.Limit {
		ps = ps[:f.Limit]
	}
	return ps, nil
}

// LoopTask returns the task and category of loop id, from its head alone
// (not its iterations): what an injection for the loop asks. ok is false
// when there is no such loop.
func LoopTask(r Reader, id string) (task, category string, ok bool, err error) {
	h, ok, err := loadLoopHead(r, id)
	if err != nil || !ok {
		return "", "", false, err
	}
	return h.Task, h.Category, true, nil
}

// PruneCandidate is one pattern a prune would archive.
type PruneCandidate struct {
	PatternID   string    `json:"pattern_id"`
	Type        string    `json:"type"`
	Reason      string    `json:"reason"`
	SuccessRate float64   `json:"success_rate"`
	UsageCount  int       `json:"usage_count"`
	LastUsed    time.Time `json:"last_used"`
}

// PrunePlan lists the patterns to archive at now, by id, and the month.
func PrunePlan(r Reader, pol PrunePolicy, now time.Time) ([]PruneCandidate, string, error) {
	var out []PruneCandidate
	_, err := AllPatterns(r, func(p *Pattern) bool {
		if ok, why := PruneDecision(p, pol, now); ok {
			out = append(out, PruneCandidate{PatternID: p.ID, Type: p.Type, Reason: why,
				SuccessRate: KeepRate(p), UsageCount: p.UsageCount, LastUsed: p.LastUsed})
		}
		return false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].PatternID < out[j].PatternID })
	return out, ArchiveMonth(now), err
}

// ReadMetrics returns the effectiveness report.
func ReadMetrics(r Reader) (Metrics, error) {
	st, err := LoadStats(r)
	if err != nil {
		return Metrics{}, err
	}
	return ComputeMetrics(st), nil
}

// LoopImpacts returns the impact of the first limit completed loops (< 0:
// every one), by loop id.
func LoopImpacts(r Reader, limit int) ([]LoopImpact, error) {
	st, err := LoadStats(r)
	if err != nil {
		return nil, err
	}
	var out []LoopImpact
	if limit == 0 {
		return []LoopImpact{}, nil
	}
	err = r.Scan([]byte(prefLoop), func(_, v []byte) error {
		if limit > 0 && len(out) == limit {
			return projector.ErrStopScan
		}
		var h loopHead
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode loop: %w", err)
		}
		if h.Outcome != "" {
			if h.NIterations <= 0 { // the count is the number of iterations seen
				h.Iterations = make([]Iteration, len(h.Ns))
			}
			out = append(out, st.Impact(&h.Loop))
		}
		return nil
	})
	return out, err
}

// AverageImpact of a pattern: the mean, over the completed loops that
// applied it and have a baseline, of actual − baseline iterations
// (negative is fewer iterations). nil when there is none.
func AverageImpact(r Reader, p *Pattern) (*float64, error) {
	st, err := LoadStats(r)
	if err != nil {
		return nil, err
	}
	sum, n := 0.0, 0
	for _, s := range p.SourceLoops {
		if s.Role != RoleApplied {
			continue
		}
		l, ok, err := loadLoopHead(r, s.LoopID)
		if err != nil {
			return nil, err
		}
		if !ok || l.Outcome == "" {
			continue
		}
		if b, ok := st.Baseline(l.Category); ok {
			sum += float64(l.count()) - b
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	v := Round1(sum / float64(n))
	return &v, nil
}

// Export builds the root registry document of the patterns whose id
// sorts after after ("": from the first), at most limit of them (0:
// every one): a registry too large for one reply is exported in parts,
// each continuing after the last id of the one before, and MergeExports
// joins them into the document of the whole.
func Export(r Reader, after string, limit int) (*RegistryDoc, error) {
	ps, err := PatternsAfter(r, after, limit)
	if err != nil {
		return nil, err
	}
	m, err := ReadMetrics(r)
	if err != nil {
		return nil, err
	}
	return BuildExport(ps, &m)
}
