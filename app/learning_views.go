package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/feedbacklog"
	"github.com/loredev/lore/projector/learning"
)

// Views of the learning systems a user of the seed's storage interfaces
// expects: feedback events by criterion and by bead (FeedbackStorage), a
// bead's raw error entries (ErrorStorage), and the standalone strategy
// extraction (extractPatternsFromDescription). Patterns by tag
// (PatternStorage.getByTag) is learning.patterns' "tag" argument.

func init() {
	q := func(name, doc string, args any, fn QueryFunc) {
		Register(Endpoint{Group: "learning", Name: name, Doc: doc, Args: args, Query: fn})
	}
	q("feedback_by_criterion", "feedback events on a criterion, in log order: each outcome naming it and each explicit feedback (getByCriterion)",
		LearningCriterionFeedbackArgs{}, learnQueryFeedbackByCriterion)
	q("feedback_by_bead", "feedback events of a bead, in log order: one per criterion its outcomes named, and its explicit feedback (getByBead)",
		LearningBeadFeedbackArgs{}, learnQueryFeedbackByBead)
	q("errors", "a bead's raw error entries with their ids, in recording order (getByBead; unresolved: getUnresolvedByBead)",
		LearningErrorsArgs{}, learnQueryErrors)
	q("extract", "the strategies extractPatternsFromDescription detects in a text, with their pattern ids (a pure query: nothing is recorded)",
		LearningExtractArgs{}, learnQueryExtract)
}

// FeedbackEvent is one feedback event in the seed's FeedbackEvent shape,
// with the event that carried it. An outcome gives one per criterion it
// names: id "<event id>:<criterion>", type and raw_value its score (the
// learning model's), context its reasoning (outcomeToFeedback). Explicit
// feedback: id is its event id.
type FeedbackEvent struct {
	ID        string    `json:"id"`
	Criterion string    `json:"criterion"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Context   string    `json:"context,omitempty"`
	BeadID    string    `json:"bead_id,omitempty"`
	RawValue  float64   `json:"raw_value"`
	EventID   string    `json:"event_id"`
	Seq       uint64    `json:"seq"`
	// From is "outcome" (implicit feedback) or "feedback" (explicit).
	From string `json:"from"`
}

// FeedbackPage pages a feedback listing: Offset skips this many feedback
// events of the log order, Limit bounds how many are returned (0: all). A
// long log's feedback may not fit one reply.
type FeedbackPage struct {
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

// LearningCriterionFeedbackArgs are the arguments of
// learning.feedback_by_criterion.
type LearningCriterionFeedbackArgs struct {
	Criterion string `json:"criterion"`
	FeedbackPage
}

// LearningBeadFeedbackArgs are the arguments of learning.feedback_by_bead.
type LearningBeadFeedbackArgs struct {
	BeadID string `json:"bead_id"`
	FeedbackPage
}

// learnFeedbackPage joins the index entries each reads with the learning
// model's scores, from the offset-th feedback event on, at most limit of
// them; the index is read no further than the page.
func learnFeedbackPage(v View, proj string, offset, limit int, each func(fn func(feedbacklog.Entry) error) error) ([]FeedbackEvent, error) {
	if err := checkPage(offset, limit); err != nil {
		return nil, err
	}
	r := v.Model(learning.ModelName)
	out := []FeedbackEvent{}
	err := each(func(e feedbacklog.Entry) error {
		fe := FeedbackEvent{ID: e.EventID, Criterion: e.Criterion, Type: e.Type, Timestamp: e.Time, Context: e.Context,
			BeadID: e.BeadID, EventID: e.EventID, Seq: e.Seq, From: e.From}
		if e.RawValue != nil {
			fe.RawValue = *e.RawValue
		}
		if e.From == feedbacklog.FromOutcome {
			o, ok, err := learningModel.Outcome(r, proj, e.EventID)
			if err != nil {
				return err
			}
			if !ok {
				// The learning model refused the outcome (poison): it gave
				// no feedback.
				return nil
			}
			fe.ID = e.EventID + ":" + e.Criterion
			fe.Type, fe.RawValue, fe.Context = string(o.Type), o.Raw, o.Reasoning
		}
		if offset > 0 {
			offset--
			return nil
		}
		out = append(out, fe)
		if limit > 0 && len(out) == limit {
			return projector.ErrStopScan
		}
		return nil
	})
	return out, err
}

func learnQueryFeedbackByCriterion(_ context.Context, v View, req Request) (any, error) {
	var a LearningCriterionFeedbackArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("criterion", a.Criterion); err != nil {
		return nil, err
	}
	return learnFeedbackPage(v, req.Project, a.Offset, a.Limit, func(fn func(feedbacklog.Entry) error) error {
		return feedbacklog.EachByCriterion(v.Model(feedbacklog.Name), req.Project, a.Criterion, fn)
	})
}

func learnQueryFeedbackByBead(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadFeedbackArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	return learnFeedbackPage(v, req.Project, a.Offset, a.Limit, func(fn func(feedbacklog.Entry) error) error {
		return feedbacklog.EachByBead(v.Model(feedbacklog.Name), req.Project, a.BeadID, fn)
	})
}

// LearningErrorsArgs are the arguments of learning.errors.
type LearningErrorsArgs struct {
	BeadID string `json:"bead_id"`
	// Unresolved keeps only the errors not resolved (getUnresolvedByBead).
	Unresolved bool `json:"unresolved,omitempty"`
}

func learnQueryErrors(_ context.Context, v View, req Request) (any, error) {
	var a LearningErrorsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	return learningModel.BeadErrorEntries(v.Model(learning.ModelName), req.Project, a.BeadID, a.Unresolved)
}

// LearningExtractArgs are the arguments of learning.extract.
type LearningExtractArgs struct {
	Text string `json:"text"`
}

// LearningExtracted is learning.extract's answer: the strategies detected,
// in the table's order, and the pattern id each is recorded under.
type LearningExtracted struct {
	Patterns   []string `json:"patterns"`
	PatternIDs []string `json:"pattern_ids"`
}

func learnQueryExtract(_ context.Context, _ View, req Request) (any, error) {
	var a LearningExtractArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Text) == "" {
		return nil, fmt.Errorf("%w: field \"text\": is required", ErrBadRequest)
	}
	out := LearningExtracted{Patterns: learning.ExtractPatternsFromDescription(a.Text), PatternIDs: []string{}}
	for _, p := range out.Patterns {
		out.PatternIDs = append(out.PatternIDs, learning.PatternID(p))
	}
	return out, nil
}
