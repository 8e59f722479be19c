package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/loredev/lore/events"
)

// The command pipeline: every door (the NATS API, hence the CLI and MCP;
// the dashboard; embedded callers) calls an endpoint through Pipeline.Do,
// which decides once:
//
//	decode strictly (unknown key: 400) → apply the request's defaults →
//	validate arguments that are event data against the event's schema →
//	query: answer from the view | command: decide the events (refusing what
//	the fold would refuse) → append (ids from the idempotency key) → wait
//	for the fold → read back what the fold decided → reply.

// Backend is what the pipeline needs from a lore process (node.Node).
type Backend interface {
	// Live is the view of the live read models.
	Live() View
	// At folds the log into a temporary store up to a time (event time <=
	// asOf) or a sequence, for audits; release frees it.
	At(ctx context.Context, asOf *time.Time, atSeq uint64) (v View, release func(), err error)
	// Append stores events (one with optional optimistic concurrency).
	Append(ctx context.Context, evs []*events.Event, expectLastSeq *uint64) ([]events.Result, error)
	// WaitFor blocks until the live read models include seq.
	WaitFor(ctx context.Context, seq uint64) error
	// Folded returns the event the read models folded with this id, and
	// where it is stored (ok false when none is folded: not appended, not
	// projected yet, or dead-lettered).
	Folded(ctx context.Context, id string) (ev *events.Event, at events.Result, ok bool, err error)
}

// Call is one call of an endpoint as a door received it, before defaults.
type Call struct {
	// Args is the endpoint's JSON arguments as sent.
	Args json.RawMessage
	// Project scopes the call (events.DefaultProject when empty).
	Project string
	// Source names the caller in the events a command writes.
	Source string
	// Now evaluates decay at this time instead of the wall clock.
	Now *time.Time
	// AsOf and AtSeq answer a query from the state folded up to that
	// event time or stream sequence (audits); a command refuses them.
	AsOf  *time.Time
	AtSeq uint64
	// ExpectLastSeq makes a command's single event conditional on its
	// aggregate's last stream sequence (optimistic concurrency).
	ExpectLastSeq *uint64
	// NoWait replies once the events are stored, before they are folded:
	// the reply then says the fold's decision is pending.
	NoWait bool
	// IdempotencyKey, when set, names the command's events: the first
	// event's id is the key, the n-th "<key>.<n>". Re-sending the call with
	// the same key appends nothing new and replies the fold's decision.
	IdempotencyKey string
}

// CommandReply is the reply of every command.
type CommandReply struct {
	// Appended says where each event was stored (Duplicate: the log already
	// held an event with that id; nothing was appended).
	Appended []events.Result `json:"appended"`
	// Projected is true when the read models include the events.
	Projected bool `json:"projected"`
	// Pending is true when Result could not read back the fold's decision
	// (no_wait, or the fold did not reach the events in time): the parts of
	// Result that depend on it are marked pending.
	Pending bool `json:"pending,omitempty"`
	// Result is the endpoint's own result (for instance a new entry's id
	// and what the fold made of it).
	Result json.RawMessage `json:"result,omitempty"`
}

// Pipeline runs calls against a backend. It is safe for concurrent use.
type Pipeline struct {
	b Backend
	// WaitTimeout bounds the wait for the fold after an append (default
	// 10 s); the reply is then Pending.
	WaitTimeout time.Duration
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
}

// NewPipeline returns the pipeline over b.
func NewPipeline(b Backend) *Pipeline {
	return &Pipeline{b: b, WaitTimeout: 10 * time.Second, Clock: time.Now}
}

