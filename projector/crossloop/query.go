package crossloop

import (
	"fmt"
	"slices"
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

// Match reports whether p (whole) passes the filter (rates: success rate,
// failure rate for anti-patterns).
func (f ListFilter) Match(p *Pattern) bool {
	ok, _ := f.match(p, func(loopID string) (bool, error) { return p.HasLoop(loopID), nil })
	return ok
}

// match is Match with the lineage asked of hasLoop (a head's lineage is
// not in it: its member keys are).
func (f ListFilter) match(p *Pattern, hasLoop func(loopID string) (bool, error)) (bool, error) {
	if p.Archived && !f.Archived {
		return false, nil
	}
	if f.Type != "" && p.Type != f.Type {
		return false, nil
	}
	r := KeepRate(p)
	if f.MinSuccessRate != nil && r < *f.MinSuccessRate {
		return false, nil
	}
	if f.MaxSuccessRate != nil && r > *f.MaxSuccessRate {
		return false, nil
	}
	if f.Tag != "" && !slices.Contains(p.Tags, f.Tag) {
		return false, nil
	}
	if f.FromLoop != "" {
		return hasLoop(f.FromLoop)
	}
	return true, nil
}

// List returns the patterns matching f, by type order then id, from
// Offset, at most Limit. The heads alone are read and filtered (the
// lineage through its member keys); only the patterns returned are read
// whole, so a page of a large registry costs its heads, not every
// pattern's trend and lineage.
func List(r Reader, f ListFilter) ([]*Pattern, error) {
	type listed struct {
		id, typ string
	}
	var ls []listed
	err := r.Scan([]byte(prefPattern), func(_, v []byte) error {
		var h patternHead
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode pattern: %w", err)
		}
		ok, err := f.match(&h.Pattern, func(loopID string) (bool, error) { return hasLoop(r, &h, loopID) })
		if ok {
			ls = append(ls, listed{id: h.ID, typ: h.Type})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	order := map[string]int{TypeError: 0, TypeSuccess: 1, TypeAnti: 2, TypeTemplate: 3}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].typ != ls[j].typ {
			return order[ls[i].typ] < order[ls[j].typ]
		}
		return ls[i].id < ls[j].id
	})
	ls = ls[min(f.Offset, len(ls)):]
	if f.Limit > 0 && len(ls) > f.Limit {
		ls = ls[:f.Limit]
	}
	ps := make([]*Pattern, 0, len(ls))
	for _, l := range ls {
		p, ok, err := LoadPattern(r, l.id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("listed pattern %s has no record", l.id)
		}
		ps = append(ps, p)
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
