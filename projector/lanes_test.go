package projector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// tally counts outcomes under its own name, announces every tenth, and
// refuses the beads in refuse (after writing, so the writes must be taken
// back), or panics on them with panics.
type tally struct {
	name   string
	refuse map[string]bool
	panics bool
}

func (m tally) Name() string { return m.name }
func (m tally) Version() int { return 1 }
func (m tally) Fold(tx Tx, ev *events.Event, data events.Payload) error {
	o := data.(*events.OutcomeRecorded)
	v, _, err := tx.Get([]byte("total"))
	if err != nil {
		return err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n++
	if err := tx.Set([]byte("total"), binary.BigEndian.AppendUint64(nil, n)); err != nil {
		return err
	}
	if err := tx.Set([]byte("bead/"+o.BeadID), []byte(m.name)); err != nil {
		return err
	}
	if n%10 == 0 {
		tx.Emit(Derived{Type: "tally.reached/v1", Project: ev.Project, Subject: m.name,
			Key: fmt.Sprintf("%s:%d", m.name, n), Data: map[string]uint64{"n": n}})
	}
	if m.refuse[o.BeadID] {
		if m.panics {
			panic("fold bug on " + o.BeadID)
		}
		return errors.New("refused " + o.BeadID)
	}
	return nil
}

// tallyCase is three tally models, two of which refuse two beads each (one
// by panicking), and 120 outcomes of beads b0..b119 at sequences 1..120
// (poison, folded by every model: 18, 43, 44 and 61).
func tallyCase(t *testing.T) ([]Model, []*events.Event) {
	t.Helper()
	models := []Model{
		tally{name: "a", refuse: map[string]bool{"b17": true, "b60": true}},
		tally{name: "b"},
		tally{name: "c", refuse: map[string]bool{"b42": true, "b43": true}, panics: true},
	}
	var evs []*events.Event
	for i := range 120 {
		ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	return models, evs
}

// TestParallelFolderEqualsSequential folds the same events, poison among
// them (refused by one model or another, after writing), into three stores:
// model after model; with a lane per model; and with lanes, some events
// folded alone (on the caller's goroutine while the lanes are settled, as
// the live runtime does when its pipeline runs dry), a poison one among
// them and a batch where a lane's poison makes Settle fold again events
// folded alone. The stores, the announcements and the poison reported
// must be the same.
func TestParallelFolderEqualsSequential(t *testing.T) {
	models, evs := tallyCase(t)
	type result struct {
		digest string
		outbox []outboxEntry
		poison []uint64
	}
	// alone: the events the third run folds alone (when the lanes are
	// settled; foldDecoded hands the others to the lanes).
	alone := func(i int) bool { return i <= 20 || i == 31 || (i >= 32 && i <= 42) || i >= 100 }
	run := func(parallel, withAlone bool) result {
		st, err := OpenStore("", StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f, err := NewFolder(st, models, true)
		if err != nil {
			t.Fatal(err)
		}
		if parallel {
			f.Parallel()
			defer f.Close()
		}
		var res result
		commit := func() {
			poison, err := f.Settle()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range poison {
				if !errors.Is(p.Err, ErrPoison) {
					t.Fatalf("settle reported %v", p.Err)
				}
				res.poison = append(res.poison, p.Seq)
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			res.outbox = append(res.outbox, f.committedOutbox...)
		}
		for i, ev := range evs {
			fold := func() (bool, error) { return f.Fold(ev) }
			if withAlone {
				fold = func() (bool, error) {
					data, derr := decodePayload(ev)
					return f.foldDecoded(ev, data, derr, alone(i))
				}
			}
			if _, err := fold(); err != nil {
				if !errors.Is(err, ErrPoison) {
					t.Fatal(err)
				}
				res.poison = append(res.poison, ev.Seq)
			}
			if i == 30 || i == 31 || i == 90 { // batches of one event too
				commit()
			}
		}
		commit()
		if res.digest, err = st.Digest(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	seq, par, mixed := run(false, false), run(true, false), run(true, true)
	if want := []uint64{18, 43, 44, 61}; !reflect.DeepEqual(seq.poison, want) {
		t.Fatalf("sequential poison %v, want %v", seq.poison, want)
	}
	if !reflect.DeepEqual(par.poison, seq.poison) {
		t.Errorf("parallel poison %v, sequential %v", par.poison, seq.poison)
	}
	if par.digest != seq.digest {
		t.Errorf("parallel store %s, sequential %s", par.digest, seq.digest)
	}
	if len(seq.outbox) == 0 || !reflect.DeepEqual(par.outbox, seq.outbox) {
		t.Errorf("parallel announced %d, sequential %d (or they differ)", len(par.outbox), len(seq.outbox))
	}
	if !reflect.DeepEqual(mixed.poison, seq.poison) {
		t.Errorf("with events folded alone, poison %v, sequential %v", mixed.poison, seq.poison)
	}
	if mixed.digest != seq.digest {
		t.Errorf("with events folded alone, store %s, sequential %s", mixed.digest, seq.digest)
	}
	if !reflect.DeepEqual(mixed.outbox, seq.outbox) {
		t.Errorf("with events folded alone, announced %d, sequential %d (or they differ)", len(mixed.outbox), len(seq.outbox))
	}
}

// TestCommitRefusesUnsettledPoison: a poison event a lane found must be
// dead-lettered by the caller, so Commit refuses a batch not settled.
func TestCommitRefusesUnsettledPoison(t *testing.T) {
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := NewFolder(st, []Model{tally{name: "a", refuse: map[string]bool{"x": true}}, tally{name: "b"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Parallel()
	defer f.Close()
	ev, err := events.New("outcome.recorded/v1", "p", "test", time.Now(), &events.OutcomeRecorded{BeadID: "x", DurationMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev.Seq = 1
	if _, err := f.Fold(ev); err != nil {
		t.Fatalf("a parallel fold reports poison at Settle, got %v", err)
	}
	if _, err := f.Commit(); err == nil {
		t.Fatal("commit passed an unsettled batch")
	}
	if cp, _ := st.Checkpoint(); cp != 0 {
		t.Fatalf("checkpoint moved to %d past an unsettled poison event", cp)
	}
	poison, err := f.Settle()
	if err != nil || len(poison) != 1 || poison[0].Seq != 1 || !errors.Is(poison[0].Err, ErrPoison) {
		t.Fatalf("settle: %v, %v; want seq 1 poison", poison, err)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if cp, _ := st.Checkpoint(); cp != 1 {
		t.Fatalf("checkpoint %d after the settled commit, want 1", cp)
	}
	if _, ok, _ := st.Model("b").Get([]byte("bead/x")); ok {
		t.Fatal("model b kept the writes of an event model a refused")
	}
}

// firstSeen keeps the bead of the first outcome it folds: every event
// reads that key, which after a commit is only in the committed batch or
// the one being written (so each fold reads lane.writing while it is).
type firstSeen struct{ name string }

func (m firstSeen) Name() string { return m.name }
func (m firstSeen) Version() int { return 1 }
func (m firstSeen) Fold(tx Tx, _ *events.Event, data events.Payload) error {
	o := data.(*events.OutcomeRecorded)
	if _, ok, err := tx.Get([]byte("first")); err != nil || ok {
		return err
	}
	return tx.Set([]byte("first"), []byte(o.BeadID))
}

// TestCloseWhileLanesFold closes a folder the way a cancelled replay (an
// audit whose caller went away) does: a batch handed to CommitAsync still
// being written, and events handed to the lanes that were never settled.
// The lanes read the batch being written (lane.writing) while they fold;
// Close must stop them before it drops that batch, or the two race (under
// -race this test reports it; without, the process can die of a
// concurrent map access). What was committed stays committed, and a new
// folder folds the rest to the state of a sequential fold.
func TestCloseWhileLanesFold(t *testing.T) {
	models := []Model{tally{name: "a"}, firstSeen{name: "b"}, firstSeen{name: "c"}}
	var evs []*events.Event
	for i := range 3000 {
		ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, 0, i, time.UTC),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	fold := func(f *Folder, evs []*events.Event) {
		t.Helper()
		for _, ev := range evs {
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := NewFolder(st, models, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Parallel()
	fold(f, evs[:1000])
	if _, err := f.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := f.CommitAsync(); err != nil {
		t.Fatal(err)
	}
	fold(f, evs[1000:2000]) // handed to the lanes, never settled
	f.Close()
	if cp, err := st.Checkpoint(); err != nil || cp != 1000 {
		t.Fatalf("checkpoint after close: %d, %v; want the batch handed to CommitAsync (1000)", cp, err)
	}
	f, err = NewFolder(st, models, false)
	if err != nil {
		t.Fatal(err)
	}
	fold(f, evs[1000:])
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	want, err := OpenStore("", StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if _, err := FoldEvents(want, models, evs); err != nil {
		t.Fatal(err)
	}
	got, err1 := st.Digest()
	exp, err2 := want.Digest()
	if err1 != nil || err2 != nil || got != exp {
		t.Fatalf("state after a close with busy lanes and a refold differs from a sequential fold (%v, %v)", err1, err2)
	}
}
