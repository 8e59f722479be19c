// Package events is lore's write side: the envelope, the catalogue of event
// types, the codec, schema validation, subjects and the appender.
//
// Every fact enters lore as an Event appended to one JetStream stream, the
// only source of truth. Read models are folds of that log.
package events

import (
	"time"

	json "github.com/goccy/go-json"
)

// Event is lore's envelope. The attribute names follow CloudEvents (id, type,
// source, subject, time) plus project and data.
//
// NB: the JSON field names reach disk and the wire; they must not change.
type Event struct {
	// ID is unique per fact (a ULID unless the writer chose one). It is the
	// JetStream Nats-Msg-Id, and the projector folds one event per id, so
	// re-sending the same event changes nothing, however late.
	ID string `json:"id"`
	// Type is the versioned type name, "outcome.recorded/v1".
	Type string `json:"type"`
	// Source says who reported the fact: a loop id, an agent, a user.
	Source string `json:"source"`
	// Subject is the id of the aggregate the event belongs to (a bead, a
	// pattern, a loop, ...). The catalogue derives it from Data when empty.
	Subject string `json:"subject"`
	// Time is when the fact happened (writers may backfill). Folds see no
	// other clock.
	Time time.Time `json:"time"`
	// Project scopes the event; "default" when the writer gives none.
	Project string `json:"project"`
	// Data is the type's payload, validated against its JSON Schema.
	Data json.RawMessage `json:"data"`

	// Seq is the stream sequence the event was stored at (0 before append).
	Seq uint64 `json:"-"`
	// Received is the stream's receive time (zero before append).
	Received time.Time `json:"-"`
	// Checked is true when code in this process already applied Check to
	// the event (tests and benchmarks of folds); Folder.Fold then does not
	// check it again. It is never read from the wire: an event read from
	// the log is checked whatever its headers say (CheckStored).
	Checked bool `json:"-"`
	// Request is the digest of the request that decided the event, for the
	// first event of a command sent with an idempotency key: a request
	// re-sent with that key and other arguments is told apart from a
	// retry. It travels in the message's RequestHeader, not in the
	// envelope (events of raw publishers, and of lore before it, have none).
	Request string `json:"-"`
}

// DefaultProject is the project of events whose writer names none.
const DefaultProject = "default"
