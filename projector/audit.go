package projector

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// FoldRanges brings store (the state of an audit at its checkpoint, see
// AuditMark.UsableFor) to the state of the audit at target as of asOf (nil:
// no time bound): it folds, announcing nothing, the events of ranges (from
// AuditRanges over (checkpoint, target]) whose time is <= asOf, passes over
// every other sequence, and leaves the store's checkpoint at target. The
// result is the state a full Replay to target as of asOf folds. models are
// every model, or some of them: with poisoned, the refusals of the fold of
// every model over (checkpoint, target] (Store.Poisoned); with poisoned
// nil, a fold set (FoldSet), which fails with ErrForeignDuplicate where
// its fold alone cannot tell what the fold of every model gives (fold
// every model then). ids (nil: none) answers the id look-ups when store is
// a copy of another store's state at its checkpoint (Store.AuditIDs). seal
// (nil: none) verifies the messages' seals.
func FoldRanges(ctx context.Context, js jetstream.JetStream, store *Store, models []Model, ranges []SeqRange, target uint64, asOf *time.Time, poisoned map[uint64]bool, ids *AuditIDs, seal *events.Sealer) (ReplayStats, error) {
	start := time.Now()
	var stats ReplayStats
	o := ReplayOptions{Poisoned: poisoned, IDs: ids, Sealer: seal}
	if poisoned == nil {
		o.Foreign = map[uint64]bool{}
	}
	if asOf != nil {
		o.UntilTime = *asOf
	}
	if v, err := store.StoredVersion(); err != nil {
		return stats, err
	} else if v == "" {
		if err := store.Reset(FormatVersion(models), target); err != nil {
			return stats, err
		}
	}
	for _, r := range ranges {
		if r.To > target {
			r.To = target
		}
		if r.From > r.To {
			continue
		}
		if err := advance(store, models, r.From-1); err != nil {
			return stats, err
		}
		o.UntilSeq = r.To
		s, err := Replay(ctx, js, store, models, o)
		if err != nil {
			return stats, fmt.Errorf("audit fold %d..%d: %w", r.From, r.To, err)
		}
		stats.Folded += s.Folded
		stats.Skipped += s.Skipped
		stats.Poison += s.Poison
		stats.Duplicates += s.Duplicates
	}
	if err := advance(store, models, target); err != nil {
		return stats, err
	}
	stats.Seq = target
	stats.Duration = time.Since(start)
	return stats, nil
}

// FoldSet returns the models an audit of m folds with it when the
// refusals of the fold of every model are not known (an audit as of a
// time, where what a model refuses can differ from the live fold): m, and
// every model that may refuse an event of a kind one of the set folds (an
// event any model refuses leaves no trace in the others), until none is
// left. A model that is not a TypedModel folds every kind; an
// AcceptingModel joins only as m; a PureRefuser other than m joins as
// its refusals only (RefusalsOnly: its Refuses over the kinds the set's
// models fold, nothing written). The set keeps the order of models; it is
// models itself when every model is in it as itself.
//
// INVARIANT: the set, folded alone over the audit's events, refuses
// exactly the events of the kinds it folds that the fold of every model
// refuses: no model outside it folds such a kind and may refuse. The
// events of the other kinds it passes over without knowing whether they
// would be refused (ReplayOptions.Foreign).
func FoldSet(models []Model, m Model) []Model {
	kinds := events.Kinds()
	folds := make([][]bool, len(models))
	in := make([]bool, len(models))
	for i, x := range models {
		folds[i] = make([]bool, len(kinds))
		t, typed := x.(TypedModel)
		for j, k := range kinds {
			folds[i][j] = !typed || t.Folds(k.New())
		}
		in[i] = x.Name() == m.Name() // names are unique in a store (its key prefixes)
	}
	joins := func(x Model) bool {
		_, accepting := x.(AcceptingModel)
		_, pure := x.(PureRefuser)
		return !accepting && !pure
	}
	for grew := true; grew; {
		grew = false
		for i, x := range models {
			if in[i] || !joins(x) {
				continue
			}
			for j := range models {
				if in[j] && shareKind(folds[i], folds[j]) {
					in[i], grew = true, true
					break
				}
			}
		}
	}
	var set []Model
	whole := true
	for i, x := range models {
		if in[i] {
			set = append(set, x)
			continue
		}
		whole = false
		p, pure := x.(PureRefuser)
		if !pure {
			continue
		}
		// Its refusals of the kinds the set folds (a subset of the
		// set's kinds, so no other model joins for them).
		shared := map[reflect.Type]bool{}
		for j, k := range kinds {
			if !folds[i][j] {
				continue
			}
			for y := range models {
				if in[y] && folds[y][j] {
					shared[reflect.TypeOf(k.New())] = true
					break
				}
			}
		}
		if len(shared) > 0 {
			set = append(set, refusals{m: p, kinds: shared})
		}
	}
	if whole {
		return models
	}
	return set
}

// refusalsSuffix ends the name of a PureRefuser's refusals in a fold set.
const refusalsSuffix = "/refusals"

// refusals folds a PureRefuser's refusals of some of its kinds and
// nothing else (FoldSet).
type refusals struct {
	m     PureRefuser
	kinds map[reflect.Type]bool
}

func (r refusals) Name() string { return r.m.Name() + refusalsSuffix }
func (r refusals) Version() int { return r.m.Version() }
func (r refusals) Folds(data events.Payload) bool {
	return r.kinds[reflect.TypeOf(data)]
}
func (r refusals) Fold(_ Tx, ev *events.Event, data events.Payload) error {
	if !r.Folds(data) {
		return nil
	}
	return r.m.Refuses(ev, data)
}

// RefusalsOnly reports whether m, a model of a fold set (FoldSet), folds
// only another model's refusals: its read model is not folded.
func RefusalsOnly(m Model) bool {
	_, ok := m.(refusals)
	return ok
}

func shareKind(a, b []bool) bool {
	for j := range a {
		if a[j] && b[j] {
			return true
		}
	}
	return false
}

// advance moves the store's checkpoint to seq without folding anything (the
// sequences passed hold nothing the audit folds).
func advance(store *Store, models []Model, seq uint64) error {
	cp, err := store.Checkpoint()
	if err != nil || cp >= seq {
		return err
	}
	f, err := NewFolder(store, models, false)
	if err != nil {
		return err
	}
	defer f.Close()
	f.Skip(seq)
	_, err = f.Commit()
	return err
}
