package projector

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// lister keeps one key per bead, deletes every fifth bead's predecessor,
// and after each event writes how many bead keys a Scan finds and what a
// Get of the newest one read: every fold reads what earlier events wrote,
// committed, being written or folding. It refuses the beads in refuse.
type lister struct {
	name   string
	refuse map[string]bool
}

func (m lister) Name() string { return m.name }
func (m lister) Version() int { return 1 }
func (m lister) Fold(tx Tx, ev *events.Event, data events.Payload) error {
	o := data.(*events.OutcomeRecorded)
	if err := tx.Set([]byte("bead/"+o.BeadID), []byte(ev.ID)); err != nil {
		return err
	}
	i, _ := strconv.Atoi(o.BeadID[1:])
	if i%5 == 0 {
		if err := tx.Delete([]byte(fmt.Sprintf("bead/b%d", i-1))); err != nil {
			return err
		}
	}
	prev, ok, err := tx.Get([]byte(fmt.Sprintf("bead/b%d", i-2)))
	if err != nil {
		return err
	}
	n := 0
	if err := tx.Scan([]byte("bead/"), func(_, _ []byte) error { n++; return nil }); err != nil {
		return err
	}
	if err := tx.Set([]byte("seen/"+o.BeadID), fmt.Appendf(nil, "%d %v %s", n, ok, prev)); err != nil {
		return err
	}
	if m.refuse[o.BeadID] {
		return errors.New("refused " + o.BeadID)
	}
	return nil
}

