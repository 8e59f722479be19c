package projector

import (
	"sync/atomic"
	"testing"

	"github.com/loredev/lore/events"
)

// readingAhead is everyEvent with a prefetcher that reads each event's
// key from the committed state and counts the events it was handed.
type readingAhead struct {
	everyEvent
	handed, found *atomic.Int64
}

func (m readingAhead) Prefetcher(r Reader) func(*events.Event, events.Payload) {
	return func(ev *events.Event, _ events.Payload) {
		m.handed.Add(1)
		if _, ok, _ := r.Get([]byte("ev/" + ev.ID)); ok {
			m.found.Add(1)
		}
	}
}

// TestPrefetchReadsAheadAndChangesNothing: a folder's prefetchers are
// handed the events its lanes fold, read the committed state beside them
// and stop with the folder; the state folded is the one folded without.
func TestPrefetchReadsAheadAndChangesNothing(t *testing.T) {
	evs := dupLog(t, 600)
	var handed, found atomic.Int64
	m := readingAhead{handed: &handed, found: &found}
	with, without := memStore(t), memStore(t)
	f, err := NewFolder(with, []Model{m}, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Parallel()
	f.Prefetch()
	for i, ev := range evs {
		if _, err := f.Fold(ev); err != nil {
			t.Fatal(err)
		}
		if i%16 == 15 {
			if _, err := f.Settle(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.Settle(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := foldOnto(t, without, []Model{everyEvent{}}, evs, nil, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if a, b := modelDigest(t, with, everyEvent{}), modelDigest(t, without, everyEvent{}); a != b {
		t.Fatalf("folded with prefetchers %s, without %s", a, b)
	}
	// Every event not a duplicate was handed over (none dropped: the
	// prefetcher keeps up), and it read some state committed before.
	if n := handed.Load(); n == 0 || n > int64(len(evs)) || found.Load() == 0 {
		t.Fatalf("prefetcher handed %d of %d events, found %d in the committed state", n, len(evs), found.Load())
	}
}
