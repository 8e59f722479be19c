package app

import (
	"context"
	"encoding/json"
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
	q := func(name, doc string, args any, fn QueryFunc) {
		Register(Endpoint{Group: "learning", Name: name, Doc: doc, Args: args, Query: fn})
	}
	c := func(e Endpoint) {
		e.Group = "learning"
		Register(e)
	}
	q("weights", "criterion weights at now (decayed helpful vs harmful), optionally one criterion", LearningWeightsArgs{}, learnQueryWeights)
	q("criterion", "one criterion's weight and why it is what it is", LearningCriterionArgs{}, learnQueryCriterion)
	q("patterns", "decomposition patterns with their maturity at now, optionally of one state and with one tag", LearningPatternsArgs{}, learnQueryPatterns)
	q("pattern", "one pattern (by id or content): maturity, decayed counts, observations and why", LearningPatternArgs{}, learnQueryPattern)
	q("anti_patterns", "anti-patterns and their prompt block (formatAntiPatternsForPrompt)", nil, learnQueryAntiPatterns)
	q("decomposition_prompt", "decomposition prompt block: patterns by maturity, proven ones, exclusions, anti-patterns", nil, learnQueryDecomposition)
	q("error_context", "a bead's previous errors as markdown for a retry prompt", LearningBeadArgs{}, learnQueryErrorContext)
	q("error_stats", "a bead's error counts: total, unresolved, by type", LearningBeadIDArgs{}, learnQueryErrorStats)
	q("last_outcome", "how a bead's newest outcome was scored", LearningBeadIDArgs{}, learnQueryLastOutcome)
	q("outcome", "how the outcome appended as one event (event_id) was scored", LearningEventArgs{}, learnQueryOutcome)
	c(Endpoint{Name: "record_outcome", Doc: "record how a subtask ended (scored by implicit feedback; the reply reads back the score)",
		Args: LearningOutcomeArgs{}, Data: "outcome.recorded/v1", Extras: []string{"time"}, Command: learnCmdRecordOutcome, Reply: learnReplyOutcome})
	c(Endpoint{Name: "record_error", Doc: "record an error met while executing a bead",
		Args: LearningErrorArgs{}, Data: "error.recorded/v1", Extras: []string{"time"}, Command: learnCmdRecordError, Reply: learnReplyRecorded})
	c(Endpoint{Name: "resolve_error", Doc: "mark a recorded error resolved", Args: LearningResolveArgs{}, Command: learnCmdResolveError, Reply: learnReplyRecorded})
	c(Endpoint{Name: "record_feedback", Doc: "record explicit feedback on a criterion",
		Args: LearningFeedbackArgs{}, Data: "feedback.recorded/v1", Extras: []string{"time"}, Command: learnCmdRecordFeedback, Reply: learnReplyRecorded})
	c(Endpoint{Name: "observe_pattern", Doc: "record that a decomposition pattern worked or not",
		Args: LearningObserveArgs{}, Data: "pattern.observed/v1", Extras: []string{"time"}, Command: learnCmdObservePattern, Reply: learnReplyRecorded})
	c(Endpoint{Name: "promote", Doc: "promote a pattern to proven by hand (refused for a deprecated pattern)",
		Args: LearningManualArgs{}, Command: learnCmdPromote, Reply: learnReplyRecorded})
	c(Endpoint{Name: "deprecate", Doc: "deprecate a pattern by hand, with a reason", Args: LearningManualArgs{}, Command: learnCmdDeprecate, Reply: learnReplyRecorded})
	c(Endpoint{Name: "reset", Doc: "start a pattern over as a candidate", Args: LearningManualArgs{}, Command: learnCmdReset, Reply: learnReplyRecorded})
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
		c, ok, err := learningModel.Criterion(r, req.Project, a.Criterion, req.Now)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: criterion %q has no feedback", ErrNotFound, a.Criterion)
		}
		return []learning.CriterionView{c}, nil
	}
	ws, err := learningModel.Weights(r, req.Project, req.Now)
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
	c, ok, err := learningModel.Criterion(v.Model(learning.ModelName), req.Project, a.Criterion, req.Now)
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
	// Tag keeps the patterns carrying this tag (getByTag).
	Tag string `json:"tag,omitempty"`
	// Offset skips this many patterns of the listing's order (state, then
	// content); Limit bounds how many are returned (0: all). A project
	// with many patterns is read page by page: its whole listing may not
	// fit one reply.
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

