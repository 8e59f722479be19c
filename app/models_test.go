package app_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// touchTx counts what a fold does through it; it holds nothing.
type touchTx struct{ touched []string }

func (t *touchTx) Get(k []byte) ([]byte, bool, error) {
	t.touched = append(t.touched, "get "+string(k))
	return nil, false, nil
}
func (t *touchTx) Scan(p []byte, _ func(k, v []byte) error) error {
	t.touched = append(t.touched, "scan "+string(p))
	return nil
}
func (t *touchTx) Set(k, _ []byte) error {
	t.touched = append(t.touched, "set "+string(k))
	return nil
}
func (t *touchTx) Delete(k []byte) error {
	t.touched = append(t.touched, "delete "+string(k))
	return nil
}
func (t *touchTx) Emit(d projector.Derived) { t.touched = append(t.touched, "emit "+d.Type) }
func (t *touchTx) Seq() uint64              { return 7 }

// TestTypedModelsFoldNothingOfTheOtherKinds: every read model that names
// the kinds it folds (projector.TypedModel) folds nothing of any other
// kind of the catalogue: no read, no write, no announcement, no refusal.
// An audit as of a time relies on it to fold a model with only the
// models whose refusals reach it (projector.FoldSet).
func TestTypedModelsFoldNothingOfTheOtherKinds(t *testing.T) {
	typed := 0
	for _, m := range app.Models() {
		tm, ok := m.(projector.TypedModel)
		if !ok {
			continue
		}
		typed++
		folds := 0
		for _, k := range events.Kinds() {
			data := k.New()
			if tm.Folds(data) {
				folds++
				continue
			}
			ev := &events.Event{ID: "01J0000000000000000000TEST", Type: k.Type, Project: "p", Source: "test",
				Subject: "s", Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Seq: 7, Data: []byte(`{}`)}
			tx := &touchTx{}
			if err := m.Fold(tx, ev, data); err != nil || len(tx.touched) > 0 {
				t.Errorf("%s, which does not fold %s: Fold returned %v after %v", m.Name(), k.Type, err, tx.touched)
			}
		}
		if folds == 0 {
			t.Errorf("%s folds no kind of the catalogue", m.Name())
		}
	}
	if typed < 3 {
		t.Fatalf("%d typed read models: the learning, knowledge and cross-loop models name their kinds", typed)
	}
}

// TestFoldSetsOfTheReadModels: as of a time, the learning, knowledge and
// cross-loop models are folded without each other (no kind is folded by
// two of them), the learning model without the feedback index (both fold
// outcomes and feedback, but the index refuses nothing), and the event
// log with every model that may refuse by state (it counts every event),
// the knowledge model's refusals (a malformed configuration) checked
// without folding it.
func TestFoldSetsOfTheReadModels(t *testing.T) {
	models := app.Models()
	byName := map[string]projector.Model{}
	for _, m := range models {
		byName[m.Name()] = m
	}
	names := func(ms []projector.Model) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name())
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	for model, want := range map[string]string{
		"crossloop": "[crossloop]",
		"knowledge": "[knowledge]",
		"learning":  "[learning]",
		"feedback":  "[feedback learning]",
		"eventlog":  "[crossloop eventlog knowledge/refusals learning]",
	} {
		m, ok := byName[model]
		if !ok {
			t.Fatalf("no read model %q", model)
		}
		if got := names(projector.FoldSet(models, m)); got != want {
			t.Errorf("fold set of %s: %s, want %s", model, got, want)
		}
	}
}

// TestAcceptingModelsRefuseNothing: the models that promise to refuse no
// event (projector.AcceptingModel: the event log, the imported ids, the
// feedback index) fold a workload of every common kind, with feedback of
// every type and edge values, without refusing one: a fold set leaves
// them out of the sets of the models they share kinds with.
func TestAcceptingModelsRefuseNothing(t *testing.T) {
	g, err := benchkit.Workload{Seed: 4, Loops: 8, Prefix: "acc"}.Generate(3000)
	if err != nil {
		t.Fatal(err)
	}
	evs := g.Events
	at := evs[len(evs)-1].Time
	for i, c := range []events.FeedbackRecorded{
		{Criterion: "type_safe", Type: "helpful", RawValue: 1, BeadID: "bd-1", Context: "c"},
		{Criterion: "type_safe", Type: "harmful", RawValue: 0},
		{Criterion: "small_diff", Type: "neutral", RawValue: 0.5, BeadID: "bd-1"},
		{Criterion: "ü/criterion", Type: "helpful", RawValue: 1e-300, BeadID: "bd-\x7f"},
	} {
		ev, err := events.New("feedback.recorded/v1", "", "test", at.Add(time.Duration(i)*time.Second), &c)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	for i, ev := range evs {
		ev.Seq = uint64(i + 1)
	}
	accepting := 0
	for _, m := range app.Models() {
		if _, ok := m.(projector.AcceptingModel); !ok {
			continue
		}
		accepting++
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		poison, err := projector.FoldEvents(st, []projector.Model{m}, evs)
		st.Close()
		if err != nil || len(poison) > 0 {
			t.Errorf("%s refused %d events (%v): %v", m.Name(), len(poison), err, poison)
		}
	}
	if accepting < 3 {
		t.Fatalf("%d accepting read models: the event log, the imported ids and the feedback index promise it", accepting)
	}
}
