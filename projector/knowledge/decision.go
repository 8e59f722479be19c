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
)

// Decision is the fold's decision on one submission.
type Decision struct {
	EventID     string  `json:"event_id"`
	Outcome     string  `json:"outcome"`
	ID          string  `json:"id"`
	DuplicateOf string  `json:"duplicate_of,omitempty"`
	Layer       int     `json:"layer,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	Warnings    []Issue `json:"warnings,omitempty"`
}

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

// decide records the decision on the event being folded.
func (f *fold) decide(d Decision) error {
	d.EventID = f.ev.ID
	return putJSON(f.tx, pfxDecision+f.ev.ID, &d)
}
