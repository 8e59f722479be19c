package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// learning.observe_patterns: many pattern observations in one request. Each
// observation is what learning.observe_pattern takes and is checked by the
// same rules in the same order (unknown keys, the event's schema, then the
// values); an error names the observation's index and nothing is appended.
// The observations become one pattern.observations/v1 event per run of
// observations of one pattern made at the same time, so a request of n
// observations costs one round trip and a message per run instead of n.

// MaxObservationsPerRequest bounds one learning.observe_patterns request:
// the reply lists where each event was stored, and a NATS message is 1 MiB
// by default.
const MaxObservationsPerRequest = 1000

func init() {
	Register(Endpoint{Group: "learning", Name: "observe_patterns",
		Doc:  fmt.Sprintf("record many pattern observations in one request (1-%d; each as in observe_pattern; the reply reads back each pattern's maturity)", MaxObservationsPerRequest),
		Args: LearningObserveBatchArgs{}, Command: learnCmdObservePatterns, Reply: learnReplyObservedBatch})
}

// LearningObserveBatchArgs are the arguments of learning.observe_patterns.
type LearningObserveBatchArgs struct {
	Observations LearningObservations `json:"observations"`
}

// LearningObservations are the observations of one request. Decoding checks
// each as learning.observe_pattern checks its arguments (observeArgs).
type LearningObservations []LearningObserveArgs

// observation is one observation's checked form: its event data as the
// schema check returned it (credentials redacted) and its aggregate id.
type observation struct {
	data    json.RawMessage
	subject string
}

// UnmarshalJSON decodes a list of observations, each checked by observeArgs
// (identical observations are checked once: the check is a pure function
// of the bytes). An error names the index of the first bad observation.
func (l *LearningObservations) UnmarshalJSON(raw []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("field \"observations\": must be a list of observation objects: %v", err)
	}
	if len(items) > MaxObservationsPerRequest { // before checking any
		return fmt.Errorf("field \"observations\": %d observations, at most %d per request", len(items), MaxObservationsPerRequest)
	}
	out := make(LearningObservations, len(items))
	seen := make(map[string]int, 4)
	for i, item := range items {
		item = bytes.TrimSpace(item)
		if j, ok := seen[string(item)]; ok {
			out[i] = out[j]
			continue
		}
		a, err := observeArgs(item)
		if err != nil {
			// DecodeStrict marks it a bad request (400, exit code 2).
			return fmt.Errorf("observations[%d]: %s", i, strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": arguments: "))
		}
		out[i] = a
		seen[string(item)] = i
	}
	*l = out
	return nil
}

var observeArgsType = reflect.TypeFor[LearningObserveArgs]()

// observeArgs checks one observation as the pipeline checks the arguments
// of learning.observe_pattern: keys first (an unknown key is named whatever
// else is wrong), then the event data (all but "time") against the
// pattern.observed/v1 schema, then the values (the time last).
func observeArgs(raw json.RawMessage) (LearningObserveArgs, error) {
	var a LearningObserveArgs
	if err := checkKeys(raw, observeArgsType, "arguments"); err != nil {
		return a, err
	}
	data, err := Request{Args: raw}.fields("time")
	if err != nil {
		return a, err
	}
	checked, _, err := checkData("pattern.observed/v1", data)
	if err != nil {
		return a, err
	}
	if err := decodeValues(raw, &a, "arguments"); err != nil { // keys checked above
		return a, err
	}
	if _, err := a.at(Request{}); err != nil {
		return a, err
	}
	p, err := events.DecodeData(&events.Event{Type: "pattern.observed/v1", Data: checked})
	if err != nil {
		return a, err
	}
	a.checked = &observation{data: checked, subject: p.AggregateID()}
	return a, nil
}

// LearningObservedBatch is the result of learning.observe_patterns.
type LearningObservedBatch struct {
	// Observed is the number of observations recorded.
	Observed int `json:"observed"`
	// Patterns are the patterns observed, in the order of their first
	// observation in the request.
	Patterns []LearningObservedPattern `json:"patterns"`
}

// LearningObservedPattern is what one request recorded about one pattern.
type LearningObservedPattern struct {
	PatternID string `json:"pattern_id"`
	// Successes and Failures count this request's observations.
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	// Maturity is the pattern's maturity state after the fold, read back at
	// the time of its newest observation in the request; absent while the
	// reply is pending.
	Maturity learning.MaturityState `json:"maturity,omitempty"`
}

