package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/eventlog"
)

// The log itself, read back: the API's `lore events tail`. The answer is
// read from the log stream (not a read model), so only a live view answers.

func init() {
	Register(Endpoint{Group: "events", Name: "tail", Args: EventsTailArgs{}, Query: eventsTail,
		Doc: "events of the log: the last N that pass the filters (types, project), or the first N from a sequence on (live only)"})
}

// MaxTail bounds the events one events.tail answer carries.
const MaxTail = 1000

// EventsTailArgs are the arguments of events.tail. The filters apply
// before the count: the last N events of the wanted types and project.
type EventsTailArgs struct {
	// Last is how many matching events to return, the newest (0: 20;
	// at most MaxTail). Ignored with FromSeq.
	Last int `json:"last,omitempty"`
	// FromSeq, when > 0, returns the first Limit matching events from this
	// stream sequence on; the answer's next_seq continues after them.
	FromSeq uint64 `json:"from_seq,omitempty"`
	// Limit bounds a FromSeq answer (0: MaxTail; at most MaxTail).
	Limit int `json:"limit,omitempty"`
	// Types keeps only these event types (short or versioned names).
	Types []string `json:"types,omitempty"`
	// Project keeps only this project's events ("": every project, as
	// `lore events tail` without --project).
	Project string `json:"project,omitempty"`
}

// TailEntry is one event of the log with its stream sequence; Error is set
// (and Event empty) when the stored message does not decode.
type TailEntry struct {
	Seq   uint64        `json:"seq"`
	Event *events.Event `json:"event,omitempty"`
	Error string        `json:"error,omitempty"`
}

// EventsTail is the answer of events.tail.
type EventsTail struct {
	Events []TailEntry `json:"events"`
	// NextSeq is where a follower continues: after the last sequence read.
	NextSeq uint64 `json:"next_seq"`
}

// TailView is a view that reads the log stream (the live view).
type TailView interface {
	View
	Tail(ctx context.Context, q eventlog.TailQuery) ([]eventlog.Entry, uint64, error)
}

func eventsTail(ctx context.Context, v View, req Request) (any, error) {
	var a EventsTailArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	switch {
	case a.Last < 0 || a.Last > MaxTail:
		return nil, badField("last", fmt.Errorf("must be between 0 and %d", MaxTail))
	case a.Limit < 0 || a.Limit > MaxTail:
		return nil, badField("limit", fmt.Errorf("must be between 0 and %d", MaxTail))
	case a.Limit > 0 && a.FromSeq == 0:
		return nil, badField("limit", errors.New("applies with from_seq only (use last)"))
	}
	q := eventlog.TailQuery{Last: a.Last, FromSeq: a.FromSeq, Max: a.Limit, Project: a.Project}
	if q.Last == 0 {
		q.Last = 20
	}
	if q.FromSeq > 0 && q.Max == 0 {
		q.Max = MaxTail
	}
	for _, t := range a.Types {
		r, ok := events.ResolveType(t)
		if !ok {
			return nil, badField("types", fmt.Errorf("unknown event type %q", t))
		}
		q.Types = append(q.Types, r)
	}
	tv, ok := v.(TailView)
	if !ok {
		return nil, fmt.Errorf("%w: events.tail reads the live log: as_of/at_seq do not apply", ErrBadRequest)
	}
	got, last, err := tv.Tail(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("events tail: %w", err)
	}
	out := EventsTail{Events: make([]TailEntry, 0, len(got)), NextSeq: last + 1}
	for _, e := range got {
		te := TailEntry{Seq: e.Seq, Event: e.Event}
		if e.Err != nil {
			te.Error = e.Err.Error()
		}
		out.Events = append(out.Events, te)
	}
	return out, nil
}