// TestCommitAsyncEqualsCommit folds the same events (poison and duplicate
// ids among them) into two stores: model after model with Commit, and
// with a lane per model and CommitAsync, so that each batch folds while
// the one before it is written. The stores (read models, checkpoint, id
// index, time index) must be the same.
func TestCommitAsyncEqualsCommit(t *testing.T) {
	models := []Model{
		lister{name: "a", refuse: map[string]bool{"b17": true, "b60": true}},
		lister{name: "b"},
		lister{name: "c", refuse: map[string]bool{"b43": true}},
	}
	var evs []*events.Event
	for i := range 150 {
		ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, 150-i, 0, time.UTC),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%11 == 10 { // the id of an event folded a few events back (maybe in the batch being written)
			ev.ID = evs[i-3].ID
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	type result struct {
		digest string
		mark   AuditMark
		dups   uint64
		ids    map[string]uint64
		index  string // the time index's keys and values
	}
	run := func(async bool) result {
		st, err := OpenStore("", StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f, err := NewFolder(st, models, false)
		if err != nil {
			t.Fatal(err)
		}
		if async {
			f.Parallel()
		}
		defer f.Close()
		commit := func(last bool) {
			if _, err := f.Settle(); err != nil {
				t.Fatal(err)
			}
			if async && !last {
				err = f.CommitAsync()
			} else {
				_, err = f.Commit()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, ev := range evs {
			if _, err := f.Fold(ev); err != nil && !errors.Is(err, ErrPoison) {
				t.Fatal(err)
			}
			if i%7 == 6 || i == 40 || i == 41 {
				commit(false)
			}
		}
		commit(true)
		res := result{dups: f.Duplicates(), ids: map[string]uint64{}}
		if res.digest, err = st.Digest(); err != nil {
			t.Fatal(err)
		}
		if res.mark, err = st.AuditMark(); err != nil {
			t.Fatal(err)
		}
		if err := (dbReader{r: st.db, prefix: []byte(sysAuditBlk)}).Scan(nil, func(k, v []byte) error {
			res.index += fmt.Sprintf("%x=%x ", k, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			seq, ok, err := st.EventSeq(ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				res.ids[ev.ID] = seq
			}
		}
		return res
	}
	sync, async := run(false), run(true)
	if sync.mark.Seq != 150 || sync.dups == 0 || len(sync.ids) == 0 {
		t.Fatalf("sequential run: checkpoint %d, %d duplicates, %d ids", sync.mark.Seq, sync.dups, len(sync.ids))
	}
	if async.digest != sync.digest {
		t.Errorf("read models: CommitAsync %s, Commit %s", async.digest, sync.digest)
	}
	if async.mark != sync.mark {
		t.Errorf("audit mark: CommitAsync %+v, Commit %+v", async.mark, sync.mark)
	}
	if async.dups != sync.dups {
		t.Errorf("duplicates: CommitAsync %d, Commit %d", async.dups, sync.dups)
	}
	for id, seq := range sync.ids {
		if async.ids[id] != seq {
			t.Errorf("id index: %s at %d with CommitAsync, %d with Commit", id, async.ids[id], seq)
		}
	}
	if len(async.ids) != len(sync.ids) {
		t.Errorf("id index: %d ids with CommitAsync, %d with Commit", len(async.ids), len(sync.ids))
	}
	if sync.index == "" || async.index != sync.index {
		t.Errorf("time index blocks: CommitAsync %s, Commit %s", async.index, sync.index)
	}
}

// BenchmarkOneEventCommit: a one-event fold and commit (a lone command's
// write), on a folder that committed only small batches ("fresh") and on
// one that committed a batch of 20 000 events first ("after-large"), as
// the live runtime does after a backlog or a catch-up. Both should cost
// the same: a map emptied for reuse keeps the buckets it grew to, and a
// commit ranges over the batch's maps.
func BenchmarkOneEventCommit(b *testing.B) {
	models := []Model{tally{name: "a"}, tally{name: "b"}, tally{name: "c"}}
	ev := func(i int) *events.Event {
		e, err := events.New("outcome.recorded/v1", "p", "bench", time.Date(2026, 1, 1, 0, 0, 0, i, time.UTC),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", i), DurationMs: 1, Success: true})
		if err != nil {
			b.Fatal(err)
		}
		e.Seq = uint64(i + 1)
		return e
	}
	for _, large := range []bool{false, true} {
		name := "fresh"
		if large {
			name = "after-large"
		}
		b.Run(name, func(b *testing.B) {
			st, err := OpenStore("", StoreOptions{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			f, err := NewFolder(st, models, false)
			if err != nil {
				b.Fatal(err)
			}
			seq := 0
			if large {
				for ; seq < 20_000; seq++ {
					if _, err := f.Fold(ev(seq)); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := f.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if _, err := f.Fold(ev(seq)); err != nil {
					b.Fatal(err)
				}
				seq++
				if _, err := f.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bulky writes size bytes per event under one key per bead, and rewrites
// one shared key with as much: the batch holds each bead's write and the
// shared key's last.
type bulky struct{ size int }

func (m bulky) Name() string { return "bulky" }
func (m bulky) Version() int { return 1 }
func (m bulky) Fold(tx Tx, ev *events.Event, data events.Payload) error {
	v := make([]byte, m.size)
	if err := tx.Set([]byte("shared"), v); err != nil {
		return err
	}
	return tx.Set([]byte("bead/"+data.(*events.OutcomeRecorded).BeadID), v)
}

// A batch is due for its commit once its writes reach maxBatchBytes,
// whatever the number of events; a key written again counts once, and
// the count starts again after the commit. In parallel lanes too, without
// waiting for them: events of maxLanesAhead bytes of payload make the
// loop wait for the lanes after each, so their writes show at once.
func TestBatchFullByBytes(t *testing.T) {
	const per = 1 << 20
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			st, err := OpenStore("", StoreOptions{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f, err := NewFolder(st, []Model{bulky{size: per}, lister{name: "l"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			if parallel {
				f.Parallel()
			}
			defer f.Close()
			// shared + one bead per event: after k events the batch holds
			// k+1 values of per bytes (and the keys and entries' cost).
			want := maxBatchBytes/per - 1
			seq := uint64(0)
			fold := func(n int) {
				for range n {
					seq++
					ev, err := events.New("outcome.recorded/v1", "p", "test", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
						&events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", seq), DurationMs: 1, Success: true})
					if err != nil {
						t.Fatal(err)
					}
					ev.Seq = seq
					// the same payload, padded (JSON allows trailing space)
					ev.Data = append(ev.Data, bytes.Repeat([]byte{' '}, maxLanesAhead)...)
					if _, err := f.Fold(ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			for round := range 2 {
				fold(want - 1)
				if f.Full(1000) {
					t.Fatalf("round %d: full after %d events of %d bytes (bound %d)", round, want-1, per, maxBatchBytes)
				}
				fold(1)
				if !f.Full(1000) {
					t.Fatalf("round %d: not full after %d events of %d bytes (bound %d)", round, want, per, maxBatchBytes)
				}
				if parallel {
					if _, err := f.Settle(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
				if f.Full(1000) {
					t.Fatalf("round %d: full right after a commit", round)
				}
			}
			if !f.Full(0) {
				t.Fatal("Full(0): a batch of no events is always due")
			}
		})
	}
}
