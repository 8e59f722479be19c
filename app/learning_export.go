package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// learning.export: lore's learning state in swarm-tools' record shapes
// (FeedbackEvent, DecompositionPattern, PatternMaturity, ErrorEntry of
// learning.ts, anti-patterns.ts and pattern-maturity.ts), field names and
// casing as there, times as JavaScript's toISOString writes them.

// Export formats and kinds. NB: must not change: scripts name them.
const (
	ExportFormatSwarmTools = "swarm-tools"

	ExportKindFeedback       = "feedback"
	ExportKindDecompositions = "decompositions"
	ExportKindMaturity       = "maturity"
	ExportKindErrors         = "errors"
)

// ExportKinds are the kinds learning.export writes, in output order.
var ExportKinds = []string{ExportKindFeedback, ExportKindDecompositions, ExportKindMaturity, ExportKindErrors}

// LearningExportArgs are the arguments of learning.export.
type LearningExportArgs struct {
	// Format is "swarm-tools" (the default and only format).
	Format string `json:"format,omitempty" jsonschema:"export format: swarm-tools (default)"`
	// Kind limits the export to one kind: feedback, decompositions,
	// maturity or errors; all when empty.
	Kind string `json:"kind,omitempty" jsonschema:"feedback, decompositions, maturity or errors; all when empty"`
	// Offset skips this many records of the export's order (the kinds in
	// ExportKinds order, each in its own order); Limit bounds how many are
	// returned (0: all). A large learning state is read page by page: its
	// whole export may not fit one reply.
	Offset int `json:"offset,omitempty" jsonschema:"skip this many records (the kinds in order: feedback, decompositions, maturity, errors)"`
	Limit  int `json:"limit,omitempty" jsonschema:"at most this many records (0: all)"`
}

// SwarmFeedbackEvent is swarm-tools' FeedbackEvent.
type SwarmFeedbackEvent struct {
	ID        string  `json:"id"`
	Criterion string  `json:"criterion"`
	Type      string  `json:"type"`
	Timestamp string  `json:"timestamp"`
	Context   string  `json:"context,omitempty"`
	BeadID    string  `json:"bead_id,omitempty"`
	RawValue  float64 `json:"raw_value"`
}

// SwarmDecompositionPattern is swarm-tools' DecompositionPattern.
type SwarmDecompositionPattern struct {
	ID           string   `json:"id"`
	Content      string   `json:"content"`
	Kind         string   `json:"kind"`
	IsNegative   bool     `json:"is_negative"`
	SuccessCount int      `json:"success_count"`
	FailureCount int      `json:"failure_count"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
	Reason       string   `json:"reason,omitempty"`
	Tags         []string `json:"tags"`
	ExampleBeads []string `json:"example_beads"`
}

// SwarmPatternMaturity is swarm-tools' PatternMaturity.
type SwarmPatternMaturity struct {
	PatternID     string `json:"pattern_id"`
	State         string `json:"state"`
	HelpfulCount  int    `json:"helpful_count"`
	HarmfulCount  int    `json:"harmful_count"`
	LastValidated string `json:"last_validated"`
	PromotedAt    string `json:"promoted_at,omitempty"`
	DeprecatedAt  string `json:"deprecated_at,omitempty"`
}

// SwarmErrorEntry is swarm-tools' ErrorEntry.
type SwarmErrorEntry struct {
	ID         string `json:"id"`
	BeadID     string `json:"bead_id"`
	ErrorType  string `json:"error_type"`
	Message    string `json:"message"`
	StackTrace string `json:"stack_trace,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Timestamp  string `json:"timestamp"`
	Resolved   bool   `json:"resolved"`
	Context    string `json:"context,omitempty"`
}

// LearningExport is the answer of learning.export: the records of each
// kind asked for (a kind not asked for is absent).
type LearningExport struct {
	Format         string                      `json:"format"`
	Feedback       []SwarmFeedbackEvent        `json:"feedback,omitempty"`
	Decompositions []SwarmDecompositionPattern `json:"decompositions,omitempty"`
	Maturity       []SwarmPatternMaturity      `json:"maturity,omitempty"`
	Errors         []SwarmErrorEntry           `json:"errors,omitempty"`
}

// isoTime formats t as JavaScript's Date.toISOString does.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func isoTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return isoTime(*t)
}

func init() {
	Register(Endpoint{Group: "learning", Name: "export",
		Doc:  "the learning state in swarm-tools' record shapes: FeedbackEvent, DecompositionPattern, PatternMaturity, ErrorEntry (one kind or all)",
		Args: LearningExportArgs{}, Query: learnQueryExport})
}

