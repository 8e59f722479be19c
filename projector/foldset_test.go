package projector

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// kindModel folds the kinds of its zero payloads only (a TypedModel): it
// records each event it folds under its id and refuses what refuse says,
// from the event and the state it reads.
type kindModel struct {
	name   string
	kinds  []events.Payload
	refuse func(tx Tx, data events.Payload) (bool, error)
}

func (m kindModel) Name() string { return m.name }
func (m kindModel) Version() int { return 1 }
func (m kindModel) Folds(data events.Payload) bool {
	return slices.ContainsFunc(m.kinds, func(p events.Payload) bool { return reflect.TypeOf(p) == reflect.TypeOf(data) })
}
func (m kindModel) Fold(tx Tx, ev *events.Event, data events.Payload) error {
	if !m.Folds(data) {
		return nil
	}
	if err := tx.Set([]byte("ev/"+ev.ID), []byte(ev.Type)); err != nil {
		return err
	}
	if bad, err := m.refuse(tx, data); err != nil || bad {
		return errors.Join(err, fmt.Errorf("%s refuses %s", m.name, ev.ID))
	}
	return nil
}

// pureKindModel is a kindModel whose refusals depend on the event alone
// (a PureRefuser).
type pureKindModel struct {
	kindModel
	pure func(data events.Payload) bool
}

func (m pureKindModel) Refuses(ev *events.Event, data events.Payload) error {
	if m.Folds(data) && m.pure(data) {
		return fmt.Errorf("%s refuses %s", m.name, ev.ID)
	}
	return nil
}

func pureModel(name string, kinds []events.Payload, pure func(data events.Payload) bool) pureKindModel {
	return pureKindModel{kindModel{name: name, kinds: kinds, refuse: func(_ Tx, data events.Payload) (bool, error) { return pure(data), nil }}, pure}
}

// everyEvent records every event (an AcceptingModel).
type everyEvent struct{}

func (everyEvent) Name() string       { return "every" }
func (everyEvent) Version() int       { return 1 }
func (everyEvent) AcceptsEveryEvent() {}
func (everyEvent) Fold(tx Tx, ev *events.Event, _ events.Payload) error {
	return tx.Set([]byte("ev/"+ev.ID), []byte(ev.Type))
}

// foldSetModels: loops refused before their start, lessons refused by
// their text, and three models over outcomes and errors whose refusals
// reach each other through the kinds they share (those of outs depend on
// the event alone).
func foldSetModels() []Model {
	started := func(tx Tx, data events.Payload) (bool, error) {
		switch d := data.(type) {
		case *events.LoopStarted:
			return false, tx.Set([]byte("loop/"+d.LoopID), nil)
		case *events.LoopIteration:
			_, ok, err := tx.Get([]byte("loop/" + d.LoopID))
			return !ok, err
		}
		return false, nil
	}
	return []Model{
		everyEvent{},
		kindModel{name: "loops", kinds: []events.Payload{&events.LoopStarted{}, &events.LoopIteration{}}, refuse: started},
		kindModel{name: "lessons", kinds: []events.Payload{&events.KnowledgeSubmitted{}}, refuse: func(_ Tx, data events.Payload) (bool, error) {
			return data.(*events.KnowledgeSubmitted).Lesson == "bad", nil
		}},
		pureModel("outs", []events.Payload{&events.OutcomeRecorded{}}, func(data events.Payload) bool {
			return data.(*events.OutcomeRecorded).BeadID[0] == 'x'
		}),
		// Refuses the outcome of a bead with an error recorded, and the
		// errors of bead x1.
		kindModel{name: "outs2", kinds: []events.Payload{&events.OutcomeRecorded{}, &events.ErrorRecorded{}}, refuse: func(tx Tx, data events.Payload) (bool, error) {
			switch d := data.(type) {
			case *events.ErrorRecorded:
				return d.BeadID == "x1", tx.Set([]byte("err/"+d.BeadID), nil)
			case *events.OutcomeRecorded:
				_, ok, err := tx.Get([]byte("err/" + d.BeadID))
				return ok, err
			}
			return false, nil
		}},
		// Refuses the errors of bead e0, and an error resolved that was
		// never recorded.
		kindModel{name: "errs", kinds: []events.Payload{&events.ErrorRecorded{}, &events.ErrorResolved{}}, refuse: func(tx Tx, data events.Payload) (bool, error) {
			switch d := data.(type) {
			case *events.ErrorRecorded:
				return d.BeadID == "e0", tx.Set([]byte("err/"+d.BeadID), nil)
			case *events.ErrorResolved:
				_, ok, err := tx.Get([]byte("err/" + d.BeadID))
				return !ok, err
			}
			return false, nil
		}},
	}
}