// request applies the call's defaults (project, time, source) — the only
// place they are applied — and decodes the arguments strictly.
func (p *Pipeline) request(e Endpoint, c Call) (Request, error) {
	req := Request{Now: p.Clock().UTC(), Project: c.Project, Source: c.Source, Args: c.Args}
	if err := events.CheckProject(c.Project); err != nil {
		return req, fmt.Errorf("%w: field \"project\": %v", ErrBadRequest, err)
	}
	if req.Project == "" {
		req.Project = events.DefaultProject
	}
	if c.Now != nil {
		req.Now = c.Now.UTC()
	} else if c.AsOf != nil {
		req.Now = c.AsOf.UTC()
	}
	if c.IdempotencyKey != "" {
		if e.Command == nil {
			return req, fmt.Errorf("%w: field \"idempotency_key\": %s is a query; only commands take one", ErrBadRequest, e.Subject())
		}
		if err := CheckIdempotencyKey(c.IdempotencyKey); err != nil {
			return req, err
		}
	}
	req.ids = &idSource{key: c.IdempotencyKey}
	v := e.newArgs()
	if v == nil {
		v = &noArgs{}
	}
	// Keys first (an unknown key is named whatever else is wrong), then
	// event data against its schema, then the values into Args.
	if err := checkKeys(c.Args, reflect.TypeOf(v).Elem(), "arguments"); err != nil {
		return req, fmt.Errorf("%s: %w", e.Subject(), err)
	}
	if e.Data != "" {
		data, err := req.fields(e.Extras...)
		if err != nil {
			return req, err
		}
		checked, _, err := checkData(e.Data, data)
		if err != nil {
			return req, err
		}
		req.data, req.dataType = checked, e.Data
	}
	if err := decodeValues(c.Args, v, "arguments"); err != nil { // keys checked above
		return req, fmt.Errorf("%s: %w", e.Subject(), err)
	}
	if err := checkProjectArgs(reflect.ValueOf(v).Elem()); err != nil {
		return req, fmt.Errorf("%s: %w", e.Subject(), err)
	}
	if c.IdempotencyKey != "" { // of arguments checked above
		d, err := requestDigest(e.Subject(), req.Project, c.Args)
		if err != nil {
			return req, err
		}
		req.ids.digest = d
	}
	if e.Args != nil {
		req.decoded = v
	}
	return req, nil
}

// Do calls endpoint e. A query returns its answer; a command returns a
// CommandReply.
func (p *Pipeline) Do(ctx context.Context, e Endpoint, c Call) (any, error) {
	req, err := p.request(e, c)
	if err != nil {
		return nil, err
	}
	audit := c.AsOf != nil || c.AtSeq > 0
	if audit && e.Command != nil {
		return nil, fmt.Errorf("%w: as_of/at_seq audit only a query, and %s is a command", ErrBadRequest, e.Subject())
	}
	if e.Query != nil {
		view := p.b.Live()
		if audit {
			v, release, err := p.b.At(ctx, c.AsOf, c.AtSeq)
			if err != nil {
				return nil, err
			}
			defer release()
			view = v
		}
		return e.Query(ctx, view, req)
	}
	return p.command(ctx, e, c, req)
}

