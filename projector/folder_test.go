package projector_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// counter counts outcomes per bead; it fails on bead "poison" after writing,
// and panics on bead "panic".
type counter struct{}

func (counter) Name() string { return "counter" }
func (counter) Version() int { return 1 }
func (counter) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	o, ok := data.(*events.OutcomeRecorded)
	if !ok {
		return nil
	}
	if err := tx.Set([]byte("bead/"+o.BeadID), []byte("seen")); err != nil {
		return err
	}
	v, _, err := tx.Get([]byte("total"))
	if err != nil {
		return err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	if err := tx.Set([]byte("total"), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
		return err
	}
	switch o.BeadID {
	case "scan": // what the batch holds after poison events were taken back
		var keys []string
		if err := tx.Scan([]byte("bead/"), func(k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
			return err
		}
		return tx.Set([]byte("scanned"), []byte(strings.Join(keys, ",")))
	case "poison":
		return errors.New("refused")
	case "panic":
		panic("fold bug")
	}
	return nil
}

func outcomeEv(t *testing.T, seq uint64, bead string) *events.Event {
	t.Helper()
	ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		&events.OutcomeRecorded{BeadID: bead, DurationMs: 1, Success: true})
	if err != nil {
		t.Fatal(err)
	}
	ev.Seq = seq
	return ev
}

