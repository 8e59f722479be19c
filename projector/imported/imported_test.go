package imported_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/imported"
)

func TestIndexHoldsImportedEventIDsOnly(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)
	ev := func(id string, seq uint64) *events.Event {
		return &events.Event{ID: id, Type: "feedback.recorded/v1", Project: "p", Subject: "c", Time: at, Seq: seq,
			Data: json.RawMessage(`{"criterion":"c","type":"helpful","raw_value":1}`)}
	}
	poison, err := projector.FoldEvents(st, []projector.Model{imported.Model{}}, []*events.Event{ev("imp-swt-1", 1), ev("01JABCDEF", 2)})
	if err != nil || len(poison) != 0 {
		t.Fatalf("fold: %v %v", err, poison)
	}
	r := st.Model(imported.Name)
	for id, want := range map[string]bool{"imp-swt-1": true, "01JABCDEF": false, "imp-swt-2": false} {
		if got, err := imported.Has(r, id); err != nil || got != want {
			t.Errorf("Has(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
}
