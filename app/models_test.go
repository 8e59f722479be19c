package app_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/loredev/lore/app"
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
// two of them), the learning model with the feedback index (both fold
// outcomes and feedback), and the event log with every model that may
// refuse (it counts every event).
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
		"learning":  "[feedback learning]",
		"eventlog":  "[crossloop eventlog feedback knowledge learning]",
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