func TestFolderDiscardsPoisonWritesAndSkipsRedeliveries(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs := []*events.Event{outcomeEv(t, 1, "a"), outcomeEv(t, 2, "poison"), outcomeEv(t, 3, "panic"), outcomeEv(t, 4, "b"), outcomeEv(t, 5, "scan")}
	poison, err := projector.FoldEvents(st, []projector.Model{counter{}}, evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(poison) != 2 || !errors.Is(poison[0], projector.ErrPoison) || !errors.Is(poison[1], projector.ErrPoison) {
		t.Fatalf("poison = %v, want two poison events", poison)
	}
	r := st.Model("counter")
	total, _, _ := r.Get([]byte("total"))
	if binary.BigEndian.Uint64(total) != 3 {
		t.Fatalf("total = %d, want 3 (poison writes discarded)", binary.BigEndian.Uint64(total))
	}
	if v, _, _ := r.Get([]byte("scanned")); string(v) != "bead/a,bead/b,bead/scan" {
		t.Fatalf("a scan in the batch after poison events saw %q", v)
	}
	if _, ok, _ := r.Get([]byte("bead/poison")); ok {
		t.Fatal("a poison event's write survived")
	}
	if cp, _ := st.Checkpoint(); cp != 5 {
		t.Fatalf("checkpoint %d, want 5", cp)
	}
	// A redelivery at or below the checkpoint changes nothing.
	if _, err := projector.FoldEvents(st, []projector.Model{counter{}}, []*events.Event{outcomeEv(t, 3, "c"), outcomeEv(t, 5, "d")}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := r.Get([]byte("bead/c")); ok {
		t.Fatal("a redelivered event was folded again")
	}
	var keys []string
	if err := r.Scan([]byte("bead/"), func(k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0] != "bead/a" || keys[1] != "bead/b" || keys[2] != "bead/scan" {
		t.Fatalf("keys %v", keys)
	}
}

// scanner records, at bead "scan", the keys a Scan sees: committed keys and
// the uncommitted writes and deletions of the same batch, in order.
type scanner struct{ seen *[]string }

func (scanner) Name() string { return "scanner" }
func (scanner) Version() int { return 1 }
func (s scanner) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	o := data.(*events.OutcomeRecorded)
	switch o.BeadID {
	case "scan":
		*s.seen = nil
		return tx.Scan([]byte("k/"), func(k, v []byte) error { *s.seen = append(*s.seen, string(k)+"="+string(v)); return nil })
	case "del-b":
		return tx.Delete([]byte("k/b"))
	default:
		return tx.Set([]byte("k/"+o.BeadID), []byte(o.BeadID))
	}
}

func TestScanMergesCommittedAndBatchWrites(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var seen []string
	m := []projector.Model{scanner{&seen}}
	if _, err := projector.FoldEvents(st, m, []*events.Event{outcomeEv(t, 1, "b"), outcomeEv(t, 2, "d")}); err != nil {
		t.Fatal(err)
	}
	// committed: b, d; this batch: a, c, delete b, then scan.
	_, err = projector.FoldEvents(st, m, []*events.Event{outcomeEv(t, 3, "c"), outcomeEv(t, 4, "a"), outcomeEv(t, 5, "del-b"), outcomeEv(t, 6, "scan")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"k/a=a", "k/c=c", "k/d=d"}
	if len(seen) != len(want) {
		t.Fatalf("scan saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("scan saw %v, want %v", seen, want)
		}
	}
}

// TestFolderFoldsEachEventIDOnce: a copy of an event stored again at a
// later sequence (re-sent after the stream's duplicate window, or
// published without Nats-Msg-Id) is passed over, in the same batch or a
// later one, inline or with lanes; EventSeq answers where the id was
// folded.
func TestFolderFoldsEachEventIDOnce(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		models := []projector.Model{counter{}, counter2{}}
		first := outcomeEv(t, 1, "a")
		again := *first
		again.Seq = 2
		later := *first
		later.Seq = 4
		f, err := projector.NewFolder(st, models, false)
		if err != nil {
			t.Fatal(err)
		}
		if parallel {
			f.Parallel()
		}
		for _, ev := range []*events.Event{first, &again, outcomeEv(t, 3, "b")} {
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.Settle(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		skipped, err := f.Fold(&later)
		if err != nil || !skipped {
			t.Fatalf("parallel=%v: copy at seq 4 in a later batch: skipped=%v err=%v", parallel, skipped, err)
		}
		if _, err := f.Settle(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		total, _, _ := st.Model("counter").Get([]byte("total"))
		if n := binary.BigEndian.Uint64(total); n != 2 {
			t.Fatalf("parallel=%v: folded %d events, want 2 (a once, b)", parallel, n)
		}
		if f.Duplicates() != 2 {
			t.Fatalf("parallel=%v: duplicates %d, want 2", parallel, f.Duplicates())
		}
		if cp, _ := st.Checkpoint(); cp != 4 {
			t.Fatalf("parallel=%v: checkpoint %d, want 4", parallel, cp)
		}
		// A folder started on a store whose id index holds ids (not
		// only its own) passes the copy over too.
		f2, err := projector.NewFolder(st, models, false)
		if err != nil {
			t.Fatal(err)
		}
		restarted := *first
		restarted.Seq = 5
		if skipped, err := f2.Fold(&restarted); err != nil || !skipped {
			t.Fatalf("parallel=%v: copy at seq 5 after a restart: skipped=%v err=%v", parallel, skipped, err)
		}
		if _, err := f2.Commit(); err != nil {
			t.Fatal(err)
		}
		f2.Close()
		seq, ok, err := st.EventSeq(first.ID)
		if err != nil || !ok || seq != 1 {
			t.Fatalf("parallel=%v: EventSeq = %d %v %v, want 1", parallel, seq, ok, err)
		}
		if _, ok, _ := st.EventSeq("never-appended"); ok {
			t.Fatalf("EventSeq of an unknown id found")
		}
	}
}

// TestFolderFoldsTheCopyOfAPoisonEvent: an id whose first copy was poison
// was not folded; its next copy folds (with lanes too, where the copy was
// first passed over and Settle decides again).
func TestFolderFoldsTheCopyOfAPoisonEvent(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		bad := outcomeEv(t, 1, "poison")
		fixed := outcomeEv(t, 2, "a")
		fixed.ID = bad.ID
		f, err := projector.NewFolder(st, []projector.Model{counter{}, counter2{}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if parallel {
			f.Parallel()
		}
		if _, err := f.Fold(bad); parallel == (err != nil) {
			t.Fatalf("parallel=%v: fold of poison: %v", parallel, err)
		}
		if _, err := f.Fold(fixed); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Settle(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if seq, ok, _ := st.EventSeq(bad.ID); !ok || seq != 2 {
			t.Fatalf("parallel=%v: EventSeq = %d %v, want the copy at 2", parallel, seq, ok)
		}
		if f.Duplicates() != 0 {
			t.Fatalf("parallel=%v: duplicates %d, want 0", parallel, f.Duplicates())
		}
	}
}

// counter2 is counter under another name: a second lane.
type counter2 struct{ counter }

func (counter2) Name() string { return "counter2" }

// liveProbe records, for each event it folds, whether the fold is the
// live store's (projector.LiveFold).
type liveProbe struct{ live *[]bool }

func (liveProbe) Name() string { return "liveprobe" }
func (liveProbe) Version() int { return 1 }
func (m liveProbe) Fold(tx projector.Tx, _ *events.Event, _ events.Payload) error {
	*m.live = append(*m.live, projector.LiveFold(tx))
	return nil
}

// TestLiveFoldIsTheAnnouncingFolder: a folder that announces (the live
// runtime's) folds as the live store's, alone and in lanes; a replay's
// does not.
func TestLiveFoldIsTheAnnouncingFolder(t *testing.T) {
	for _, announce := range []bool{true, false} {
		for _, parallel := range []bool{false, true} {
			st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			var live []bool
			f, err := projector.NewFolder(st, []projector.Model{liveProbe{&live}, counter{}}, announce)
			if err != nil {
				t.Fatal(err)
			}
			if parallel {
				f.Parallel()
			}
			for seq := uint64(1); seq <= 3; seq++ {
				if _, err := f.Fold(outcomeEv(t, seq, fmt.Sprintf("b%d", seq))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.Settle(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			st.Close()
			if len(live) != 3 {
				t.Fatalf("announce=%v parallel=%v: %d folds recorded, want 3", announce, parallel, len(live))
			}
			for i, l := range live {
				if l != announce {
					t.Fatalf("announce=%v parallel=%v: fold %d live=%v", announce, parallel, i, l)
				}
			}
		}
	}
}
