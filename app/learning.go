package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// The learning systems: criterion weights, pattern maturity, anti-patterns,
// the error accumulator, and the commands that record what happened.
// Endpoints are in group "learning" (lore.api.learning.<name>).

// learningModel is the folded read model and the rules its queries use.
var learningModel = func() *learning.Model {
	m, err := learning.New(learning.DefaultConfig())
	if err != nil {
		panic(err) // the defaults are valid: a wiring bug
	}
	return m
}()

// LearningModel returns the learning read model (for tests and tools).
func LearningModel() *learning.Model { return learningModel }

func init() {
	RegisterModel(learningModel)
	q := func(name, doc string, fn QueryFunc) {
		Register(Endpoint{Group: "learning", Name: name, Doc: doc, Query: fn})
	}
	c := func(name, doc string, fn CommandFunc) {
		Register(Endpoint{Group: "learning", Name: name, Doc: doc, Command: fn})
	}
	q("weights", "criterion weights at now (decayed helpful vs harmful), optionally one criterion", learnQueryWeights)
	q("criterion", "one criterion's weight and why it is what it is", learnQueryCriterion)
	q("patterns", "decomposition patterns with their maturity at now, optionally of one state", learnQueryPatterns)
	q("pattern", "one pattern (by id or content): maturity, decayed counts, observations and why", learnQueryPattern)
	q("anti_patterns", "anti-patterns and their prompt block (formatAntiPatternsForPrompt)", learnQueryAntiPatterns)
	q("decomposition_prompt", "decomposition prompt block: patterns by maturity, proven ones, exclusions, anti-patterns", learnQueryDecomposition)
	q("error_context", "a bead's previous errors as markdown for a retry prompt", learnQueryErrorContext)
	q("error_stats", "a bead's error counts: total, unresolved, by type", learnQueryErrorStats)
	q("last_outcome", "how a bead's newest outcome was scored", learnQueryLastOutcome)
	c("record_outcome", "record how a subtask ended (scored by implicit feedback)", learnCmdRecordOutcome)
	c("record_error", "record an error met while executing a bead", learnCmdRecordError)
	c("resolve_error", "mark a recorded error resolved", learnCmdResolveError)
	c("record_feedback", "record explicit feedback on a criterion", learnCmdRecordFeedback)
	c("observe_pattern", "record that a decomposition pattern worked or not", learnCmdObservePattern)
	c("promote", "promote a pattern to proven by hand (refused for a deprecated pattern)", learnCmdPromote)
	c("deprecate", "deprecate a pattern by hand, with a reason", learnCmdDeprecate)
	c("reset", "start a pattern over as a candidate", learnCmdReset)
}

func learnProject(req Request) string {
	if req.Project == "" {
		return events.DefaultProject
	}
	return req.Project
}

func learnNow(req Request) time.Time {
	if req.Now.IsZero() {
		return time.Now().UTC()
	}
	return req.Now
}

func learnRequired(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: field %q: is required", ErrBadRequest, field)
	}
	return nil
}

// LearningWeightsArgs are the arguments of learning.weights.
type LearningWeightsArgs struct {
	Criterion string `json:"criterion,omitempty"`
}

func learnQueryWeights(_ context.Context, v View, req Request) (any, error) {
	var a LearningWeightsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	r := v.Model(learning.ModelName)
	if a.Criterion != "" {
		c, ok, err := learningModel.Criterion(r, learnProject(req), a.Criterion, learnNow(req))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: criterion %q has no feedback", ErrNotFound, a.Criterion)
		}
		return []learning.CriterionView{c}, nil
	}
	ws, err := learningModel.Weights(r, learnProject(req), learnNow(req))
	if ws == nil {
		ws = []learning.CriterionView{}
	}
	return ws, err
}

// LearningCriterionArgs are the arguments of learning.criterion.
type LearningCriterionArgs struct {
	Criterion string `json:"criterion"`
}

func learnQueryCriterion(_ context.Context, v View, req Request) (any, error) {
	var a LearningCriterionArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("criterion", a.Criterion); err != nil {
		return nil, err
	}
	c, ok, err := learningModel.Criterion(v.Model(learning.ModelName), learnProject(req), a.Criterion, learnNow(req))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: criterion %q has no feedback", ErrNotFound, a.Criterion)
	}
	return c, nil
}

// LearningPatternsArgs are the arguments of learning.patterns.
type LearningPatternsArgs struct {
	State string `json:"state,omitempty"`
}

func learnQueryPatterns(_ context.Context, v View, req Request) (any, error) {
	var a LearningPatternsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	var st learning.MaturityState
	if a.State != "" {
		s, err := learning.ParseMaturityState("state", a.State)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		st = s
	}
	ps, err := learningModel.Patterns(v.Model(learning.ModelName), learnProject(req), learnNow(req), st)
	if ps == nil {
		ps = []learning.PatternView{}
	}
	return ps, err
}

// LearningPatternArgs name a pattern by id, or by content (its id is derived).
type LearningPatternArgs struct {
	PatternID string `json:"pattern_id,omitempty"`
	Content   string `json:"content,omitempty"`
}

