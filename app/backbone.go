package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/eventlog"
)

func init() {
	RegisterModel(eventlog.Model{})
	Register(Endpoint{Group: "record", Name: "event", Command: recordEvents,
		Doc: "append events: args is one event envelope, or {\"events\": [envelope, ...]}; each is validated against its schema"})
	Register(Endpoint{Group: "audit", Name: "stats", Query: auditStats,
		Doc: "events folded into the read models, by type and project, and the hash chain of the log"})
	Register(Endpoint{Group: "audit", Name: "types", Query: eventTypes,
		Doc: "the event catalogue: every type, its aggregate and what it means"})
}

// RecordArgs is one event or a list of them.
type RecordArgs struct {
	Events []*events.Event `json:"events"`
}

// recordEvents returns the caller's events for the runtime to validate and
// append; the request's project and source fill the envelopes that lack them.
func recordEvents(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var probe struct {
		Events json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(req.Args, &probe); err != nil {
		return nil, nil, fmt.Errorf("%w: event: %v", ErrBadRequest, err)
	}
	var evs []*events.Event
	if probe.Events != nil {
		if err := json.Unmarshal(probe.Events, &evs); err != nil {
			return nil, nil, fmt.Errorf("%w: field \"events\": %v", ErrBadRequest, err)
		}
	} else {
		var ev events.Event
		if err := json.Unmarshal(req.Args, &ev); err != nil {
			return nil, nil, fmt.Errorf("%w: event: %v", ErrBadRequest, err)
		}
		evs = []*events.Event{&ev}
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
