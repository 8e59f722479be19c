// Package api serves lore's endpoints (app.Endpoints) over NATS
// request–reply with the nats.go micro framework, and is the client the CLI
// and other Go programs use to call them.
//
// Wire format (JSON), on subject lore.api.<group>.<name>:
//
//	request:  {"args": {...}, "project": "p", "source": "agent-7",
//	           "now": RFC3339, "as_of": RFC3339, "at_seq": N,
//	           "expect_last_seq": N, "no_wait": true, "idempotency_key": "k"}
//	          (an unknown key is refused with code 400)
//	reply:    the endpoint's result as JSON, or an error: headers
//	          Nats-Service-Error-Code (400 bad input, 404 not found,
//	          409 conflict, 500 failure) and Nats-Service-Error (message),
//	          with body {"error": message, "code": code}.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

// Request is the wire form of a call. NB: field names are the public API.
type Request struct {
	Args    json.RawMessage `json:"args,omitempty"`
	Project string          `json:"project,omitempty"`
	Source  string          `json:"source,omitempty"`
	// Now evaluates decay at this time instead of the wall clock.
	Now *time.Time `json:"now,omitempty"`
	// AsOf answers from the state folded from events with time <= AsOf,
	// evaluated at AsOf (audits).
	AsOf *time.Time `json:"as_of,omitempty"`
	// AtSeq answers from the state after stream sequence AtSeq (audits).
	AtSeq uint64 `json:"at_seq,omitempty"`
	// ExpectLastSeq makes a command's single event conditional on the
	// aggregate's last stream sequence (optimistic concurrency; 0 = none yet).
	ExpectLastSeq *uint64 `json:"expect_last_seq,omitempty"`
	// NoWait returns as soon as a command's events are stored, without
	// waiting for them to be projected (the reply is then "pending").
	NoWait bool `json:"no_wait,omitempty"`
	// IdempotencyKey names a command's events (the first event's id is the
	// key, the n-th "<key>.<n>"): a command re-sent with the same key, for
	// instance after a lost reply, appends nothing new and replies the
	// fold's decision. 1-100 characters, no spaces.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Call is the app call the request makes.
func (r Request) Call() app.Call {
	return app.Call{Args: r.Args, Project: r.Project, Source: r.Source, Now: r.Now, AsOf: r.AsOf,
		AtSeq: r.AtSeq, ExpectLastSeq: r.ExpectLastSeq, NoWait: r.NoWait, IdempotencyKey: r.IdempotencyKey}
}

// CommandReply is the reply of every command endpoint.
type CommandReply = app.CommandReply

// Error is an endpoint's error as the client sees it.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Message }

// Is lets callers match remote errors with the app sentinels.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case "400":
		return target == app.ErrBadRequest
	case "404":
		return target == app.ErrNotFound
	case "409":
		return target == app.ErrConflict
	case "422":
		return target == app.ErrKeyReused || target == app.ErrConflict
	case "413":
		return target == app.ErrTooLarge
	}
	return false
}

// CodeOf maps an error to its API code.
func CodeOf(err error) string {
	switch {
	case errors.Is(err, app.ErrBadRequest), errors.Is(err, events.ErrInvalidEvent):
		return "400"
	case errors.Is(err, app.ErrNotFound):
		return "404"
	case errors.Is(err, app.ErrKeyReused):
		return "422"
	case errors.Is(err, app.ErrConflict):
		return "409"
	case errors.Is(err, app.ErrTooLarge):
		return "413"
	}
	return "500"
}

// NewRequest builds a request with args marshalled to JSON.
func NewRequest(args any) (Request, error) {
	var r Request
	if args == nil {
		return r, nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return r, fmt.Errorf("encode arguments: %w", err)
	}
	r.Args = raw
	return r, nil
}
