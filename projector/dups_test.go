package projector

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/loredev/lore/events"
)

// dupLog is foldSetLog with a sixth of the events given the id of an
// earlier one (of any kind, refused or not, a few more than once): half
// of them one of the 20 before it (in the same batch, or on either side
// of an audit's time), half any.
func dupLog(t *testing.T, n int) []*events.Event {
	t.Helper()
	evs := foldSetLog(t, n)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 1; i < len(evs); i++ {
		switch rng.IntN(12) {
		case 0:
			evs[i].ID = evs[i-1-rng.IntN(min(i, 20))].ID
		case 1:
			evs[i].ID = evs[rng.IntN(i)].ID
		}
	}
	return evs
}

// foldOnto folds ms into st over the events of evs after its checkpoint
// (those later than asOf, when set, passed over), committing every 16
// sequences; foreign and ids as Replay's options; parallel folds in lanes.
func foldOnto(t *testing.T, st *Store, ms []Model, evs []*events.Event, asOf *time.Time, foreign map[uint64]bool, ids *AuditIDs, parallel bool) error {
	t.Helper()
	f, err := NewFolder(st, ms, false)
	if err != nil {
		t.Fatal(err)
	}
	f.SetForeign(foreign)
	f.SetAuditIDs(ids)
	if parallel {
		f.Parallel()
	}
	defer f.Close()
	for i, ev := range evs {
		if asOf != nil && ev.Time.After(*asOf) {
			f.Skip(ev.Seq)
		} else if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
			return err
		}
		if i%16 == 15 || i == len(evs)-1 {
			if _, err := f.Settle(); err != nil {
				return err
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return nil
}

func memStore(t *testing.T) *Store {
	t.Helper()
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// prefixed returns the keys of st with prefix and their values.
func prefixed(t *testing.T, st *Store, prefix string) map[string]string {
	t.Helper()
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: prefixEnd([]byte(prefix))})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	return out
}

// TestDuplicateIndexNamesWhatTheFoldPassedOver: the index of a fold in
// lanes, where a lane's refusal makes Settle decide again which copy of
// an id folds, is the index of the fold model after model, and names
// every duplicate the folder counted.
func TestDuplicateIndexNamesWhatTheFoldPassedOver(t *testing.T) {
	models := foldSetModels()
	evs := dupLog(t, 400)
	lanes, inline := memStore(t), memStore(t)
	if err := foldOnto(t, lanes, models, evs, nil, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if err := foldOnto(t, inline, models, evs, nil, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	got, want := prefixed(t, lanes, sysDup), prefixed(t, inline, sysDup)
	if !maps.Equal(got, want) {
		t.Fatalf("duplicate index in lanes (%d entries) differs from model after model (%d)", len(got), len(want))
	}
	// A copy of a refused event's id folds: the index does not name it.
	refusedFirst := 0
	ids := prefixed(t, inline, sysEventID)
	for _, ev := range evs {
		if _, dup := want[dupKey(ev.Seq)]; dup {
			continue
		}
		if ids[eventIDKey(ev.ID)] == string(u64(ev.Seq)) && ev != firstWithID(evs, ev.ID) {
			refusedFirst++
		}
	}
	if len(want) < 20 || refusedFirst == 0 {
		t.Fatalf("the case tests little: %d duplicates, %d copies folded after a refused first", len(want), refusedFirst)
	}
}

func firstWithID(evs []*events.Event, id string) *events.Event {
	for _, ev := range evs {
		if ev.ID == id {
			return ev
		}
	}
	return nil
}

// TestAuditIDsFoldAsTheCopysIndex: a copy of the live state at P folded on
// to a target, as of a time, every model or a fold set, reaches the same
// state (and the same ErrForeignDuplicate) with its id look-ups answered
// by the live store's duplicate index (AuditIDs) as with its own index.
func TestAuditIDsFoldAsTheCopysIndex(t *testing.T) {
	models := foldSetModels()
	evs := dupLog(t, 400)
	live := memStore(t)
	if err := foldOnto(t, live, models, evs, nil, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	first := evs[0].Time
	rng := rand.New(rand.NewPCG(13, 17))
	crossing := 0 // audits where a duplicate's first copy is at or before P
	for k := range 24 {
		p := uint64(rng.IntN(len(evs) - 40))
		if k == 0 {
			p = 0 // from the empty store
		}
		target := p + 20 + uint64(rng.IntN(len(evs)-int(p)-20))
		var asOf *time.Time
		if k%3 != 0 {
			at := first.Add(time.Duration(p) * time.Second).Add(time.Duration(rng.IntN(int(target-p))) * time.Second)
			asOf = &at
		}
		set := models
		var foreign map[uint64]bool
		if k%2 == 1 {
			set, foreign = FoldSet(models, models[1+rng.IntN(len(models)-1)]), map[uint64]bool{}
		}
		copyAt := func() *Store {
			st := memStore(t)
			if err := foldOnto(t, st, models, evs[:p], nil, nil, nil, false); err != nil {
				t.Fatal(err)
			}
			return st
		}
		name := fmt.Sprintf("P=%d target=%d as of %v, %d models", p, target, asOf, len(set))
		own := copyAt()
		ownErr := foldOnto(t, own, set, evs[p:target], asOf, maps.Clone(foreign), nil, true)

		ids, err := live.AuditIDs(p, target)
		if err != nil || ids == nil {
			t.Fatalf("%s: AuditIDs: %v, %v", name, ids, err)
		}
		for _, s := range ids.dups {
			if s <= p {
				crossing++
			}
		}
		got := copyAt()
		gotErr := foldOnto(t, got, set, evs[p:target], asOf, maps.Clone(foreign), ids, true)
		if errors.Is(gotErr, ErrForeignDuplicate) != errors.Is(ownErr, ErrForeignDuplicate) || (gotErr == nil) != (ownErr == nil) {
			t.Fatalf("%s: with AuditIDs %v, with the copy's index %v", name, gotErr, ownErr)
		}
		if ownErr != nil {
			continue
		}
		for _, m := range set {
			if a, b := modelDigest(t, got, m), modelDigest(t, own, m); a != b {
				t.Errorf("%s: %s with AuditIDs %s, with the copy's index %s", name, m.Name(), a, b)
			}
		}
		for _, pfx := range []string{sysEventID, sysDup, sysPoison} {
			if a, b := prefixed(t, got, pfx), prefixed(t, own, pfx); !maps.Equal(a, b) {
				t.Errorf("%s: %s differs: %d entries with AuditIDs, %d with the copy's index", name, pfx, len(a), len(b))
			}
		}
	}
	if crossing == 0 {
		t.Fatal("no audit met a duplicate of an event at or before its copy's point: the case tests little")
	}
}

// TestAuditIDsCoverOnlyWhatTheIndexCovers: no AuditIDs beyond the store's
// checkpoint, nor before the index's start on a store folded without it.
func TestAuditIDsCoverOnlyWhatTheIndexCovers(t *testing.T) {
	models := foldSetModels()
	evs := dupLog(t, 64)
	st := memStore(t)
	if err := foldOnto(t, st, models, evs[:32], nil, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if a, err := st.AuditIDs(10, 32); err != nil || a == nil {
		t.Fatalf("AuditIDs(10, 32) at checkpoint 32: %v, %v", a, err)
	}
	if a, err := st.AuditIDs(10, 33); err != nil || a != nil {
		t.Fatalf("AuditIDs(10, 33) at checkpoint 32: %v, %v; want none", a, err)
	}
	// As a store folded by a lore without the index: it starts at 33.
	if err := st.db.Delete([]byte(sysDupFrom), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := foldOnto(t, st, models, evs, nil, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if a, err := st.AuditIDs(31, 64); err != nil || a != nil {
		t.Fatalf("AuditIDs(31, 64), the index from 33: %v, %v; want none", a, err)
	}
	if a, err := st.AuditIDs(32, 64); err != nil || a == nil {
		t.Fatalf("AuditIDs(32, 64), the index from 33: %v, %v", a, err)
	}
}
