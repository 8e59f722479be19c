package test

import (
	"errors"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// FuzzFoldEnvelope: whatever a raw client publishes on lore.ev.>, every
// model folds it or refuses it as a poison event (dead-lettered), and
// never fails with another error or panics. Inputs that pass decoding and
// validation are the learning and knowledge rules' input validation: the
// folds must refuse bad values with ErrPoison, not store them.
func FuzzFoldEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"id":"a1","type":"outcome.recorded/v1","time":"2026-01-01T00:00:00Z","project":"default","data":{"bead_id":"bd-1","duration_ms":5,"retry_count":0,"success":true,"decomposition":"1. split by file\n2. test"}}`,
		`{"id":"a2","type":"feedback.recorded/v1","time":"2026-01-01T00:00:00Z","data":{"criterion":"type_safe","type":"helpful","raw_value":0.7}}`,
		`{"id":"a3","type":"knowledge.submitted/v1","time":"2026-01-01T00:00:00Z","data":{"lesson":"use a bigger pebble cache when reads dominate","category":"tooling","confidence":0.8}}`,
		`{"id":"a4","type":"pattern.observed/v1","time":"2026-01-01T00:00:00Z","data":{"content":"split by file","success":false}}`,
		`{"id":"a5","type":"loop.completed/v1","time":"2026-01-01T00:00:00Z","data":{"loop_id":"ralph-x-0000000a","outcome":"success","iterations":2}}`,
		`{"id":"a6","type":"error.recorded/v1","time":"0001-01-01T00:00:00Z","data":{"bead_id":"b","error_type":"timeout","message":"m"}}`,
	} {
		f.Add([]byte(s))
	}
	models := app.Models()
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := events.Decode(b)
		if err != nil {
			return // dead-lettered before any fold (TestPoisonEventsGoToDeadLetters)
		}
		ev.Seq = 1
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true, CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		poison, err := projector.FoldEvents(st, models, []*events.Event{ev})
		if err != nil {
			t.Fatalf("fold of %s failed with a non-poison error: %v", ev.Type, err)
		}
		for _, p := range poison {
			if !errors.Is(p, projector.ErrPoison) {
				t.Fatalf("poison not marked ErrPoison: %v", p)
			}
		}
		if len(poison) == 0 {
			if err := events.ValidateData(ev.Type, ev.Data); err != nil {
				t.Fatalf("an event invalid for its schema was folded: %v", err)
			}
		}
	})
}
