// Package feedbacklog is the read model of the criterion feedback events
// (the seed's FeedbackStorage: getByCriterion, getByBead): which event gave
// feedback on which criterion for which bead, in log order. An outcome
// gives one feedback event per criterion it names (outcomeToFeedback);
// explicit feedback is one event.
//
// It indexes, it does not score: the type and raw value of an outcome's
// feedback are the learning model's decision (its scoring, with the
// configuration in force), read from there when a query asks
// (learning.Model.Outcome), so the two never disagree.
package feedbacklog

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Name is the model's key prefix. NB: must not change.
const Name = "feedback"

// Key layout inside the model's prefix. NB: must not change: a change
// orphans the stored read model (bump Version instead).
//
//	c \0 project \0 criterion \0 seq(8)             an Entry (JSON)
//	b \0 project \0 bead \0 seq(8) nth(4)          the same Entry (JSON); nth: the
//	                                                 criterion's place in the outcome
const (
	kCriterion = 'c'
	kBead      = 'b'
)

// From says which kind of event gave the feedback. NB: stored.
const (
	FromOutcome  = "outcome"  // outcome.recorded/v1, scored by implicit feedback
	FromFeedback = "feedback" // feedback.recorded/v1, explicit
)

// Entry is one feedback event as stored. For an outcome, Type, RawValue and
// Context are empty: the learning model holds them (its OutcomeView).
// NB: stored (JSON): fields may be added, never renamed.
type Entry struct {
	EventID   string    `json:"event_id"`
	Seq       uint64    `json:"seq"`
	Criterion string    `json:"criterion"`
	BeadID    string    `json:"bead_id,omitempty"`
	Time      time.Time `json:"timestamp"`
	From      string    `json:"from"`
	Type      string    `json:"type,omitempty"`
	RawValue  *float64  `json:"raw_value,omitempty"`
	Context   string    `json:"context,omitempty"`
}

// Model folds outcomes and explicit feedback into the two indexes.
type Model struct{}

var (
	_ projector.TypedModel     = Model{}
	_ projector.AcceptingModel = Model{}
)

func (Model) Name() string { return Name }

// Version of the fold's output. NB: bump on any change of what is stored.
func (Model) Version() int { return 1 }

// Folds implements projector.TypedModel: outcomes and feedback.
func (Model) Folds(data events.Payload) bool {
	switch data.(type) {
	case *events.OutcomeRecorded, *events.FeedbackRecorded:
		return true
	}
	return false
}

// AcceptsEveryEvent implements projector.AcceptingModel: Fold returns only
// its Tx's errors (an entry's JSON, of strings, a finite number and a time
// within RFC 3339's years, always encodes).
func (Model) AcceptsEveryEvent() {}

// Fold indexes the feedback events ev gives.
func (Model) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	proj := ev.Project
	if proj == "" {
		proj = events.DefaultProject
	}
	switch d := data.(type) {
	case *events.OutcomeRecorded:
		// A criterion named twice is fed once, as the learning fold does.
		var seen []string
		for _, c := range d.Criteria {
			if slices.Contains(seen, c) {
				continue
			}
			seen = append(seen, c)
			if err := put(tx, proj, len(seen)-1, Entry{EventID: ev.ID, Seq: tx.Seq(), Criterion: c, BeadID: d.BeadID,
				Time: ev.Time.UTC(), From: FromOutcome}); err != nil {
				return err
			}
		}
	case *events.FeedbackRecorded:
		v := d.RawValue
		return put(tx, proj, 0, Entry{EventID: ev.ID, Seq: tx.Seq(), Criterion: d.Criterion, BeadID: d.BeadID,
			Time: ev.Time.UTC(), From: FromFeedback, Type: d.Type, RawValue: &v, Context: d.Context})
	}
	return nil
}

// put stores e in both indexes; nth is e's place among the criteria of its
// event, so a bead's entries keep the order the outcome named them in.
func put(tx projector.Tx, proj string, nth int, e Entry) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode feedback entry: %w", err)
	}
	seq := binary.BigEndian.AppendUint64(nil, e.Seq)
	if err := tx.Set(key(kCriterion, proj, e.Criterion, string(seq)), raw); err != nil {
		return err
	}
	if e.BeadID == "" {
		return nil
	}
	return tx.Set(key(kBead, proj, e.BeadID, string(binary.BigEndian.AppendUint32(seq, uint32(nth)))), raw)
}

func key(kind byte, proj string, parts ...string) []byte {
	k := []byte{kind, 0}
	k = append(k, proj...)
	for _, p := range parts {
		k = append(k, 0)
		k = append(k, p...)
	}
	return k
}

// ByCriterion returns the feedback events on criterion in project, in log
// order (getByCriterion).
func ByCriterion(r projector.Reader, proj, criterion string) ([]Entry, error) {
	return scan(r, append(key(kCriterion, proj, criterion), 0))
}

// EachByCriterion calls fn for ByCriterion's entries in order, reading
// no further once fn returns projector.ErrStopScan.
func EachByCriterion(r projector.Reader, proj, criterion string, fn func(Entry) error) error {
	return each(r, append(key(kCriterion, proj, criterion), 0), fn)
}

// EachByBead is EachByCriterion for ByBead's entries.
func EachByBead(r projector.Reader, proj, bead string, fn func(Entry) error) error {
	return each(r, append(key(kBead, proj, bead), 0), fn)
}

// ByBead returns the feedback events of bead in project, in log order
// (getByBead).
func ByBead(r projector.Reader, proj, bead string) ([]Entry, error) {
	return scan(r, append(key(kBead, proj, bead), 0))
}

func scan(r projector.Reader, prefix []byte) ([]Entry, error) {
	out := []Entry{}
	if err := each(r, prefix, func(e Entry) error { out = append(out, e); return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

func each(r projector.Reader, prefix []byte, fn func(Entry) error) error {
	err := r.Scan(prefix, func(_, v []byte) error {
		var e Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decode feedback entry: %w", err)
		}
		return fn(e)
	})
	if err != nil {
		return fmt.Errorf("read feedback: %w", err)
	}
	return nil
}
