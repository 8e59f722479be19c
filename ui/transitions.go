package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// A pattern's transitions are its announcements in LORE_DERIVED (maturity
// changes and its inversion), each once per cause, with the reason the
// fold gave. At an audit point only those caused by the events the audit
// counts are shown.

// maxTransitions bounds the announcements read for one pattern.
const maxTransitions = 500

func (s *Server) transitions(ctx context.Context, v view, id string) ([]transition, error) {
	if s.cfg.JS == nil {
		return nil, nil
	}
	var subjects []string
	for _, typ := range []string{"pattern.maturity_changed/v1", "pattern.inverted/v1"} {
		subj, err := events.SubjectFor(&events.Event{Type: typ, Project: v.Project, Subject: id})
		if err != nil {
			return nil, fmt.Errorf("transitions: %w", err)
		}
		subjects = append(subjects, subj)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.cfg.JS.Stream(ctx, events.DerivedStream)
	if err != nil {
		return nil, fmt.Errorf("transitions: derived stream: %w", err)
	}
	var pending uint64
	for _, subj := range subjects {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			return nil, fmt.Errorf("transitions: %w", err)
		}
		pending += info.State.Subjects[subj]
	}
	if pending == 0 {
		return nil, nil
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: subjects, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("transitions: consumer: %w", err)
	}
	var out []transition
	for read := uint64(0); read < pending && read < maxTransitions; {
		batch, err := c.Fetch(int(min(pending-read, 100)), jetstream.FetchContext(ctx))
		if err != nil {
			return out, fmt.Errorf("transitions: fetch: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			cause, _ := strconv.ParseUint(m.Headers().Get(projector.HeaderCauseSeq), 10, 64)
			ev, err := events.Decode(m.Data())
			if err != nil || (v.AtSeq > 0 && cause > v.AtSeq) || (v.AsOf != nil && ev.Time.After(*v.AsOf)) {
				continue
			}
			out = append(out, describe(ev, cause))
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return out, fmt.Errorf("transitions: fetch: %w", err)
		}
		if n == 0 {
			break
		}
		read += uint64(n)
	}
	return out, nil
}

func describe(ev *events.Event, cause uint64) transition {
	var d struct {
		From, To, Reason, Text string
		Manual                 bool
	}
	_ = json.Unmarshal(ev.Data, &d)
	what := "inverted into an anti-pattern"
	if ev.Type == "pattern.maturity_changed/v1" {
		what = fmt.Sprintf("%s → %s", orNone(d.From), d.To)
		if d.Manual {
			what += " (by hand)"
		}
	}
	if d.Reason != "" {
		what += ": " + d.Reason
	} else if d.Text != "" {
		what += ": " + d.Text
	}
	return transition{At: when(ev.Time.UTC().Format(time.RFC3339Nano)), What: fmt.Sprintf("%s (log sequence %d)", what, cause), Exact: true}
}
