// Package app holds lore's use cases: every query and command a user can
// reach, registered in one place, served over NATS request–reply (api/),
// the CLI (cmd/lore) and MCP alike.
//
// A query reads read models through a View at a time `now`; the runtime
// gives it the live store, or, for audits (`--as-of`, `--at-seq`), a store
// folded from the log up to that point. A command decides from a View which
// events to append (for instance a promote of a deprecated pattern is
// refused) and returns them; the runtime validates and appends them.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Request is what every query and command receives.
type Request struct {
	// Now is the time decay and ages are evaluated at (the wall clock by
	// default; the audit time with --as-of).
	Now time.Time
	// Project scopes the request; empty means the default project.
	Project string
	// Source names who asks (agent, loop id, user) for events a command writes.
	Source string
	// Args is the endpoint's own JSON arguments.
	Args json.RawMessage
}

// Bind decodes the request's Args into v; an error wraps ErrBadRequest.
func (r Request) Bind(v any) error {
	if len(r.Args) == 0 || string(r.Args) == "null" {
		return nil
	}
	if err := json.Unmarshal(r.Args, v); err != nil {
		return fmt.Errorf("%w: arguments: %v", ErrBadRequest, err)
	}
	return nil
}

// ErrBadRequest marks input errors (exit code 2, API code 400). Wrap it and
// name the field.
var ErrBadRequest = errors.New("lore: bad request")

// ErrNotFound marks a missing entity (API code 404).
var ErrNotFound = errors.New("lore: not found")

// ErrConflict marks a command refused by the current state (API code 409),
// e.g. promoting a deprecated pattern.
var ErrConflict = errors.New("lore: conflict")

// QueryFunc answers a query from a view.
type QueryFunc func(ctx context.Context, v View, req Request) (any, error)

// CommandFunc decides which events to append. It may also return a result
// for the caller (for instance the id of a new entry).
type CommandFunc func(ctx context.Context, v View, req Request) (evs []*events.Event, result any, err error)

// Endpoint is one query or command: reachable as lore.api.<group>.<name>.
type Endpoint struct {
	Group string // "learning", "knowledge", "patterns", "inject", "audit", "record"
	Name  string // "weights"
	Doc   string
	// Exactly one of Query and Command is set.
	Query   QueryFunc
	Command CommandFunc
}

// Subject is the endpoint's NATS subject. NB: must not change: clients use it.
func (e Endpoint) Subject() string { return "lore.api." + e.Group + "." + e.Name }

var registry = struct {
	sync.Mutex
	eps map[string]Endpoint
}{eps: map[string]Endpoint{}}

// Register adds an endpoint; it panics on a wiring bug.
func Register(e Endpoint) {
	if e.Group == "" || e.Name == "" || (e.Query == nil) == (e.Command == nil) {
		panic(fmt.Sprintf("app: malformed endpoint %s.%s", e.Group, e.Name))
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

// Models are the read models the projector folds, registered by each
// capability in init. NB: order is fold order; keep registration stable.
var models = struct {
	sync.Mutex
	list []projector.Model
}{}

// RegisterModel adds a read model to every projector.
func RegisterModel(m projector.Model) {
	models.Lock()
	defer models.Unlock()
	for _, o := range models.list {
		if o.Name() == m.Name() {
			panic("app: duplicate model " + m.Name())
		}
	}
	models.list = append(models.list, m)
}

// Models returns the registered read models in registration order.
func Models() []projector.Model {
	models.Lock()
	defer models.Unlock()
	return append([]projector.Model(nil), models.list...)
}