func learnQueryPatterns(_ context.Context, v View, req Request) (any, error) {
	var a LearningPatternsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := checkPage(a.Offset, a.Limit); err != nil {
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
	var ps []learning.PatternView
	var err error
	if a.Tag != "" {
		ps, err = learningModel.PatternsByTag(v.Model(learning.ModelName), req.Project, req.Now, st, a.Tag)
	} else {
		ps, err = learningModel.Patterns(v.Model(learning.ModelName), req.Project, req.Now, st)
	}
	ps = page(ps, a.Offset, a.Limit)
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
	p, ok, err := learningModel.Pattern(v.Model(learning.ModelName), req.Project, id, req.Now)
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
	ps, text, err := learningModel.AntiPatterns(v.Model(learning.ModelName), req.Project, req.Now)
	if ps == nil {
		ps = []learning.Pattern{}
	}
	return LearningAntiPatterns{Patterns: ps, Text: text}, err
}

func learnQueryDecomposition(_ context.Context, v View, req Request) (any, error) {
	return learningModel.Decomposition(v.Model(learning.ModelName), req.Project, req.Now)
}

// LearningBeadIDArgs name a bead.
type LearningBeadIDArgs struct {
	BeadID string `json:"bead_id"`
}

// LearningBeadArgs name a bead, for its error context.
type LearningBeadArgs struct {
	LearningBeadIDArgs
	IncludeResolved bool `json:"include_resolved,omitempty"`
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
	text, err := learningModel.ErrorContext(v.Model(learning.ModelName), req.Project, a.BeadID, a.IncludeResolved)
	return LearningErrorContext{BeadID: a.BeadID, Text: text}, err
}

func learnQueryErrorStats(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadIDArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	return learningModel.ErrorStats(v.Model(learning.ModelName), req.Project, a.BeadID)
}

func learnQueryLastOutcome(_ context.Context, v View, req Request) (any, error) {
	var a LearningBeadIDArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("bead_id", a.BeadID); err != nil {
		return nil, err
	}
	o, err := learningModel.LastOutcome(v.Model(learning.ModelName), req.Project, a.BeadID)
	if err == nil && o == nil {
		return nil, fmt.Errorf("%w: bead %q has no outcome", ErrNotFound, a.BeadID)
	}
	return o, err
}

// LearningEventArgs name an appended event by its id.
type LearningEventArgs struct {
	EventID string `json:"event_id"`
}

func learnQueryOutcome(_ context.Context, v View, req Request) (any, error) {
	var a LearningEventArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := learnRequired("event_id", a.EventID); err != nil {
		return nil, err
	}
	o, ok, err := learningModel.Outcome(v.Model(learning.ModelName), req.Project, a.EventID)
	if err == nil && !ok {
		return nil, fmt.Errorf("%w: no outcome folded with event id %q in project %q", ErrNotFound, a.EventID, req.Project)
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
		return req.Now, nil
	}
	tm, err := learning.ParseTime("time", t.Time)
	if err != nil {
		return tm, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return tm, nil
}

// learnData builds the event of a command whose arguments are the event's
// data plus "time": the arguments as sent, validated by the event's schema
// once (the pipeline's check when it made it for typ, else dataEvent's).
func learnData(req Request, typ string, t LearningTime) ([]*events.Event, events.Payload, error) {
	at, err := t.at(req)
	if err != nil {
		return nil, nil, err
	}
	if req.data != nil && req.dataType == typ {
		// The pipeline checked these very fields against typ's schema.
		ev := &events.Event{Type: typ, Project: req.Project, Source: req.Source, Time: at.UTC(), Data: req.data}
		p, err := events.DecodeData(ev)
		if err != nil {
			return nil, nil, err
		}
		ev.Subject, ev.ID = p.AggregateID(), req.eventID(at)
		return []*events.Event{ev}, p, nil
	}
	data, err := req.fields("time")
	if err != nil {
		return nil, nil, err
	}
	ev, p, err := dataEvent(req, typ, req.Project, at, data)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, p, nil
}

// LearningRecorded is what a recording command returns.
type LearningRecorded struct {
	EventID string `json:"event_id"`
	Type    string `json:"type"`
	Subject string `json:"subject"`
	Time    string `json:"time"`
	// Scored is how the fold scored an outcome (record_outcome only): read
	// back from the learning model once the event is folded; absent while
	// the reply is pending.
	Scored *learning.OutcomeView `json:"scored,omitempty"`
	// Maturity is the pattern's maturity state after the fold (pattern
	// commands: observe, promote, deprecate, reset), read back at the
	// event's time.
	Maturity learning.MaturityState `json:"maturity,omitempty"`
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

func learnCmdRecordOutcome(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningOutcomeArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	evs, _, err := learnData(req, "outcome.recorded/v1", a.LearningTime)
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// learnReplyRecorded is the reply of a recording command: the stored event
// and, for a pattern, the maturity state the fold left it in.
func learnReplyRecorded(_ context.Context, v View, _ Request, evs []*events.Event, _ any) (any, error) {
	res := learnRecorded(evs)
	ev := evs[0]
	if k, ok := events.Lookup(ev.Type); ok && k.Aggregate == "pattern" {
		p, ok, err := learningModel.Pattern(v.Model(learning.ModelName), ev.Project, ev.Subject, ev.Time)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Maturity = p.State
		}
	}
	return res, nil
}

// learnReplyOutcome reads back how the fold scored the outcome.
func learnReplyOutcome(_ context.Context, v View, _ Request, evs []*events.Event, _ any) (any, error) {
	res := learnRecorded(evs)
	o, ok, err := learningModel.Outcome(v.Model(learning.ModelName), evs[0].Project, evs[0].ID)
	if err != nil {
		return nil, err
	}
	if ok {
		// The stored event's time: a retry with the same idempotency key
		// decided a new time that was never appended.
		res.Scored, res.Time = o, learning.FormatTime(o.Time)
	}
	return res, nil
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
	evs, _, err := learnData(req, "error.recorded/v1", a.LearningTime)
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
	bead, resolved, found, err := learningModel.ErrorBead(v.Model(learning.ModelName), req.Project, a.ErrorID)
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
	ev, err := req.newEvent("error.resolved/v1", req.Project, at, &events.ErrorResolved{BeadID: bead, ErrorID: a.ErrorID})
	if err != nil {
		return nil, nil, err
	}
	evs := []*events.Event{ev}
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
	evs, _, err := learnData(req, "feedback.recorded/v1", a.LearningTime)
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

// LearningObserveArgs are the arguments of learning.observe_pattern.
type LearningObserveArgs struct {
	events.PatternObserved
	LearningTime
	// checked is the observation's checked event data, when decoded as one
	// of learning.observe_patterns (LearningObservations).
	checked *observation
}

func learnCmdObservePattern(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningObserveArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	evs, _, err := learnData(req, "pattern.observed/v1", a.LearningTime)
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

// learnManual builds a manual event on the pattern the arguments name: its
// data is the pattern's id and the reason as sent (so a reason the event's
// schema requires is required here with the same error).
func learnManual(v View, req Request, typ string) (learning.PatternView, []*events.Event, error) {
	var a LearningManualArgs
	if err := req.Bind(&a); err != nil {
		return learning.PatternView{}, nil, err
	}
	at, err := a.at(req)
	if err != nil {
		return learning.PatternView{}, nil, err
	}
	sent, err := req.fields()
	if err != nil {
		return learning.PatternView{}, nil, err
	}
	data := map[string]json.RawMessage{}
	if r, ok := sent["reason"]; ok {
		data["reason"] = r
	}
	id, err := a.ref()
	if err != nil {
		return learning.PatternView{}, nil, err
	}
	if err := setDefault(data, "pattern_id", id); err != nil {
		return learning.PatternView{}, nil, err
	}
	if _, _, err := checkData(typ, data); err != nil {
		return learning.PatternView{}, nil, err
	}
	// Evaluated at the event's time, as the fold will.
	req.Now = at
	p, err := learnFindPattern(v, req, a.LearningPatternArgs)
	if err != nil {
		return p, nil, err
	}
	data["pattern_id"], _ = json.Marshal(p.ID)
	ev, _, err := dataEvent(req, typ, req.Project, at, data)
	if err != nil {
		return p, nil, err
	}
	return p, []*events.Event{ev}, nil
}

func learnCmdPromote(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	p, evs, err := learnManual(v, req, "pattern.promoted/v1")
	if err != nil {
		return nil, nil, err
	}
	// The fold's own rule, on the state it will see: a refusal is made
	// here, once, before anything is appended.
	m := learning.Maturity{PatternID: p.ID, State: p.State, Manual: p.Manual, HelpfulCount: p.HelpfulCount, HarmfulCount: p.HarmfulCount}
	if _, _, err := learning.Promote(m, "", evs[0].Source, evs[0].Time); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrConflict, p.ID, err)
	}
	return evs, learnRecorded(evs), nil
}

func learnCmdDeprecate(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	_, evs, err := learnManual(v, req, "pattern.deprecated/v1")
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}

func learnCmdReset(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	_, evs, err := learnManual(v, req, "pattern.reset/v1")
	if err != nil {
		return nil, nil, err
	}
	return evs, learnRecorded(evs), nil
}
