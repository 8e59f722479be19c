package knowledge

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/projector"
)

// What the fold made of each submission (knowledge.submitted/v1), kept by
// event id so that a command's reply reads the fold's decision back
// instead of predicting it. NB: the key layout and JSON names must not
// change (bump Model.Version).
const pfxDecision = "d/"

// Outcomes of a submission.
const (
	OutcomeAdded      = "added"      // a new entry (ID)
	OutcomeReinforced = "reinforced" // a near-duplicate confirmed DuplicateOf
	OutcomeRejected   = "rejected"   // kept in the rejected read model (ID), with Layer and Reason
	OutcomeDropped    = "dropped"    // an imported near-duplicate of DuplicateOf, dropped as the migrator does
	OutcomeExisting   = "existing"   // the entry (ID) was imported or submitted before: nothing changed
	OutcomeDisabled   = "disabled"   // knowledge.enabled was false: nothing stored (Reason)
)

// Decision is the fold's decision on one submission, with what it caused.
type Decision struct {
	EventID     string  `json:"event_id"`
	Outcome     string  `json:"outcome"`
	ID          string  `json:"id"`
	DuplicateOf string  `json:"duplicate_of,omitempty"`
	Layer       int     `json:"layer,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	Warnings    []Issue `json:"warnings,omitempty"`
	// Promoted lists the hive promotions the submission caused (its entry,
	// or the one it reinforced, reaching a route); Archived the entries the
	// tiers' caps archived because of it.
	Promoted []Promotion `json:"promoted,omitempty"`
	Archived []string    `json:"archived,omitempty"`
}

// Promotion is one swarm entry promoted to the hive, by route.
type Promotion struct {
	HiveID  string `json:"hive_id"`
	SwarmID string `json:"swarm_id,omitempty"`
	Route   string `json:"route"`
}

// Merge says where the id of a submission that made no entry went: the
// entry it reinforced, or the one an imported near-duplicate was dropped
// for. Kept under m/<id> so that the id can still be looked up.
type Merge struct {
	ID      string `json:"id"`
	Into    string `json:"into"`
	EventID string `json:"event_id"`
	Outcome string `json:"outcome"` // reinforced | dropped
}

const pfxMerged = "m/"

// DecisionOf returns the fold's decision on the submission appended as
// event eventID (ok false until that event is folded).
func DecisionOf(r projector.Reader, eventID string) (d *Decision, ok bool, err error) {
	raw, ok, err := r.Get([]byte(pfxDecision + eventID))
	if err != nil || !ok {
		return nil, false, err
	}
	d = new(Decision)
	if err := json.Unmarshal(raw, d); err != nil {
		return nil, false, fmt.Errorf("knowledge: decode decision of %s: %w", eventID, err)
	}
	return d, true, nil
}

// MergedInto returns where the id (or unique id prefix) of a merged
// submission went (ok false when no merged id matches; ErrAmbiguous when a
// prefix matches several).
func MergedInto(r projector.Reader, idOrPrefix string) (m *Merge, ok bool, err error) {
	if idOrPrefix == "" {
		return nil, false, nil
	}
	var vals [][]byte
	err = r.Scan([]byte(pfxMerged+idOrPrefix), func(_, v []byte) error {
		vals = append(vals, append([]byte(nil), v...))
		if len(vals) > 1 {
			return projector.ErrStopScan
		}
		return nil
	})
	if err != nil || len(vals) == 0 {
		return nil, false, err
	}
	m = new(Merge)
	if err := json.Unmarshal(vals[0], m); err != nil {
		return nil, false, fmt.Errorf("knowledge: decode merge of %s: %w", idOrPrefix, err)
	}
	if len(vals) > 1 && m.ID != idOrPrefix {
		return nil, false, fmt.Errorf("%w: %q matches several merged ids", ErrAmbiguous, idOrPrefix)
	}
	return m, true, nil
}

// decide records the decision on the event being folded; what the event
// causes afterwards is added to it when the fold ends (flushDecision).
func (f *fold) decide(d Decision) error {
	d.EventID = f.ev.ID
	f.decision = &d
	if (d.Outcome == OutcomeReinforced || d.Outcome == OutcomeDropped) && d.ID != "" && d.ID != d.DuplicateOf {
		return putJSON(f.tx, pfxMerged+d.ID, &Merge{ID: d.ID, Into: d.DuplicateOf, EventID: f.ev.ID, Outcome: d.Outcome})
	}
	return nil
}

// flushDecision stores the decision of the event folded, if it made one.
func (f *fold) flushDecision() error {
	if f.decision == nil {
		return nil
	}
	f.decision.Promoted, f.decision.Archived = f.caused, f.archived
	return putJSON(f.tx, pfxDecision+f.ev.ID, f.decision)
}
