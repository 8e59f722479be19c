package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// memBackend is an app.Backend over an in-memory store: Append validates
// events as the appender does (envelope and schema) and folds them at
// once, deduplicating by event id as JetStream does.
type memBackend struct {
	t      testing.TB
	st     *projector.Store
	models []projector.Model
	seq    uint64
	seen   map[string]events.Result
	log    []*events.Event
}

func newMemBackend(t testing.TB, models ...projector.Model) *memBackend {
	t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if len(models) == 0 {
		models = app.Models()
	}
	return &memBackend{t: t, st: st, models: models, seen: map[string]events.Result{}}
}

type memView struct{ b *memBackend }

func (v memView) Model(name string) projector.Reader { return v.b.st.Model(name) }
func (v memView) Seq() uint64                        { return v.b.seq }

func (b *memBackend) Live() app.View { return memView{b} }

func (b *memBackend) At(context.Context, *time.Time, uint64) (app.View, func(), error) {
	return nil, nil, errors.New("memBackend: no audits")
}

func (b *memBackend) Append(_ context.Context, evs []*events.Event, _ *uint64) ([]events.Result, error) {
	var out []events.Result
	var fold []*events.Event
	for _, ev := range evs {
		if err := events.ValidateEnvelope(ev); err != nil {
			return nil, err
		}
		if err := events.ValidateData(ev.Type, ev.Data); err != nil {
			return nil, err
		}
		if r, dup := b.seen[ev.ID]; dup {
			r.Duplicate = true
			out = append(out, r)
			continue
		}
		b.seq++
		ev.Seq = b.seq
		r := events.Result{ID: ev.ID, Seq: b.seq, Subject: ev.Subject}
		b.seen[ev.ID] = r
		out = append(out, r)
		fold = append(fold, ev)
		b.log = append(b.log, ev)
	}
	if poison, err := projector.FoldEvents(b.st, b.models, fold); err != nil || len(poison) > 0 {
		b.t.Fatalf("fold: %v %v", err, poison)
	}
	return out, nil
}

func (b *memBackend) WaitFor(context.Context, uint64) error { return nil }

func (b *memBackend) Folded(_ context.Context, id string) (*events.Event, events.Result, bool, error) {
	for _, ev := range b.log {
		if ev.ID == id {
			return ev, b.seen[id], true, nil
		}
	}
	return nil, events.Result{}, false, nil
}

// do calls group.name through the pipeline; a command's reply is unwrapped
// into its result, decoded into a value of out's type.
func do[T any](t *testing.T, p *app.Pipeline, group, name string, c app.Call) (T, *app.CommandReply, error) {
	t.Helper()
	var zero T
	e, ok := app.Lookup(group, name)
	if !ok {
		t.Fatalf("no endpoint %s.%s", group, name)
	}
	out, err := p.Do(context.Background(), e, c)
	if err != nil {
		return zero, nil, err
	}
	if r, ok := out.(app.CommandReply); ok {
		if len(r.Result) == 0 {
			return zero, &r, nil
		}
		var v T
		if err := json.Unmarshal(r.Result, &v); err != nil {
			t.Fatalf("decode result of %s.%s: %v", group, name, err)
		}
		return v, &r, nil
	}
	v, ok := out.(T)
	if !ok {
		t.Fatalf("%s.%s answered %T", group, name, out)
	}
	return v, nil, nil
}

func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
