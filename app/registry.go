// Package app holds lore's use cases: every query and command a user can
// reach, registered in one place, served over NATS request–reply (api/),
// the CLI (cmd/lore) and MCP alike.
//
// A query reads read models through a View at a time `now`; the runtime
// gives it the live store, or, for audits (`--as-of`, `--at-seq`), a store
// folded from the log up to that point. A command decides from a View which
// events to append (for instance a promote of a deprecated pattern is
// refused) and returns them; the pipeline (pipeline.go) validates and
// appends them, then reads back what the fold decided.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// View gives read access to the read models at one point of the log.
type View interface {
	// Model returns a reader of the named read model's keys.
	Model(name string) projector.Reader
	// Seq is the stream sequence the view reflects.
	Seq() uint64
}

// Request is what every query and command receives, its defaults applied
// by the pipeline (Pipeline.Do): handlers never default them again.
type Request struct {
	// Now is the time decay and ages are evaluated at (the wall clock by
	// default; the audit time with --as-of). Never zero in a pipeline call.
	Now time.Time
	// Project scopes the request; events.DefaultProject when the caller
	// named none. Never empty in a pipeline call.
	Project string
	// Source names who asks (agent, loop id, user) for events a command writes.
	Source string
	// Args is the endpoint's own JSON arguments, as the caller sent them.
	Args json.RawMessage

	// decoded is Args decoded by the pipeline into a new value of the
	// endpoint's Args type (a pointer), so that Bind decodes once.
	decoded any
	// ids names the events the command builds (data.go: eventID).
	ids *idSource
	// data is the endpoint's event data (the arguments less Extras) as the
	// pipeline's schema check of type dataType (Endpoint.Data) returned
	// it; nil when the endpoint has none.
	data     json.RawMessage
	dataType string
}

// Bind decodes the request's Args into v (a pointer to the endpoint's Args
// type) strictly: an unknown key is refused, naming it. An error wraps
// ErrBadRequest.
func (r Request) Bind(v any) error {
	if r.decoded != nil {
		dv, sv := reflect.ValueOf(v), reflect.ValueOf(r.decoded)
		if dv.Type() != sv.Type() {
			return fmt.Errorf("%w: %s bound, the endpoint declares %s", errWiring, dv.Type(), sv.Type())
		}
		dv.Elem().Set(sv.Elem())
		return nil
	}
	return decodeArgs(r.Args, v)
}

// errWiring marks a handler binding a type other than its Endpoint.Args (a
// bug, API code 500).
var errWiring = errors.New("app: arguments type differs from Endpoint.Args")

// ErrBadRequest marks input errors (exit code 2, API code 400). Wrap it and
// name the field.
var ErrBadRequest = errors.New("lore: bad request")

// ErrNotFound marks a missing entity (API code 404).
var ErrNotFound = errors.New("lore: not found")

// ErrConflict marks a command refused by the current state (API code 409),
// e.g. promoting a deprecated pattern.
var ErrConflict = errors.New("lore: conflict")

// ErrKeyReused marks a command sent with an idempotency key that an
// earlier, other request holds (API code 422, as the IETF's
// Idempotency-Key header answers a key reused with another payload): its
// events and decisions are the earlier request's. It is a conflict too
// (errors.Is ErrConflict).
var ErrKeyReused = fmt.Errorf("%w: idempotency key reused", ErrConflict)

// ErrTooLarge marks a reply larger than the transport carries (API code
// 413): the caller asks for less (a limit, a filter) or the server's
// max_payload is raised.
var ErrTooLarge = errors.New("lore: reply too large")

// QueryFunc answers a query from a view.
type QueryFunc func(ctx context.Context, v View, req Request) (any, error)

// CommandFunc decides which events to append. It may also return a result
// for the caller (for instance the id of a new entry).
type CommandFunc func(ctx context.Context, v View, req Request) (evs []*events.Event, result any, err error)

// ReplyFunc builds a command's reply once its events are folded: it reads
// back what the fold decided for them (by event id) from the live view.
// result is what the command returned before the append.
type ReplyFunc func(ctx context.Context, v View, req Request, evs []*events.Event, result any) (any, error)

// Endpoint is one query or command: reachable as lore.api.<group>.<name>.
type Endpoint struct {
	Group string // "learning", "knowledge", "patterns", "inject", "audit", "record", "import"
	Name  string // "weights"
	Doc   string
	// Args is a zero value of the endpoint's complete argument type (nil
	// when it takes none): the pipeline decodes the arguments strictly
	// into a new value of this type, and MCP derives the tool's input
	// schema from it. INVARIANT: the handler binds to this same type.
	Args any
	// Data, when set, is the event type whose payload the arguments are
	// (less the keys of Extras, e.g. "time"): the pipeline validates the
	// arguments as sent against that type's schema (events.RedactData,
	// the check record.event applies) before anything else.
	Data   string
	Extras []string
	// Exactly one of Query and Command is set.
	Query   QueryFunc
	Command CommandFunc
	// Reply, for a command, reads back the fold's decision after the
	// append (see ReplyFunc); without it the command's result is the reply.
	Reply ReplyFunc
}

// Subject is the endpoint's NATS subject. NB: must not change: clients use it.
func (e Endpoint) Subject() string { return "lore.api." + e.Group + "." + e.Name }

var registry = struct {
	sync.Mutex
	eps map[string]Endpoint
}{eps: map[string]Endpoint{}}

// Register adds an endpoint; it panics on a wiring bug.
func Register(e Endpoint) {
	if e.Group == "" || e.Name == "" || (e.Query == nil) == (e.Command == nil) || (e.Reply != nil && e.Command == nil) {
		panic(fmt.Sprintf("app: malformed endpoint %s.%s", e.Group, e.Name))
	}
	if e.Args != nil && reflect.TypeOf(e.Args).Kind() != reflect.Struct {
		panic(fmt.Sprintf("app: endpoint %s.%s: Args must be a struct value", e.Group, e.Name))
	}
	if _, ok := events.Lookup(e.Data); e.Data != "" && !ok {
		panic(fmt.Sprintf("app: endpoint %s.%s: unknown data type %s", e.Group, e.Name, e.Data))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.eps[e.Subject()]; dup {
		panic("app: duplicate endpoint " + e.Subject())
	}
	registry.eps[e.Subject()] = e
}

// Endpoints returns every endpoint, sorted by subject.
func Endpoints() []Endpoint {
	registry.Lock()
	defer registry.Unlock()
	out := make([]Endpoint, 0, len(registry.eps))
	for _, e := range registry.eps {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subject() < out[j].Subject() })
	return out
}

// Lookup finds an endpoint by group and name.
func Lookup(group, name string) (Endpoint, bool) {
	registry.Lock()
	defer registry.Unlock()
	e, ok := registry.eps["lore.api."+group+"."+name]
	return e, ok
}