func (p *Pipeline) command(ctx context.Context, e Endpoint, c Call, req Request) (any, error) {
	if c.IdempotencyKey != "" {
		first, at, ok, err := p.b.Folded(ctx, c.IdempotencyKey)
		if err != nil {
			return nil, fmt.Errorf("%s: look up idempotency key: %w", e.Subject(), err)
		}
		if ok {
			if err := checkSameRequest(req, first); err != nil {
				return nil, err
			}
			return p.replay(ctx, e, req, first, at)
		}
	}
	evs, result, err := e.Command(ctx, p.b.Live(), req)
	if err != nil {
		return nil, err
	}
	reply := CommandReply{Appended: []events.Result{}}
	if len(evs) == 0 {
		reply.Projected = true
		return reply, reply.setResult(result)
	}
	for _, ev := range evs {
		if ev.ID == "" {
			ev.ID = req.eventID(ev.Time)
		}
		if ev.Source == "" {
			ev.Source = req.Source
		}
		if ev.Project == "" {
			ev.Project = req.Project
		}
		if c.IdempotencyKey != "" && ev.ID == c.IdempotencyKey {
			ev.Request = req.ids.digest
		}
	}
	res, err := p.b.Append(ctx, evs, c.ExpectLastSeq)
	if err != nil {
		if errors.Is(err, events.ErrWrongSequence) {
			return nil, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		return nil, err
	}
	reply.Appended = res
	if !c.NoWait {
		var last uint64
		for _, r := range res {
			last = max(last, r.Seq)
		}
		wctx, cancel := context.WithTimeout(ctx, p.WaitTimeout)
		reply.Projected = p.b.WaitFor(wctx, last) == nil
		cancel()
	}
	// The key's event was in the log already (an attempt in flight when
	// this one looked it up): is it this request's?
	for _, r := range res {
		if !r.Duplicate || c.IdempotencyKey == "" || r.ID != c.IdempotencyKey {
			continue
		}
		if stored, _, ok, err := p.b.Folded(ctx, r.ID); err != nil {
			return nil, fmt.Errorf("%s: read the stored event: %w", e.Subject(), err)
		} else if ok {
			if err := checkSameRequest(req, stored); err != nil {
				return nil, err
			}
		}
	}
	if e.Reply != nil {
		if reply.Projected {
			// An event the log held already (a retry within JetStream's
			// duplicate window) is answered as it was stored.
			for i, r := range res {
				if !r.Duplicate {
					continue
				}
				stored, _, ok, err := p.b.Folded(ctx, r.ID)
				if err != nil {
					return nil, fmt.Errorf("%s: read the stored event: %w", e.Subject(), err)
				}
				if ok {
					evs[i] = stored
				}
			}
			if result, err = e.Reply(ctx, p.b.Live(), req, evs, result); err != nil {
				return nil, fmt.Errorf("%s: read back the fold's decision: %w", e.Subject(), err)
			}
		} else {
			reply.Pending = true
		}
	}
	return reply, reply.setResult(result)
}

// replay answers a command re-sent with an idempotency key whose events
// are already folded: nothing is decided or appended again; the reply is
// read back from the fold for the stored events (Endpoint.Reply). An
// endpoint without Reply (its result is computed, not decided: a ranking,
// a report) computes its result again from the live view; the events it
// would append are dropped.
func (p *Pipeline) replay(ctx context.Context, e Endpoint, req Request, first *events.Event, at events.Result) (any, error) {
	if e.Data != "" && first.Type != e.Data {
		return nil, fmt.Errorf("%w: field \"idempotency_key\": %q names a %s event, not one of %s", ErrConflict, req.ids.key, first.Type, e.Subject())
	}
	evs, res := []*events.Event{first}, []events.Result{at}
	for n := 2; ; n++ {
		ev, r, ok, err := p.b.Folded(ctx, fmt.Sprintf("%s.%d", req.ids.key, n))
		if err != nil {
			return nil, fmt.Errorf("%s: look up idempotency key: %w", e.Subject(), err)
		}
		if !ok {
			break
		}
		evs, res = append(evs, ev), append(res, r)
	}
	for i := range res {
		res[i].Duplicate = true
	}
	reply := CommandReply{Appended: res, Projected: true}
	var result any
	var err error
	if e.Reply != nil {
		result, err = e.Reply(ctx, p.b.Live(), req, evs, nil)
	} else {
		_, result, err = e.Command(ctx, p.b.Live(), req)
	}
	if err != nil {
		return nil, err
	}
	return reply, reply.setResult(result)
}

// EncodeReply is reply's JSON: json.Marshal's bytes. A CommandReply's
// Result is copied as it is rather than validated and compacted again
// (for a ranking or a block of lessons, that is most of the reply).
//
// INVARIANT: Result is only ever set by setResult, from json.Marshal, so
// it is compact valid JSON with HTML escaped, as json.Marshal would write it.
func EncodeReply(reply any) ([]byte, error) {
	r, ok := reply.(CommandReply)
	if !ok || len(r.Result) == 0 {
		return json.Marshal(reply)
	}
	result := r.Result
	r.Result = nil
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"result":`...) // Result is the last field
	b = append(b, result...)
	return append(b, '}'), nil
}

func (r *CommandReply) setResult(result any) error {
	if result == nil {
		return nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	r.Result = raw
	return nil
}

// checkProjectArgs refuses a project the log cannot hold
// (events.CheckProject, as the call's own project is) named by an
// argument "project" of args (a struct, its embedded structs included): a
// query about it would answer nothing, silently, where a command naming
// it is refused.
func checkProjectArgs(args reflect.Value) error {
	t := args.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := checkProjectArgs(args.Field(i)); err != nil {
				return err
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "project" && f.Type.Kind() == reflect.String {
			if err := events.CheckProject(args.Field(i).String()); err != nil {
				return fmt.Errorf("%w: field \"project\": %v", ErrBadRequest, err)
			}
		}
	}
	return nil
}
