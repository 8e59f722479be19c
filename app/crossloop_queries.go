package app

import (
	"context"
	"fmt"

	"github.com/loredev/lore/projector/crossloop"
)

// The registry's queries: patterns.list, .show, .metrics and .export.
// Each answer that grows with the registry takes a bound (a page, a
// number of loops, a part after a pattern id), so that a large registry
// is read in replies that fit one message.

func patternsList(_ context.Context, v View, req Request) (any, error) {
	var f crossloop.ListFilter
	if err := req.Bind(&f); err != nil {
		return nil, err
	}
	if f.Type != "" && !crossloop.ValidType(f.Type) {
		return nil, badField("type", fmt.Errorf("%q is not error, success, anti or template", f.Type))
	}
	if err := checkPage(f.Offset, f.Limit); err != nil {
		return nil, err
	}
	if err := checkRate("min_success_rate", f.MinSuccessRate); err != nil {
		return nil, err
	}
	if err := checkRate("max_success_rate", f.MaxSuccessRate); err != nil {
		return nil, err
	}
	ps, err := crossloop.List(clReader(v), f)
	if ps == nil {
		ps = []*crossloop.Pattern{}
	}
	return ps, err
}

// ShowResult is patterns.show's answer.
type ShowResult struct {
	Pattern       *crossloop.Pattern `json:"pattern"`
	AverageImpact *float64           `json:"average_impact,omitempty"`
	Maturity      string             `json:"maturity"`
	Text          string             `json:"text"`
}

func patternsShow(_ context.Context, v View, req Request) (any, error) {
	var a PatternIDArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	p, ok, err := crossloop.LoadPattern(clReader(v), a.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: pattern %q", ErrNotFound, a.ID)
	}
	imp, err := crossloop.AverageImpact(clReader(v), p)
	if err != nil {
		return nil, err
	}
	m, _ := crossloop.Maturity(p)
	return ShowResult{Pattern: p, AverageImpact: imp, Maturity: m, Text: crossloop.FormatShow(p, imp)}, nil
}

// MetricsArgs are patterns.metrics' arguments.
type MetricsArgs struct {
	// Loops bounds the per-loop impacts listed, in loop id order (absent:
	// every completed loop; 0: none, the metrics alone). A swarm's loops
	// are many: their whole list may not fit one reply.
	Loops *int `json:"loops,omitempty"`
}

func patternsMetrics(_ context.Context, v View, req Request) (any, error) {
	var a MetricsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	limit := -1
	if a.Loops != nil {
		if limit = *a.Loops; limit < 0 {
			return nil, badField("loops", errNegative)
		}
	}
	m, err := crossloop.ReadMetrics(clReader(v))
	if err != nil {
		return nil, err
	}
	loops, err := crossloop.LoopImpacts(clReader(v), limit)
	return map[string]any{"effectiveness_metrics": m, "loops": loops}, err
}

// ExportArgs are patterns.export's arguments: a part of the export, the
// patterns whose id sorts after After, at most Limit (0: every one).
type ExportArgs struct {
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

func patternsExport(_ context.Context, v View, req Request) (any, error) {
	var a ExportArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.Limit < 0 {
		return nil, badField("limit", errNegative)
	}
	return crossloop.Export(clReader(v), a.After, a.Limit)
}
