package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/loredev/lore/events"
)

// Events built from arguments. A command whose event carries the caller's
// arguments validates them as sent — missing stays missing, null stays
// null — with events.RedactData, the check record.event applies (the raw
// door the same, refusing where the appender redacts): a field required by the event's schema is required at every door,
// with the same error.

// fields returns the request's arguments as sent, key by key, less the
// keys drop (arguments that are not event data, such as "time").
func (r Request) fields(drop ...string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(r.Args) == 0 || string(r.Args) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(r.Args, &m); err != nil {
		return nil, fmt.Errorf("%w: arguments: must be a JSON object: %v", ErrBadRequest, err)
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m, nil
}

// checkData validates data built from arguments against typ's schema and
// returns its JSON, credentials in free text redacted (events.RedactData,
// the appender's check), and the payload that JSON decodes into (nil for
// a kind without a schema). The error is the schema's (it wraps
// events.ErrInvalidEvent: API code 400, exit code 2).
func checkData(typ string, data map[string]json.RawMessage) ([]byte, events.Payload, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s data: %w", typ, err)
	}
	p, out, err := events.RedactPayload(typ, raw)
	return out, p, err
}

// setDefault sets data[k] to v when the caller sent no k.
func setDefault(data map[string]json.RawMessage, k string, v any) error {
	if _, ok := data[k]; ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	data[k] = raw
	return nil
}

// dataEvent validates data (see checkData) and returns the event of type typ
// carrying exactly it, and its decoded payload.
func dataEvent(req Request, typ, project string, at time.Time, data map[string]json.RawMessage) (*events.Event, events.Payload, error) {
	raw, p, err := checkData(typ, data)
	if err != nil {
		return nil, nil, err
	}
	ev := &events.Event{Type: typ, Project: project, Source: req.Source, Time: at.UTC(), Data: raw}
	if p == nil { // a kind without a schema: decoded here
		if p, err = events.DecodeData(ev); err != nil {
			return nil, nil, err
		}
	}
	ev.Subject = p.AggregateID()
	ev.ID = req.eventID(at)
	return ev, p, nil
}

// newEvent is events.New with the request's source and the id the request
// assigns (eventID), for data the command computed.
func (r Request) newEvent(typ, project string, at time.Time, p events.Payload) (*events.Event, error) {
	ev, err := events.New(typ, project, r.Source, at, p)
	if err != nil {
		return nil, err
	}
	ev.ID = r.eventID(ev.Time)
	return ev, nil
}

// idSource names a command's events: from the caller's idempotency key when
// given, else new ULIDs.
type idSource struct {
	key string
	n   int
	// digest is requestDigest of the request sent with key.
	digest string
}

// eventID returns the id of the command's next event. With an idempotency
// key the first event's id is the key and the n-th (n > 1) is "<key>.<n>":
// a command deciding the same events again names them the same.
func (r Request) eventID(t time.Time) string {
	if r.ids == nil || r.ids.key == "" {
		return events.NewID(t)
	}
	r.ids.n++
	if r.ids.n == 1 {
		return r.ids.key
	}
	return r.ids.key + "." + strconv.Itoa(r.ids.n)
}

// MaxIdempotencyKey bounds an idempotency key's length, leaving room in
// the 128 characters of an event id for the suffix of later events.
const MaxIdempotencyKey = 100

// CheckIdempotencyKey is the rule for a client's idempotency key: 1-100
// characters, none of them space or control.
func CheckIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKey || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%w: field \"idempotency_key\": %q must be 1-%d characters without spaces", ErrBadRequest, k, MaxIdempotencyKey)
	}
	return nil
}

// requestDigest names a request by what it asks: the endpoint, the
// project and the arguments as JSON values (keys in any order, any
// spacing, numbers as numbers), so that a retry of the same request
// digests alike whatever client re-sends it, and another request does
// not. It is stamped on the first event of a command sent with an
// idempotency key (events.Event.Request).
func requestDigest(subject, project string, args json.RawMessage) (string, error) {
	var v any
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &v); err != nil {
			return "", fmt.Errorf("%w: arguments: %v", ErrBadRequest, err)
		}
	}
	canon, err := json.Marshal(v) // map keys sorted
	if err != nil {
		return "", fmt.Errorf("encode arguments: %w", err)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(subject), []byte(project), canon} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// checkSameRequest refuses a command re-sent with an idempotency key that
// an event of another request holds (stored: the key's first event): a
// retry is the same request; anything else under that key would be
// answered with the first request's decision, silently. An event without
// a digest (a raw publisher's, or appended before digests) is taken for
// the same request.
func checkSameRequest(req Request, stored *events.Event) error {
	if stored.Request == "" || req.ids == nil || stored.Request == req.ids.digest {
		return nil
	}
	return fmt.Errorf("%w: field \"idempotency_key\": %q was used by another request (other arguments, project or endpoint); a retry sends the same request, a new request takes a new key",
		ErrKeyReused, req.ids.key)
}