func learnCmdObservePatterns(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningObserveBatchArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	switch n := len(a.Observations); {
	case n == 0:
		return nil, nil, fmt.Errorf("%w: field \"observations\": give at least one observation", ErrBadRequest)
	case n > MaxObservationsPerRequest:
		return nil, nil, fmt.Errorf("%w: field \"observations\": %d observations, at most %d per request", ErrBadRequest, n, MaxObservationsPerRequest)
	}
	// One pattern.observations/v1 per run of observations of one pattern
	// made at the same time (each holds at most
	// events.MaxObservationsPerEvent; its subject is that pattern): the log
	// carries them in request order, and the fold applies them as the same
	// observations sent one by one.
	var evs []*events.Event
	var items []json.RawMessage
	var first string // the first item's pattern: the event's subject
	var last time.Time
	flush := func() {
		if len(items) == 0 {
			return
		}
		size := len(`{"observations":[]}`) + len(items)
		for _, it := range items {
			size += len(it)
		}
		data := make([]byte, 0, size)
		data = append(data, `{"observations":[`...)
		for i, it := range items {
			if i > 0 {
				data = append(data, ',')
			}
			data = append(data, it...)
		}
		data = append(data, "]}"...)
		evs = append(evs, &events.Event{ID: req.eventID(last), Type: "pattern.observations/v1", Project: req.Project,
			Source: req.Source, Subject: first, Time: last, Data: data})
		items = items[:0]
	}
	for i, o := range a.Observations {
		at, err := o.at(req) // checked by observeArgs
		if err != nil {
			return nil, nil, fmt.Errorf("%w: observations[%d]: %s", ErrBadRequest, i, strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": "))
		}
		if o.checked == nil {
			return nil, nil, fmt.Errorf("%w: observations[%d] was not decoded by LearningObservations", errWiring, i)
		}
		at = at.UTC()
		if len(items) > 0 && (!at.Equal(last) || o.checked.subject != first || len(items) == events.MaxObservationsPerEvent) {
			flush()
		}
		if len(items) == 0 {
			first = o.checked.subject
		}
		items = append(items, o.checked.data)
		last = at
	}
	flush()
	sum := make([]observedItem, len(a.Observations))
	for i, o := range a.Observations {
		sum[i] = observedItem{pattern: o.checked.subject, success: o.Success}
	}
	return evs, sumObserved(sum), nil
}

// observedItem is one observation of a request's events, with its time.
type observedItem struct {
	pattern string
	success bool
	at      time.Time
}

// observedItems lists the observations of a request's events in order:
// pattern.observations/v1 items (stored by this request or, under its
// idempotency key, by an earlier one) and single pattern.observed/v1.
func observedItems(evs []*events.Event) ([]observedItem, error) {
	var out []observedItem
	ids := map[[2]string]string{} // pattern id or content → pattern id
	add := func(o *events.PatternObserved, at time.Time) {
		k := [2]string{o.PatternID, o.Content}
		id, ok := ids[k]
		if !ok {
			id = o.AggregateID()
			ids[k] = id
		}
		out = append(out, observedItem{pattern: id, success: o.Success, at: at})
	}
	for _, ev := range evs {
		p, err := events.DecodeData(ev)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", ev.ID, err)
		}
		switch d := p.(type) {
		case *events.PatternObservations:
			for i := range d.Observations {
				add(&d.Observations[i], ev.Time)
			}
		case *events.PatternObserved:
			add(d, ev.Time)
		}
	}
	return out, nil
}

// sumObserved sums a request's observations by pattern.
func sumObserved(items []observedItem) LearningObservedBatch {
	out := LearningObservedBatch{Observed: len(items), Patterns: []LearningObservedPattern{}}
	at := map[string]int{}
	for _, it := range items {
		i, found := at[it.pattern]
		if !found {
			i = len(out.Patterns)
			at[it.pattern] = i
			out.Patterns = append(out.Patterns, LearningObservedPattern{PatternID: it.pattern})
		}
		if it.success {
			out.Patterns[i].Successes++
		} else {
			out.Patterns[i].Failures++
		}
	}
	return out
}

// learnReplyObservedBatch reads back each pattern's maturity after the fold
// (for the stored events: a retry with the same idempotency key answers
// for what was stored).
func learnReplyObservedBatch(_ context.Context, v View, _ Request, evs []*events.Event, _ any) (any, error) {
	items, err := observedItems(evs)
	if err != nil {
		return nil, err
	}
	res := sumObserved(items)
	newest := map[string]time.Time{}
	for _, it := range items {
		if n, ok := newest[it.pattern]; !ok || it.at.After(n) {
			newest[it.pattern] = it.at
		}
	}
	project := events.DefaultProject
	if len(evs) > 0 && evs[0].Project != "" {
		project = evs[0].Project
	}
	r := v.Model(learning.ModelName)
	for i, p := range res.Patterns {
		pv, ok, err := learningModel.Pattern(r, project, p.PatternID, newest[p.PatternID])
		if err != nil {
			return nil, err
		}
		if ok {
			res.Patterns[i].Maturity = pv.State
		}
	}
	return res, nil
}
