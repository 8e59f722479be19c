package projector

import (
	"errors"
	"fmt"

	"github.com/loredev/lore/events"
)

// Foreign events: what a fold set (FoldSet) does with the events none of
// its models folds.

// ErrForeignDuplicate stops a fold set's fold (SetForeign) at an event its
// models fold whose id a foreign event took first: whether it folds
// depends on whether a model outside the set refused that one.
var ErrForeignDuplicate = errors.New("an event of the fold set shares its id with an earlier event of another kind, which a model outside the set may have refused")

// SetForeign makes the folder fold its models as a fold set (FoldSet)
// whose refusals of the other kinds are not known. An event none of its
// models folds is foreign: handed to no model, its id noted as any
// folded event's, its sequence added to seqs (one map across the folders
// of one fold). An event a model folds whose id a foreign event took
// first fails with ErrForeignDuplicate; every other event folds as in the
// fold of every model. Set it before the first Fold.
func (f *Folder) SetForeign(seqs map[uint64]bool) { f.foreign = seqs }

// isForeign reports whether data is an event none of the folder's models
// folds, with SetForeign on.
func (f *Folder) isForeign(data events.Payload) bool {
	if f.foreign == nil {
		return false
	}
	for _, l := range f.lanes {
		if t, ok := l.model.(TypedModel); !ok || t.Folds(data) {
			return false
		}
	}
	return true
}

// foreignFirst is ErrForeignDuplicate when ev, a duplicate of the event at
// first, is one the models fold and the event at first was foreign.
func (f *Folder) foreignFirst(ev *events.Event, data events.Payload, first uint64) error {
	if f.foreign == nil || !f.foreign[first] || f.isForeign(data) {
		return nil
	}
	return fmt.Errorf("%w: seq %d (%s) and seq %d: id %q", ErrForeignDuplicate, ev.Seq, ev.Type, first, ev.ID)
}
