package projector_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// TestAuditRangesKeepEveryEventOfTheTime folds events with random
// (backfilled) times and checks, for random bounds, that the ranges an
// audit reads hold every event whose time is <= the bound after the start,
// that the mark's latest time is the latest folded, and that blocks of
// later events only are passed over.
func TestAuditRangesKeepEveryEventOfTheTime(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	times := make([]time.Time, n+1) // by sequence
	evs := make([]*events.Event, 0, n)
	for seq := uint64(1); seq <= n; seq++ {
		at := base.Add(time.Duration(seq) * time.Second)
		if rng.IntN(10) == 0 {
			at = at.Add(-time.Duration(rng.IntN(2000)) * time.Second) // backfilled
		}
		times[seq] = at
		ev := outcomeEv(t, seq, fmt.Sprint("b", seq))
		ev.Time = at
		evs = append(evs, ev)
	}
	models := []projector.Model{counter{}}
	const upTo = 2500                          // the store's checkpoint: later events are not indexed
	for batch := evs[:upTo]; len(batch) > 0; { // commits of random sizes
		k := min(len(batch), 1+rng.IntN(400))
		if _, err := projector.FoldEvents(st, models, batch[:k]); err != nil {
			t.Fatal(err)
		}
		batch = batch[k:]
	}
	mark, err := st.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	latest := times[1]
	for seq := 1; seq <= upTo; seq++ {
		if times[seq].After(latest) {
			latest = times[seq]
		}
	}
	if mark.Seq != upTo || !mark.Complete || !mark.MaxTime.Equal(latest) {
		t.Fatalf("mark %+v, want seq %d, complete, latest time %v", mark, upTo, latest)
	}
	if mark.UsableFor(&times[1], 0) || !mark.UsableFor(&latest, 0) || mark.UsableFor(nil, upTo-1) || !mark.UsableFor(nil, upTo) {
		t.Fatalf("mark %+v: wrong usability", mark)
	}
	skipped := false
	for i := 0; i < 200; i++ {
		after := uint64(rng.IntN(n))
		bound := base.Add(time.Duration(rng.IntN(n+100)) * time.Second)
		if i%2 == 0 { // the earliest time of a block: the bound is inclusive
			b := uint64(rng.IntN(upTo >> projector.AuditBlockShift))
			bound = times[max(1, b<<projector.AuditBlockShift)]
			for seq := max(1, b<<projector.AuditBlockShift); seq < (b+1)<<projector.AuditBlockShift; seq++ {
				if times[seq].Before(bound) {
					bound = times[seq]
				}
			}
		}
		ranges, err := st.AuditRanges(after, n, &bound)
		if err != nil {
			t.Fatal(err)
		}
		in := func(seq uint64) bool {
			for _, r := range ranges {
				if r.From <= seq && seq <= r.To {
					return true
				}
			}
			return false
		}
		read := 0
		for seq := after + 1; seq <= n; seq++ {
			if in(seq) {
				read++
			} else if !times[seq].After(bound) || seq > upTo {
				t.Fatalf("audit after %d as of %v: seq %d (time %v, indexed %v) is not read", after, bound, seq, times[seq], seq <= upTo)
			}
		}
		for _, r := range ranges {
			if r.From <= after || r.To > n || r.From > r.To {
				t.Fatalf("range %+v outside (%d, %d]", r, after, n)
			}
		}
		if read < n-int(after) {
			skipped = true
		}
	}
	if !skipped {
		t.Fatal("no audit passed over a block: the index was not used")
	}
}
