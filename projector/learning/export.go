package learning

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/loredev/lore/projector"
)

// Reads for exports: every feedback term of a project's criteria and every
// error of its beads, in key order.

// FeedbackTerm is one helpful or harmful feedback on a criterion as the
// fold keeps it (neutral feedback counts in neither sum and is kept as a
// count only).
type FeedbackTerm struct {
	Criterion string
	Type      FeedbackType
	Value     float64
	Time      time.Time
	// Seq is the stream sequence of the event that gave it.
	Seq uint64
}

// CriterionFeedback returns the feedback terms of a project's criteria,
// by criterion, then time.
func (m *Model) CriterionFeedback(r projector.Reader, proj string) ([]FeedbackTerm, error) {
	prefix := append(key(kCriterionT, proj), 0)
	var out []FeedbackTerm
	err := r.Scan(prefix, func(k, v []byte) error {
		// prefix, criterion, 0, 20 bytes of time and sequence
		if len(k) < len(prefix)+21 {
			return fmt.Errorf("feedback term key %q: too short", k)
		}
		typ, val := parseTerm(v)
		out = append(out, FeedbackTerm{Criterion: string(k[len(prefix) : len(k)-21]), Type: typ, Value: val,
			Time: termTime(k), Seq: binary.BigEndian.Uint64(k[len(k)-8:])})
		return nil
	})
	return out, err
}

// Errors returns every error of a project's beads, by bead, then
// recording order.
func (m *Model) Errors(r projector.Reader, proj string) ([]ErrorEntry, error) {
	var out []ErrorEntry
	err := r.Scan(append(key(kError, proj), 0), func(k, v []byte) error {
		var e ErrorEntry
		if err := e.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}