func (a LearningPatternArgs) ref() (string, error) {
	switch {
	case a.PatternID != "":
		return a.PatternID, nil
	case strings.TrimSpace(a.Content) != "":
		return learning.PatternID(a.Content), nil
	}
	return "", fmt.Errorf("%w: field \"pattern_id\": a pattern_id or a content is required", ErrBadRequest)
}

func learnFindPattern(v View, req Request, a LearningPatternArgs) (learning.PatternView, error) {
	id, err := a.ref()
	if err != nil {
		return learning.PatternView{}, err
	}
	p, ok, err := learningModel.Pattern(v.Model(learning.ModelName), learnProject(req), id, learnNow(req))
	if err != nil {
		return p, err
	}
	if !ok {
		return p, fmt.Errorf("%w: pattern %q", ErrNotFound, id)
	}
	return p, nil
}

func learnQueryPattern(_ context.Context, v View, req Request) (any, error) {
	var a LearningPatternArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	return learnFindPattern(v, req, a)
}

// LearningAntiPatterns is the answer of learning.anti_patterns.
type LearningAntiPatterns struct {
	Patterns []learning.Pattern `json:"patterns"`
	Text     string             `json:"text"`
}

func learnQueryAntiPatterns(_ context.Context, v View, req Request) (any, error) {
	ps, text, err := learningModel.AntiPatterns(v.Model(learning.ModelName), learnProject(req), learnNow(req))
	if ps == nil {
		ps = []learning.Pattern{}
	}
	return LearningAntiPatterns{Patterns: ps, Text: text}, err
}

func learnQueryDecomposition(_ context.Context, v View, req Request) (any, error) {
	return learningModel.Decomposition(v.Model(learning.ModelName), learnProject(req), learnNow(req))
}

// LearningBeadArgs name a bead.
type LearningBeadArgs struct {
	BeadID          string `json:"bead_id"`
	IncludeResolved bool   `json:"include_resolved,omitempty"`
}

// LearningErrorContext is the answer of learning.error_context.
type LearningErrorContext struct {
	BeadID string `json:"bead_id"`
	Text   string `json:"text"`
}

func learnQueryErrorContext(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	text, err := learningModel.ErrorContext(v.Model(learning.ModelName), learnProject(req), a.BeadID, a.IncludeResolved)
	return LearningErrorContext{BeadID: a.BeadID, Text: text}, err
}

func learnQueryErrorStats(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	return learningModel.ErrorStats(v.Model(learning.ModelName), learnProject(req), a.BeadID)
}

func learnQueryLastOutcome(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	o, err := learningModel.LastOutcome(v.Model(learning.ModelName), learnProject(req), a.BeadID)
	if err == nil && o == nil {
		return nil, fmt.Errorf("%w: bead %q has no outcome", ErrNotFound, a.BeadID)
	}
	return o, err
}

// LearningTime is the optional time of a recorded fact (writers may backfill);
// the request's now when empty.
type LearningTime struct {
	Time string `json:"time,omitempty"`
}

