// Package imported is the read model of imports: the ids of the events
// importers appended (ids starting with "imp-"), so that an importer asks,
// before appending, whether a source row was imported already, whatever
// read model the row's event went to and whatever that model made of it
// (folded, rejected, merged).
package imported

import (
	"encoding/binary"
	"strings"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Name is the model's key prefix. NB: must not change.
const Name = "imported"

// Prefix starts the id of every event an importer appends; only those are
// indexed. NB: must not change: stored ids carry it.
const Prefix = "imp-"

// Model indexes imported event ids: <event id> → stream sequence (uint64 BE).
//
// INVARIANT: the index holds the id of every folded event whose id starts
// with Prefix, and nothing else.
type Model struct{}

var _ projector.AcceptingModel = Model{}

func (Model) Name() string { return Name }
func (Model) Version() int { return 1 }

// AcceptsEveryEvent implements projector.AcceptingModel: Fold returns
// its Tx's errors only.
func (Model) AcceptsEveryEvent() {}

// Fold records an imported event's id.
func (Model) Fold(tx projector.Tx, ev *events.Event, _ events.Payload) error {
	if !strings.HasPrefix(ev.ID, Prefix) {
		return nil
	}
	return tx.Set([]byte(ev.ID), binary.BigEndian.AppendUint64(nil, tx.Seq()))
}

// Has reports whether an event with id was imported (folded).
func Has(r projector.Reader, id string) (bool, error) {
	_, ok, err := r.Get([]byte(id))
	return ok, err
}