func TestFoldSetIsTheClosureOfSharedKindsOverModelsThatMayRefuse(t *testing.T) {
	models := foldSetModels()
	names := func(ms []Model) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name())
		}
		return out
	}
	for _, c := range []struct {
		m    int
		want []string
	}{
		{1, []string{"loops"}},
		{2, []string{"lessons"}},
		{3, []string{"outs", "outs2", "errs"}}, // errs through outs2's errors
		{4, []string{"outs/refusals", "outs2", "errs"}},
		{5, []string{"outs/refusals", "outs2", "errs"}},
		{0, []string{"every", "loops", "lessons", "outs/refusals", "outs2", "errs"}}, // it folds every kind
	} {
		if got := names(FoldSet(models, models[c.m])); !slices.Equal(got, c.want) {
			t.Errorf("FoldSet(%s) = %v, want %v", models[c.m].Name(), got, c.want)
		}
	}
}

// foldSetLog is n events of the models' kinds, a quarter of them given an
// earlier time (so "as of a time" is not a prefix of the log, and a loop's
// iteration or a bead's outcome can come before its start or its error).
func foldSetLog(t *testing.T, n int) []*events.Event {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 5))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []*events.Event
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		if rng.IntN(4) == 0 {
			at = at.Add(-time.Duration(rng.IntN(60)) * time.Second)
		}
		loop := fmt.Sprintf("ralph-loop-%08x", rng.IntN(12))
		bead := fmt.Sprintf("%c%d", "bex"[rng.IntN(3)], rng.IntN(8))
		var typ string
		var p events.Payload
		switch rng.IntN(6) {
		case 0:
			typ, p = "loop.started/v1", &events.LoopStarted{LoopID: loop, Task: "t"}
		case 1:
			typ, p = "loop.iteration/v1", &events.LoopIteration{LoopID: loop, Iteration: 1}
		case 2:
			lesson := fmt.Sprintf("lesson %d", i)
			if rng.IntN(10) == 0 {
				lesson = "bad"
			}
			typ, p = "knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: lesson, Category: "testing"}
		case 3:
			typ, p = "outcome.recorded/v1", &events.OutcomeRecorded{BeadID: bead, DurationMs: 1, Success: true}
		case 4:
			typ, p = "error.recorded/v1", &events.ErrorRecorded{BeadID: bead, ErrorType: "timeout", Message: "m"}
		default:
			typ, p = "error.resolved/v1", &events.ErrorResolved{BeadID: bead, ErrorID: "x"}
		}
		ev, err := events.New(typ, "p", "test", at, p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	return evs
}

