package app

import (
	"context"
	"fmt"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/eventlog"
)

func init() {
	Register(Endpoint{Group: "record", Name: "event", Command: recordEvents, Args: RecordArgs{},
		Doc: "append events: args is one event envelope, or {\"events\": [envelope, ...]}; each is validated against its schema"})
	Register(Endpoint{Group: "audit", Name: "stats", Query: auditStats,
		Doc: "events folded into the read models, by type and project, and the hash chain of the log"})
	Register(Endpoint{Group: "audit", Name: "types", Query: eventTypes,
		Doc: "the event catalogue: every type, its aggregate and what it means"})
}

// RecordArgs is one event envelope, or a list of them in "events" (not
// both).
type RecordArgs struct {
	*events.Event
	Events []*events.Event `json:"events,omitempty"`
}

// recordEvents returns the caller's events for the pipeline to append (the
// appender validates each against its schema); the request's project and
// source fill the envelopes that lack them, an id is assigned to those
// without one (from the idempotency key when given).
func recordEvents(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a RecordArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	evs := a.Events
	switch {
	case a.Event != nil && a.Events != nil:
		return nil, nil, fmt.Errorf("%w: field \"events\": give one envelope or a list in events, not both", ErrBadRequest)
	case a.Event != nil:
		evs = []*events.Event{a.Event}
	}
	if len(evs) == 0 {
		return nil, nil, fmt.Errorf("%w: field \"events\": no event given", ErrBadRequest)
	}
	for i, ev := range evs {
		if ev == nil {
			return nil, nil, fmt.Errorf("%w: events[%d]: null", ErrBadRequest, i)
		}
		if ev.Project == "" {
			ev.Project = req.Project
		}
		if ev.Source == "" {
			ev.Source = req.Source
		}
		if ev.ID == "" {
			ev.ID = req.eventID(req.Now)
		}
	}
	return evs, nil, nil
}

func auditStats(_ context.Context, v View, _ Request) (any, error) {
	s, err := eventlog.Read(v.Model(eventlog.Name))
	if err != nil {
		return nil, err
	}
	return struct {
		eventlog.Stats
		Seq uint64 `json:"seq"`
	}{s, v.Seq()}, nil
}

// TypeInfo describes one kind of the catalogue.
type TypeInfo struct {
	Type      string `json:"type"`
	Aggregate string `json:"aggregate"`
	Derived   bool   `json:"derived"`
	Doc       string `json:"doc"`
}

func eventTypes(context.Context, View, Request) (any, error) {
	var out []TypeInfo
	for _, k := range events.Kinds() {
		out = append(out, TypeInfo{Type: k.Type, Aggregate: k.Aggregate, Derived: k.Derived, Doc: k.Doc})
	}
	return out, nil
}
