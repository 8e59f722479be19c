package projector

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// TestIDFilterChainHoldsEveryID: past its first part's capacity the filter
// grows a chain of parts; every id added is held, and ids never added are
// held at a rate within the chain's bound.
func TestIDFilterChainHoldsEveryID(t *testing.T) {
	f := newIDChain(1000)
	const n = 7001 // parts of 1 000, 2 000, 4 000 and 8 000 ids
	for i := range n {
		f.add(fmt.Sprintf("id-%d", i))
	}
	if len(f.parts) != 4 {
		t.Fatalf("%d parts after %d ids from a first part of 1 000, want 4", len(f.parts), n)
	}
	for i := range n {
		if !f.mayHold(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("id-%d added and not held", i)
		}
	}
	fp := 0
	const probes = 100_000
	for i := range probes {
		if f.mayHold(fmt.Sprintf("other-%d", i)) {
			fp++
		}
	}
	// The chain's bound is idFilterFP; the last part is not full, so the
	// rate is below it (with room for the sample's spread).
	if rate := float64(fp) / probes; rate > idFilterFP {
		t.Fatalf("false positives %.4f, above the bound %.2f", rate, idFilterFP)
	}
}

// TestIDFilterAcrossFoldersAndReopens: a store's id filter outlives its
// folders, so a replay in windows (a folder each) passes over the copies
// of ids folded in an earlier window; reopened, the store has none until
// its folders' reads of absent ids reach a quarter of the index, then
// builds it by a scan, mid-batch: copies of ids committed before the scan,
// of ids folded but not yet committed at the scan, and of ids folded after
// it are all passed over. Committed each way (Commit, CommitAsync).
func TestIDFilterAcrossFoldersAndReopens(t *testing.T) {
	for _, async := range []bool{false, true} {
		dir := t.TempDir()
		st, err := OpenStore(dir, StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		models := []Model{tally{name: "t"}}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		ev := func(seq uint64, id string) *events.Event {
			e, err := events.New("outcome.recorded/v1", "p", "test", at, &events.OutcomeRecorded{BeadID: fmt.Sprintf("b%d", seq), DurationMs: 1, Success: true})
			if err != nil {
				t.Fatal(err)
			}
			e.Seq, e.ID = seq, id
			return e
		}
		id := func(i int) string { return fmt.Sprintf("ev-%d", i) }
		dups := 0
		// fold folds seqs [from, to] (ids from id(seq), or copy(seq)'s
		// when it names one), committing every 30 events, in one folder.
		lastCommit := uint64(0)
		fold := func(st *Store, from, to uint64, copy func(seq uint64) string, check func(seq uint64)) {
			t.Helper()
			f, err := NewFolder(st, models, false)
			if err != nil {
				t.Fatal(err)
			}
			for seq := from; seq <= to; seq++ {
				name := copy(seq)
				copied := name != ""
				if !copied {
					name = id(int(seq))
				}
				skipped, err := f.Fold(ev(seq, name))
				if err != nil {
					t.Fatal(err)
				}
				if skipped != copied {
					t.Fatalf("async=%v: seq %d (id %s): skipped=%v, want %v", async, seq, name, skipped, copied)
				}
				if copied {
					dups++
				}
				if check != nil {
					check(seq)
				}
				if seq%30 == 0 || seq == to {
					if async && seq != to {
						err = f.CommitAsync()
					} else {
						_, err = f.Commit()
					}
					if err != nil {
						t.Fatal(err)
					}
					lastCommit = seq
				}
			}
			f.Close()
		}
		fold(st, 1, 400, func(uint64) string { return "" }, nil)
		if st.ids.Load() == nil {
			t.Fatal("a store folded from empty has no id filter")
		}
		// A second window, another folder: copies of the first window's ids.
		fold(st, 401, 500, func(seq uint64) string {
			return map[uint64]string{420: id(3), 450: id(399), 480: id(440)}[seq]
		}, nil)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}

		st, err = OpenStore(dir, StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.ids.Load() != nil {
			t.Fatal("a reopened store has an id filter before any read")
		}
		// The filter is built by a scan once reads of absent ids reach a
		// quarter of the index, during this run; the last copies come
		// after it: of an id committed before the reopen, of one folded
		// and not yet committed when it was built (pending), and of the
		// one whose read built it (built).
		built, pending := uint64(0), uint64(0)
		fold(st, 501, 900, func(seq uint64) string {
			if seq < 880 || built == 0 {
				return ""
			}
			return map[uint64]string{880: id(7), 885: id(int(pending)), 890: id(int(built))}[seq]
		}, func(seq uint64) {
			if built == 0 && st.ids.Load() != nil {
				built, pending = seq, lastCommit+1
			}
		})
		if built == 0 || built >= 880 {
			t.Fatalf("async=%v: the reopened store's filter was built at seq %d, want before the copies at 880", async, built)
		}
		if pending >= built {
			t.Fatalf("async=%v: the filter was built at seq %d, right after a commit: no id was pending", async, built)
		}
		v, ok, err := st.Model("t").Get([]byte("total"))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got, want := binary.BigEndian.Uint64(v), uint64(900-dups); got != want || dups != 6 {
			t.Fatalf("async=%v: folded %d events, want %d (900 less %d copies, want 6)", async, got, want, dups)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
