package projector

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// TestModelFoldedAloneWithPoisonIndex: the same events, some refused by one
// model or another and one a copy (same id) of a refused event, folded by
// every model together (in lanes) and then by each model alone. Alone and
// given the poison index of the fold of every model, each model reaches
// exactly the state it has in that fold; alone without it, a model the
// others' refusals touch does not (the index is what makes them equal).
func TestModelFoldedAloneWithPoisonIndex(t *testing.T) {
	models, evs := tallyCase(t)
	// A copy of refused b17 sent again later: it folds, as the first one's
	// id was never recorded.
	evs[90].ID = evs[17].ID
	fold := func(st *Store, ms []Model, poisoned map[uint64]bool) {
		t.Helper()
		f, err := NewFolder(st, ms, false)
		if err != nil {
			t.Fatal(err)
		}
		f.SetPoisoned(poisoned)
		f.Parallel()
		defer f.Close()
		for i, ev := range evs {
			if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
				t.Fatal(err)
			}
			if i%25 == 24 || i == len(evs)-1 {
				if _, err := f.Settle(); err != nil {
					t.Fatal(err)
				}
				if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	open := func() *Store {
		st, err := OpenStore("", StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	all := open()
	fold(all, models, nil)
	last := uint64(len(evs))
	poisoned, covered, err := all.Poisoned(0, last)
	if err != nil || !covered {
		t.Fatalf("poison index of a store folded from the start: covered %v, %v", covered, err)
	}
	if want := []uint64{18, 43, 44, 61}; len(poisoned) != len(want) {
		t.Fatalf("poison index %v, want %v", poisoned, want)
	} else {
		for _, s := range want {
			if !poisoned[s] {
				t.Fatalf("poison index %v, want %v", poisoned, want)
			}
		}
	}
	if part, covered, err := all.Poisoned(40, 50); err != nil || !covered || len(part) != 2 || !part[43] || !part[44] {
		t.Fatalf("poison index over (40, 50]: %v covered %v (%v), want 43 and 44", part, covered, err)
	}
	if _, covered, _ := all.Poisoned(100, last+1); covered {
		t.Fatal("the poison index claims to cover a sequence beyond the store's checkpoint")
	}
	for _, m := range models {
		want, err := ModelsDigest([]Model{m}, all.Model)
		if err != nil {
			t.Fatal(err)
		}
		alone := open()
		fold(alone, []Model{m}, poisoned)
		if got, err := alone.Digest(); err != nil || got != want {
			t.Errorf("model %s folded alone with the poison index: digest %s (%v), folded with the others %s", m.Name(), got, err, want)
		}
		blind := open()
		fold(blind, []Model{m}, nil)
		if got, _ := blind.Digest(); got == want {
			t.Errorf("model %s folded alone without the poison index has its state in the fold of every model: the case tests nothing", m.Name())
		}
	}
	whole, err := all.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ModelsDigest(models, all.Model); err != nil || got != whole {
		t.Fatalf("ModelsDigest of every model %s (%v), the store's digest %s", got, err, whole)
	}
}

// TestPoisonIndexStartsWhereAStoreWasFirstFolded: a store folded before the
// index existed (no poison-from) gets it at its checkpoint + 1 on the next
// fold, and the index covers nothing below it.
func TestPoisonIndexStartsWhereAStoreWasFirstFolded(t *testing.T) {
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := tally{name: "a", refuse: map[string]bool{"b5": true, "b12": true}}
	foldSeqs := func(from, to int) {
		t.Helper()
		f, err := NewFolder(st, []Model{m}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i := from; i <= to; i++ {
			ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
				&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
			if err != nil {
				t.Fatal(err)
			}
			ev.Seq = uint64(i)
			if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
				t.Fatal(err)
			}
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	foldSeqs(1, 10)
	// As an older lore left it: no poison index.
	if err := st.db.DeleteRange([]byte(sysPoisonFrom), []byte(sysPoisonFrom+"\x00"), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.db.DeleteRange([]byte(sysPoison), prefixEnd([]byte(sysPoison)), nil); err != nil {
		t.Fatal(err)
	}
	if _, covered, err := st.Poisoned(0, 10); err != nil || covered {
		t.Fatalf("a store without a poison index: covered %v (%v)", covered, err)
	}
	foldSeqs(11, 13)
	if _, covered, _ := st.Poisoned(9, 13); covered {
		t.Fatal("the poison index covers sequences folded before it existed")
	}
	if set, covered, err := st.Poisoned(10, 13); err != nil || !covered || len(set) != 1 || !set[12] {
		t.Fatalf("poison index over (10, 13]: %v covered %v (%v), want 12", set, covered, err)
	}
}
