package projector

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/loredev/lore/events"
)

// TestDeltaBringsAnyStateInItsSpanToItsEnd commits events (deletes,
// refusals and repeated ids among them) in batches of random sizes into a
// store recording deltas every 7 sequences, checkpointing the store after
// every commit. A delta's table ingested into a copy of the state after
// any commit within its span gives, key for key (the outbox and the
// live-from mark aside: no audit reads them), the state after the commit
// that ended it, and the mark it carries is that state's.
func TestDeltaBringsAnyStateInItsSpanToItsEnd(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(filepath.Join(dir, "live"), StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var deltas []*Delta
	if err := st.RecordDeltas(7, func(d *Delta) { deltas = append(deltas, d) }); err != nil {
		t.Fatal(err)
	}
	models := []Model{lister{name: "a", refuse: map[string]bool{"b17": true}}, lister{name: "b"}}
	f, err := NewFolder(st, models, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	states := map[uint64]string{} // the store checkpointed after each commit
	rng := rand.New(rand.NewPCG(3, 5))
	var evs []*events.Event
	for i := range 90 {
		ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, 90-i, 0, time.UTC),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%13 == 12 {
			ev.ID = evs[i-4].ID // folded once: the id index says so
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	for i := 0; i < len(evs); {
		n := 1 + rng.IntN(10)
		for _, ev := range evs[i:min(i+n, len(evs))] {
			if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
				t.Fatal(err)
			}
		}
		i += n
		if _, err := f.Settle(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		at := filepath.Join(dir, fmt.Sprintf("state-%d", f.Seq()))
		if err := st.DB().Checkpoint(at, pebble.WithFlushedWAL()); err != nil {
			t.Fatal(err)
		}
		states[f.Seq()] = at
	}
	if len(deltas) < 8 {
		t.Fatalf("%d deltas of 90 events every 7", len(deltas))
	}
	applied := 0
	for i, d := range deltas {
		if d.From/7 == d.To/7 || (i > 0 && d.From != deltas[i-1].To) {
			t.Fatalf("delta %d over (%d, %d] after one ending at %d: not cut at the first commit past a multiple of 7", i, d.From, d.To, deltas[max(i-1, 0)].To)
		}
		table := filepath.Join(dir, fmt.Sprintf("delta-%d.sst", i))
		if err := d.WriteTable(table); err != nil {
			t.Fatal(err)
		}
		end := openState(t, states[d.To])
		want, err := end.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		if d.Mark != want {
			t.Fatalf("delta over (%d, %d] carries mark %+v, the state at its end %+v", d.From, d.To, d.Mark, want)
		}
		for s, state := range states {
			if s < d.From || s > d.To {
				continue
			}
			cp := filepath.Join(dir, fmt.Sprintf("copy-%d-%d", i, s))
			if err := os.CopyFS(cp, os.DirFS(state)); err != nil {
				t.Fatal(err)
			}
			c, err := OpenStore(cp, StoreOptions{Ephemeral: true})
			if err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, fmt.Sprintf("ingest-%d-%d.sst", i, s))
			if err := os.Link(table, link); err != nil {
				t.Fatal(err)
			}
			if err := c.ApplyDelta(link); err != nil {
				t.Fatal(err)
			}
			if diff := storeDiff(t, c.DB(), end.DB()); diff != "" {
				t.Fatalf("the state at %d with the delta over (%d, %d] applied differs from the state at %d: %s", s, d.From, d.To, d.To, diff)
			}
			c.Close()
			applied++
		}
		end.Close()
	}
	if applied < len(deltas) {
		t.Fatalf("%d deltas applied to states within their span, %d deltas", applied, len(deltas))
	}
}

func openState(t *testing.T, dir string) *Store {
	t.Helper()
	st, err := OpenStore(dir, StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// storeDiff names the first key two stores differ on ("" when none),
// the outbox and the live-from mark aside.
func storeDiff(t *testing.T, a, b pebble.Reader) string {
	t.Helper()
	kv := func(r pebble.Reader) map[string]string {
		it, err := r.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		out := map[string]string{}
		for it.First(); it.Valid(); it.Next() {
			k := string(it.Key())
			if strings.HasPrefix(k, sysOutbox) || k == sysLiveFrom {
				continue
			}
			out[k] = string(it.Value())
		}
		return out
	}
	x, y := kv(a), kv(b)
	for k, v := range x {
		if w, ok := y[k]; !ok || !bytes.Equal([]byte(v), []byte(w)) {
			return fmt.Sprintf("key %q: %q against %q (present: %v)", k, v, w, ok)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			return fmt.Sprintf("key %q missing", k)
		}
	}
	if len(x) == 0 {
		return "both empty"
	}
	return ""
}
