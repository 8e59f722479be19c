package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loredev/lore/events"
)

func TestValidateDataNamesTheField(t *testing.T) {
	cases := []struct {
		name, typ, data, want string
	}{
		{"negative duration", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":-5,"retry_count":0,"success":true}`, `"data.duration_ms": minimum`},
		{"missing required", "outcome.recorded/v1", `{"bead_id":"b","retry_count":0,"success":true}`, `"data.duration_ms": is required`},
		{"unknown field", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true,"x":1}`, `"data.x": is not allowed`},
		{"enum", "error.recorded/v1", `{"bead_id":"b","error_type":"bogus","message":"m"}`, `"data.error_type"`},
		{"wrong type", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":"slow","retry_count":0,"success":true}`, `"data.duration_ms"`},
		{"fraction for integer", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":1.5,"retry_count":0,"success":true}`, `"data.duration_ms"`},
		{"not JSON", "outcome.recorded/v1", `{"bead_id":`, `"data": not JSON`},
		{"trailing data", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true} {}`, `"data": not JSON`},
		{"unknown type", "outcome.guessed/v1", `{}`, `"type": unknown type`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := events.ValidateData(c.typ, []byte(c.data))
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
	if err := events.ValidateData("outcome.recorded/v1", []byte(`{"bead_id":"b","duration_ms":12345678901234,"retry_count":0,"success":true}`)); err != nil {
		t.Fatalf("valid event refused: %v", err)
	}
}

func TestTokensRoundTrip(t *testing.T) {
	for _, s := range []string{"bd-123.1", "a b*c>d", "", "%", "ünï.cødé", "web/app"} {
		tok := events.EncodeToken(s)
		if strings.ContainsAny(tok, ".*> \t") || tok == "" {
			t.Errorf("token %q of %q is not subject-safe", tok, s)
		}
		back, err := events.DecodeToken(tok)
		if err != nil || back != s {
			t.Errorf("%q → %q → %q (%v)", s, tok, back, err)
		}
	}
}

func TestValidateDataRefusesNumbersTheGoTypeCannotHold(t *testing.T) {
	err := events.ValidateData("outcome.recorded/v1", []byte(`{"bead_id":"b","duration_ms":1e400,"retry_count":0,"success":true}`))
	if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), "duration_ms") {
		t.Fatalf("err = %v, want an invalid event naming duration_ms", err)
	}
}
