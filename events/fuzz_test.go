package events_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/loredev/lore/events"
)

// FuzzDecode: any bytes either decode to an envelope or are refused with
// ErrInvalidEvent, never a panic; an envelope whose data passes its schema
// and decodes into its payload survives an encode/decode round trip.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"01J","type":"outcome.recorded/v1","source":"t","subject":"bd-1","time":"2026-01-01T00:00:00Z","project":"default","data":{"bead_id":"bd-1","duration_ms":5,"retry_count":0,"success":true}}`))
	f.Add([]byte(`{"type":"pattern.observed/v1","data":{"success":true}}`))
	f.Add([]byte(`{not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := events.Decode(b)
		if err != nil {
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("decode error does not wrap ErrInvalidEvent: %v", err)
			}
			return
		}
		if err := events.ValidateData(ev.Type, ev.Data); err != nil {
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("validation error does not wrap ErrInvalidEvent: %v", err)
			}
			return
		}
		if _, err := events.DecodeData(ev); err != nil {
			// The schema's "integer" admits values the payload's Go types
			// cannot hold (1e400, 5.0): such data is refused at decoding.
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("data valid for %s but decoding fails unmarked: %v", ev.Type, err)
			}
			return
		}
		wire, err := events.Encode(ev)
		if err != nil {
			t.Fatalf("encode a decoded envelope: %v", err)
		}
		back, err := events.Decode(wire)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if back.ID != ev.ID || back.Type != ev.Type || back.Subject != ev.Subject || !back.Time.Equal(ev.Time) {
			t.Fatalf("round trip changed the envelope: %+v vs %+v", back, ev)
		}
		if err := events.ValidateData(back.Type, back.Data); err != nil {
			t.Fatalf("round trip made valid data invalid: %v", err)
		}
	})
}

// FuzzValidateData: schema validation of any type name and data refuses
// with ErrInvalidEvent or accepts; it never panics.
func FuzzValidateData(f *testing.F) {
	f.Add("error.recorded/v1", []byte(`{"bead_id":"b","error_type":"timeout","message":"m"}`))
	f.Add("error.recorded/v1", []byte(`{"bead_id":"b","error_type":"cosmic","message":"m"}`))
	f.Add("knowledge.submitted/v1", []byte(`{"lesson":"use the cache","category":"tooling","confidence":1e309}`))
	f.Add("loop.started/v1", []byte(`{"loop_id":"ralph-x-0000000g","task":"t"}`))
	f.Add("knowledge.submitted/v1", []byte(`{"lesson":"the key is AKIAIOSFODNN7EXAMPLE, keep it","category":"security"}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		if err := events.ValidateData(typ, data); err != nil && !errors.Is(err, events.ErrInvalidEvent) {
			t.Fatalf("validation error does not wrap ErrInvalidEvent: %v", err)
		}
		// The payload a door takes from the check is the one its data
		// decodes into (the door decodes nothing a second time).
		p, out, err := events.RedactPayload(typ, data)
		if err != nil || p == nil {
			return
		}
		q, err := events.DecodeData(&events.Event{Type: typ, Data: out})
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%s: the checked payload %+v, its data %s decodes into %+v (%v)", typ, p, out, q, err)
		}
	})
}