func learnQueryExport(_ context.Context, v View, req Request) (any, error) {
	var a LearningExportArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.Format != "" && a.Format != ExportFormatSwarmTools {
		return nil, fmt.Errorf("%w: field \"format\": %q: must be %s", ErrBadRequest, a.Format, ExportFormatSwarmTools)
	}
	want := func(k string) bool { return a.Kind == "" || a.Kind == k }
	known := false
	for _, k := range ExportKinds {
		known = known || a.Kind == k
	}
	if a.Kind != "" && !known {
		return nil, fmt.Errorf("%w: field \"kind\": %q: must be one of %v", ErrBadRequest, a.Kind, ExportKinds)
	}
	if err := checkPage(a.Offset, a.Limit); err != nil {
		return nil, err
	}
	r := v.Model(learning.ModelName)
	out := LearningExport{Format: ExportFormatSwarmTools}
	if want(ExportKindFeedback) {
		terms, err := learningModel.CriterionFeedback(r, req.Project)
		if err != nil {
			return nil, err
		}
		out.Feedback = []SwarmFeedbackEvent{}
		for _, t := range terms {
			// swarm-tools names feedback <bead>-<criterion>-<ms>; lore keeps
			// no bead per term: <criterion>-<ms>-<stream sequence>.
			out.Feedback = append(out.Feedback, SwarmFeedbackEvent{
				ID:        t.Criterion + "-" + strconv.FormatInt(t.Time.UnixMilli(), 10) + "-" + strconv.FormatUint(t.Seq, 10),
				Criterion: t.Criterion, Type: string(t.Type), Timestamp: isoTime(t.Time), RawValue: t.Value})
		}
	}
	if want(ExportKindDecompositions) || want(ExportKindMaturity) {
		ps, err := learningModel.Patterns(r, req.Project, req.Now, "")
		if err != nil {
			return nil, err
		}
		if want(ExportKindDecompositions) {
			out.Decompositions = []SwarmDecompositionPattern{}
		}
		if want(ExportKindMaturity) {
			out.Maturity = []SwarmPatternMaturity{}
		}
		for _, p := range ps {
			tags, beads := p.Tags, p.ExampleBeads
			if tags == nil {
				tags = []string{}
			}
			if beads == nil {
				beads = []string{}
			}
			if want(ExportKindDecompositions) {
				d := SwarmDecompositionPattern{ID: p.ID, Content: p.Content, Kind: "pattern", SuccessCount: p.SuccessCount,
					FailureCount: p.FailureCount, CreatedAt: isoTime(p.CreatedAt), UpdatedAt: isoTime(p.UpdatedAt), Tags: tags, ExampleBeads: beads}
				out.Decompositions = append(out.Decompositions, d)
				if p.Inverted {
					anti := d
					anti.ID, anti.Content, anti.Kind, anti.IsNegative = p.AntiPatternID, p.AntiPattern, "anti_pattern", true
					// The reason the fold keeps ends the anti-pattern's text.
					if i := strings.LastIndex(p.AntiPattern, ". Failed "); i >= 0 {
						anti.Reason = p.AntiPattern[i+2:]
					}
					if p.InvertedAt != nil {
						anti.UpdatedAt = isoTime(*p.InvertedAt)
					}
					out.Decompositions = append(out.Decompositions, anti)
				}
			}
			if want(ExportKindMaturity) {
				out.Maturity = append(out.Maturity, SwarmPatternMaturity{PatternID: p.ID, State: string(p.State),
					HelpfulCount: p.HelpfulCount, HarmfulCount: p.HarmfulCount, LastValidated: isoTime(p.LastValidated),
					PromotedAt: isoTimePtr(p.PromotedAt), DeprecatedAt: isoTimePtr(p.DeprecatedAt)})
			}
		}
	}
	if want(ExportKindErrors) {
		es, err := learningModel.Errors(r, req.Project)
		if err != nil {
			return nil, err
		}
		out.Errors = []SwarmErrorEntry{}
		for _, e := range es {
			out.Errors = append(out.Errors, SwarmErrorEntry{ID: e.ID, BeadID: e.BeadID, ErrorType: e.ErrorType, Message: e.Message,
				StackTrace: e.StackTrace, ToolName: e.ToolName, Timestamp: isoTime(e.Time), Resolved: e.Resolved, Context: e.Context})
		}
	}
	out.page(a.Offset, a.Limit)
	return out, nil
}

// Records are the export's records in its order (the JSONL lines).
func (e *LearningExport) Records() []any {
	out := make([]any, 0, len(e.Feedback)+len(e.Decompositions)+len(e.Maturity)+len(e.Errors))
	for _, r := range e.Feedback {
		out = append(out, r)
	}
	for _, r := range e.Decompositions {
		out = append(out, r)
	}
	for _, r := range e.Maturity {
		out = append(out, r)
	}
	for _, r := range e.Errors {
		out = append(out, r)
	}
	return out
}

// page keeps the records [offset, offset+limit) of the export's order
// (limit 0: to the end).
func (e *LearningExport) page(offset, limit int) {
	if offset == 0 && limit == 0 {
		return
	}
	skip, left := offset, limit
	if limit == 0 {
		left = -1
	}
	e.Feedback = pageOf(e.Feedback, &skip, &left)
	e.Decompositions = pageOf(e.Decompositions, &skip, &left)
	e.Maturity = pageOf(e.Maturity, &skip, &left)
	e.Errors = pageOf(e.Errors, &skip, &left)
}