// foldAsOf folds ms over the events of evs no later than asOf, in lanes,
// committing every 16 sequences; foreign, when not nil, makes it a fold
// set's fold (SetForeign).
func foldAsOf(t *testing.T, ms []Model, evs []*events.Event, asOf time.Time, foreign map[uint64]bool) (*Store, error) {
	t.Helper()
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f, err := NewFolder(st, ms, false)
	if err != nil {
		t.Fatal(err)
	}
	f.SetForeign(foreign)
	f.Parallel()
	defer f.Close()
	for i, ev := range evs {
		if ev.Time.After(asOf) {
			f.Skip(ev.Seq)
		} else if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
			return st, err
		}
		if i%16 == 15 || i == len(evs)-1 {
			if _, err := f.Settle(); err != nil {
				return st, err
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st, nil
}

func modelDigest(t *testing.T, st *Store, m Model) string {
	t.Helper()
	d, err := ModelsDigest([]Model{m}, st.Model)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFoldSetAsOfATimeEqualsTheFoldOfEveryModel: each model folded with
// its fold set alone, as of times where the refusals differ from those of
// the whole log, reaches the state it has in the fold of every model; a
// model folded without the rest of its set does not.
func TestFoldSetAsOfATimeEqualsTheFoldOfEveryModel(t *testing.T) {
	models := foldSetModels()
	evs := foldSetLog(t, 400)
	first := evs[0].Time
	short := map[string]bool{}
	for k := range 12 {
		asOf := first.Add(time.Duration(k*37+5) * time.Second)
		all, err := foldAsOf(t, models, evs, asOf, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			set := FoldSet(models, m)
			st, err := foldAsOf(t, set, evs, asOf, map[uint64]bool{})
			if err != nil {
				t.Fatalf("as of %v: fold set of %s: %v", asOf, m.Name(), err)
			}
			if got, want := modelDigest(t, st, m), modelDigest(t, all, m); got != want {
				t.Errorf("as of %v: %s folded with %d models of its set: %s, in the fold of every model %s", asOf, m.Name(), len(set), got, want)
			}
			if len(set) > 1 {
				alone, err := foldAsOf(t, []Model{m}, evs, asOf, map[uint64]bool{})
				if err != nil {
					t.Fatal(err)
				}
				if modelDigest(t, alone, m) != modelDigest(t, all, m) {
					short[m.Name()] = true
				}
			}
		}
	}
	// The others' refusals reach these models: the sets are not larger
	// than the case needs.
	for _, name := range []string{"every", "outs", "errs"} {
		if !short[name] {
			t.Errorf("%s folded alone reached its state in the fold of every model at every time: the case tests nothing", name)
		}
	}
}

// TestFoldSetStopsAtAnIDAForeignEventTookFirst: a lesson whose id an
// iteration took first folds as of a time when the iteration's loop had
// not started (the iteration is refused, its id not recorded) and is a
// duplicate otherwise. The lessons' fold set does not fold iterations, so
// its fold stops with ErrForeignDuplicate instead of guessing; folded
// without that check it guesses wrong.
func TestFoldSetStopsAtAnIDAForeignEventTookFirst(t *testing.T) {
	models := foldSetModels()
	lessons := models[2]
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []*events.Event
	add := func(typ string, sec int, p events.Payload) *events.Event {
		ev, err := events.New(typ, "p", "test", at.Add(time.Duration(sec)*time.Second), p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
		return ev
	}
	add("knowledge.submitted/v1", 1, &events.KnowledgeSubmitted{Lesson: "before", Category: "testing"})
	add("loop.started/v1", 20, &events.LoopStarted{LoopID: "ralph-late-0123abcd", Task: "t"})
	it := add("loop.iteration/v1", 5, &events.LoopIteration{LoopID: "ralph-late-0123abcd", Iteration: 1})
	add("knowledge.submitted/v1", 6, &events.KnowledgeSubmitted{Lesson: "shares an id", Category: "testing"}).ID = it.ID
	add("knowledge.submitted/v1", 7, &events.KnowledgeSubmitted{Lesson: "after", Category: "testing"})

	for _, sec := range []int{10, 30} { // before the loop's start, after it
		asOf := at.Add(time.Duration(sec) * time.Second)
		all, err := foldAsOf(t, models, evs, asOf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := foldAsOf(t, FoldSet(models, lessons), evs, asOf, map[uint64]bool{}); !errors.Is(err, ErrForeignDuplicate) {
			t.Errorf("as of +%ds: the lessons' fold set folded a lesson whose id an iteration took first: %v", sec, err)
		}
		if sec == 10 {
			blind, err := foldAsOf(t, FoldSet(models, lessons), evs, asOf, nil)
			if err != nil {
				t.Fatal(err)
			}
			if modelDigest(t, blind, lessons) == modelDigest(t, all, lessons) {
				t.Error("the lessons folded without the check reached their state in the fold of every model: the case tests nothing")
			}
		}
		// Once the lesson's id is taken by a lesson first, nothing is foreign.
		swapped := slices.Clone(evs)
		swapped[2], swapped[3] = swapped[3], swapped[2]
		swapped[2].Seq, swapped[3].Seq = 3, 4
		got, err := foldAsOf(t, FoldSet(models, lessons), swapped, asOf, map[uint64]bool{})
		if err != nil {
			t.Fatalf("as of +%ds, the lesson first: %v", sec, err)
		}
		ref, err := foldAsOf(t, models, swapped, asOf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if modelDigest(t, got, lessons) != modelDigest(t, ref, lessons) {
			t.Errorf("as of +%ds, the lesson first: the fold set's lessons differ from the fold of every model", sec)
		}
		swapped[2].Seq, swapped[3].Seq = 4, 3
	}
}
