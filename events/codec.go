package events

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"reflect"
	"sync"
	"time"

	json "github.com/goccy/go-json"
	"github.com/oklog/ulid/v2"
)

// Encode returns the wire form of an event: its JSON envelope.
func Encode(ev *Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ev.Type, err)
	}
	return b, nil
}

// Decode parses a JSON envelope. It checks only that the bytes are an
// envelope; ValidateData checks the payload.
func Decode(b []byte) (*Event, error) {
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("%w: envelope: %v", ErrInvalidEvent, err)
	}
	if ev.Type == "" {
		return nil, fmt.Errorf("%w: field \"type\": is required", ErrInvalidEvent)
	}
	if len(ev.Data) == 0 || ev.Data[0] != '{' {
		return nil, fmt.Errorf("%w: field \"data\": must be an object", ErrInvalidEvent)
	}
	return &ev, nil
}

func decodeStrict(data []byte, v any) error { return json.Unmarshal(data, v) }

var entropy = struct {
	sync.Mutex
	m *ulid.MonotonicEntropy
}{m: ulid.Monotonic(rand.Reader, 0)}

// NewID returns a new ULID string (monotonic within the process).
func NewID(t time.Time) string {
	entropy.Lock()
	defer entropy.Unlock()
	return ulid.MustNew(ulid.Timestamp(t), entropy.m).String()
}

// New builds an event of type typ from a payload: a new id, the payload's
// aggregate as subject, and time t (now when zero). Credentials in the
// payload's free text (a Redactor) are redacted first.
func New(typ, project, source string, t time.Time, p Payload) (*Event, error) {
	if t.IsZero() {
		t = time.Now()
	}
	// Credentials in free text are redacted before anything is derived
	// from the payload (its data, its aggregate id): p is changed in place.
	if r, ok := p.(Redactor); ok {
		redactPayload(r)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s data: %w", typ, err)
	}
	if project == "" {
		project = DefaultProject
	}
	return &Event{ID: NewID(t), Type: typ, Source: source, Subject: p.AggregateID(),
		Time: t.UTC(), Project: project, Data: data}, nil
}

// OtherContent says what of b differs from a as the folds read an event
// (its type, project, subject or data, the data as JSON values: key order
// and spacing aside); "" when nothing does. Two copies of one fact may
// differ in time and source (a copy re-sent later); nothing else.
func OtherContent(a, b *Event) string {
	switch {
	case a.Type != b.Type:
		return fmt.Sprintf("type (%s, not %s)", a.Type, b.Type)
	case a.Project != b.Project:
		return fmt.Sprintf("project (%q, not %q)", a.Project, b.Project)
	case a.Subject != b.Subject:
		return fmt.Sprintf("subject (%q, not %q)", a.Subject, b.Subject)
	}
	if bytes.Equal(a.Data, b.Data) {
		return ""
	}
	var x, y any
	if json.Unmarshal(a.Data, &x) != nil || json.Unmarshal(b.Data, &y) != nil || !reflect.DeepEqual(x, y) {
		return "data"
	}
	return ""
}