func (t LearningTime) at(req Request) (time.Time, error) {
	if t.Time == "" {
		return learnNow(req), nil
	}
	tm, err := learning.ParseTime("time", t.Time)
	if err != nil {
		return tm, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return tm, nil
}

// newEvent builds and validates one event; nothing is appended on error.
func learnEvent(req Request, typ string, at time.Time, p events.Payload) ([]*events.Event, error) {
	ev, err := events.New(typ, learnProject(req), req.Source, at, p)
	if err != nil {
		return nil, err
	}
	if err := events.ValidateData(typ, ev.Data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return []*events.Event{ev}, nil
}

// LearningRecorded is what a recording command returns.
type LearningRecorded struct {
	EventID string `json:"event_id"`
	Type    string `json:"type"`
	Subject string `json:"subject"`
	Time    string `json:"time"`
	// Scored is an outcome's score (record_outcome only).
	Scored *learning.Scored `json:"scored,omitempty"`
}

func learnRecorded(evs []*events.Event) LearningRecorded {
	ev := evs[0]
	return LearningRecorded{EventID: ev.ID, Type: ev.Type, Subject: ev.Subject, Time: learning.FormatTime(ev.Time)}
}

// LearningOutcomeArgs are the arguments of learning.record_outcome: the
// fields of outcome.recorded/v1 and an optional time.
type LearningOutcomeArgs struct {
	events.OutcomeRecorded
	LearningTime
}

func learnCmdRecordOutcome(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LearningOutcomeArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	o := a.OutcomeRecorded
	switch {
	case o.BeadID == "":
		return nil, nil, fmt.Errorf("%w: field \"bead_id\": is required", ErrBadRequest)
	case o.DurationMs < 0:
		return nil, nil, fmt.Errorf("%w: field \"duration_ms\": must be >= 0, got %d", ErrBadRequest, o.DurationMs)
	case o.RetryCount < 0:
		return nil, nil, fmt.Errorf("%w: field \"retry_count\": must be >= 0, got %d", ErrBadRequest, o.RetryCount)
	case o.ErrorCount != nil && *o.ErrorCount < 0:
		return nil, nil, fmt.Errorf("%w: field \"error_count\": must be >= 0, got %d", ErrBadRequest, *o.ErrorCount)
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "outcome.recorded/v1", at, &o)
	if err != nil {
		return nil, nil, err
	}
	errCount := 0
	if o.ErrorCount != nil {
		errCount = *o.ErrorCount
	} else if st, err := learningModel.ErrorStats(v.Model(learning.ModelName), learnProject(req), o.BeadID); err == nil {
		errCount = st.Total
	}
	res := learnRecorded(evs)
	sc, err := learning.ScoreImplicitFeedback(learning.Signals{BeadID: o.BeadID, DurationMs: float64(o.DurationMs),
		ErrorCount: float64(errCount), RetryCount: float64(o.RetryCount), Success: o.Success, Time: at}, at, learningModel.Config().Learning)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	res.Scored = &sc
	return evs, res, nil
}

// LearningErrorArgs are the arguments of learning.record_error.
type LearningErrorArgs struct {
	events.ErrorRecorded
	LearningTime
}

func learnCmdRecordError(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningErrorArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, nil, err
	}
	if !learning.ValidErrorType(a.ErrorType) {
		return nil, nil, fmt.Errorf("%w: field \"error_type\": %q is not one of validation, timeout, conflict, tool_failure, unknown", ErrBadRequest, a.ErrorType)
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "error.recorded/v1", at, &a.ErrorRecorded)
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// LearningResolveArgs are the arguments of learning.resolve_error; the bead
// is looked up when omitted.
type LearningResolveArgs struct {
	BeadID  string `json:"bead_id,omitempty"`
	ErrorID string `json:"error_id"`
	LearningTime
}

func learnCmdResolveError(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LearningResolveArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := learnRequired("error_id", a.ErrorID); err != nil {
		return nil, nil, err
	}
	bead, resolved, found, err := learningModel.ErrorBead(v.Model(learning.ModelName), learnProject(req), a.ErrorID)
	switch {
	case err != nil:
		return nil, nil, err
	case !found:
		return nil, nil, fmt.Errorf("%w: error %q", ErrNotFound, a.ErrorID)
	case a.BeadID != "" && a.BeadID != bead:
		return nil, nil, fmt.Errorf("%w: field \"bead_id\": error %q belongs to bead %q", ErrBadRequest, a.ErrorID, bead)
	case resolved:
		return nil, nil, fmt.Errorf("%w: error %q is already resolved", ErrConflict, a.ErrorID)
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "error.resolved/v1", at, &events.ErrorResolved{BeadID: bead, ErrorID: a.ErrorID})
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// LearningFeedbackArgs are the arguments of learning.record_feedback.
type LearningFeedbackArgs struct {
	events.FeedbackRecorded
	LearningTime
}

func learnCmdRecordFeedback(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningFeedbackArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := learnRequired("criterion", a.Criterion); err != nil {
		return nil, nil, err
	}
	if _, err := learning.ParseFeedbackType("type", a.Type); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "feedback.recorded/v1", at, &a.FeedbackRecorded)
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// LearningObserveArgs are the arguments of learning.observe_pattern.
type LearningObserveArgs struct {
	events.PatternObserved
	LearningTime
}

func learnCmdObservePattern(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningObserveArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := a.PatternObserved.Check(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "pattern.observed/v1", at, &a.PatternObserved)
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// LearningManualArgs are the arguments of promote, deprecate and reset.
type LearningManualArgs struct {
	LearningPatternArgs
	Reason string `json:"reason,omitempty"`
	LearningTime
}

func learnCmdPromote(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LearningManualArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	p, err := learnFindPattern(v, req, a.LearningPatternArgs)
	if err != nil {
		return nil, nil, err
	}
	if p.State == learning.Deprecated {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrConflict, p.ID, learning.ErrPromoteDeprecated.Error())
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "pattern.promoted/v1", at, &events.PatternPromoted{PatternID: p.ID, Reason: a.Reason})
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

func learnCmdDeprecate(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LearningManualArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := learnRequired("reason", a.Reason); err != nil {
		return nil, nil, err
	}
	p, err := learnFindPattern(v, req, a.LearningPatternArgs)
	if err != nil {
		return nil, nil, err
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "pattern.deprecated/v1", at, &events.PatternDeprecated{PatternID: p.ID, Reason: a.Reason})
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

func learnCmdReset(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LearningManualArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	p, err := learnFindPattern(v, req, a.LearningPatternArgs)
	if err != nil {
		return nil, nil, err
	}
	at, err := a.at(req)
	if err != nil {
		return nil, nil, err
	}
	evs, err := learnEvent(req, "pattern.reset/v1", at, &events.PatternReset{PatternID: p.ID, Reason: a.Reason})
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}
