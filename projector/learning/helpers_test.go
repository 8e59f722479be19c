package learning_test

import (
	"bytes"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/learning"
)

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func day(d float64) time.Time { return day0.Add(time.Duration(d * 24 * float64(time.Hour))) }

// memTx is an in-memory projector.Tx that records announcements, so tests
// can check what a fold emits (FoldEvents never announces).
type memTx struct {
	kv    map[string][]byte
	seq   uint64
	emits []projector.Derived
}

func newMemTx() *memTx { return &memTx{kv: map[string][]byte{}} }

func (m *memTx) Get(k []byte) ([]byte, bool, error) {
	v, ok := m.kv[string(k)]
	return append([]byte(nil), v...), ok, nil
}
func (m *memTx) Set(k, v []byte) error    { m.kv[string(k)] = append([]byte(nil), v...); return nil }
func (m *memTx) Delete(k []byte) error    { delete(m.kv, string(k)); return nil }
func (m *memTx) Emit(d projector.Derived) { m.emits = append(m.emits, d) }
func (m *memTx) Seq() uint64              { return m.seq }
func (m *memTx) Scan(prefix []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k := range m.kv {
		if bytes.HasPrefix([]byte(k), prefix) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), m.kv[k]); err != nil {
			if errors.Is(err, projector.ErrStopScan) {
				return nil
			}
			return err
		}
	}
	return nil
}

// sim builds events and folds them both into a memTx (to see emits) and,
// on demand, into a real in-memory Pebble store through FoldEvents.
type sim struct {
	t   *testing.T
	m   *learning.Model
	tx  *memTx
	evs []*events.Event
}

func newSim(t *testing.T) *sim {
	t.Helper()
	m, err := learning.New(learning.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, m: m, tx: newMemTx()}
}

// add appends an event at time at and folds it into the memTx; it returns
// the fold's error (poison).
func (s *sim) add(typ string, at time.Time, p events.Payload) error {
	s.t.Helper()
	ev, err := events.New(typ, "", "loop-test", at, p)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := events.ValidateData(typ, ev.Data); err != nil {
		return err
	}
	ev.Seq = uint64(len(s.evs) + 1)
	s.evs = append(s.evs, ev)
	s.tx.seq = ev.Seq
	data, err := events.DecodeData(ev)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.m.Fold(s.tx, ev, data)
}

func (s *sim) must(typ string, at time.Time, p events.Payload) {
	s.t.Helper()
	if err := s.add(typ, at, p); err != nil {
		s.t.Fatalf("%s: %v", typ, err)
	}
}

// store folds every event so far into a fresh Pebble store.
func (s *sim) store() projector.Reader {
	s.t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { st.Close() })
	poison, err := projector.FoldEvents(st, []projector.Model{s.m}, s.evs)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, p := range poison {
		if !strings.Contains(p.Error(), "Cannot promote") {
			s.t.Fatalf("poison: %v", p)
		}
	}
	return st.Model(learning.ModelName)
}

// emitted lists the emits of a type, as "subject key".
func (s *sim) emitted(typ string) []projector.Derived {
	var out []projector.Derived
	for _, e := range s.tx.emits {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func intp(n int) *int { return &n }
