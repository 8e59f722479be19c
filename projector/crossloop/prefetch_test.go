package crossloop_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// readLog records the merge-list keys read through it.
type readLog struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (l *readLog) note(k []byte) {
	if strings.HasPrefix(string(k), crossloop.PrefMerge) {
		l.mu.Lock()
		l.keys[string(k)] = true
		l.mu.Unlock()
	}
}

type loggedReader struct {
	projector.Reader
	log *readLog
}

func (r loggedReader) Get(k []byte) ([]byte, bool, error) { r.log.note(k); return r.Reader.Get(k) }

type loggedTx struct {
	projector.Tx
	log *readLog
}

func (t loggedTx) Get(k []byte) ([]byte, bool, error) { t.log.note(k); return t.Tx.Get(k) }

// completionsLogged records the merge lists the model's fold of a loop's
// completion reads.
type completionsLogged struct {
	*crossloop.Model
	log *readLog
}

func (m completionsLogged) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	if _, ok := data.(*events.LoopCompleted); ok {
		tx = loggedTx{tx, m.log}
	}
	return m.Model.Fold(tx, ev, data)
}

// TestPrefetcherReadsWhatCompletionsRead: fed the fold's events in order,
// the prefetcher reads every merge list the fold of the loops' completions
// reads, from the committed state and the events not committed yet (the
// loops' starts and iterations): its extraction is the fold's. Committed
// after every event, exactly; every 50 events, all but a few (a pattern made or
// archived in the batch can change which lists a check reads).
func TestPrefetcherReadsWhatCompletionsRead(t *testing.T) {
	seeds, err := benchkit.SeedPatterns(1, 2000)
	if err != nil {
		t.Fatal(err)
	}
	g, err := benchkit.Workload{Seed: 3, Loops: 16, Prefix: "pf"}.Generate(10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, every := range []int{1, 50} {
		model := crossloop.New(crossloop.Config{})
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		folded, read := &readLog{keys: map[string]bool{}}, &readLog{keys: map[string]bool{}}
		f, err := projector.NewFolder(st, []projector.Model{completionsLogged{model, folded}}, false)
		if err != nil {
			t.Fatal(err)
		}
		seq := uint64(0)
		fold := func(evs []*events.Event) {
			for _, ev := range evs {
				c := *ev
				seq++
				c.Seq = seq
				if _, err := f.Fold(&c); err != nil && !errors.Is(err, projector.ErrPoison) {
					t.Fatal(err)
				}
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		fold(seeds)
		clear(folded.keys)
		prefetch := model.Prefetcher(loggedReader{st.Model(crossloop.ModelName), read})
		completions := 0
		for i := 0; i < len(g.Events); i += every {
			batch := g.Events[i:min(i+every, len(g.Events))]
			for _, ev := range batch {
				data, err := events.Check(ev)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := data.(*events.LoopCompleted); ok {
					completions++
				}
				prefetch(ev, data)
			}
			fold(batch)
		}
		missed := 0
		for k := range folded.keys {
			if !read.keys[k] {
				missed++
			}
		}
		if completions < 20 || len(folded.keys) < 50 {
			t.Fatalf("every %d: %d completions read %d merge lists: the case tests little", every, completions, len(folded.keys))
		}
		if every == 1 && missed > 0 || missed*50 > len(folded.keys) {
			t.Errorf("committed every %d events: the prefetcher missed %d of the %d merge lists the completions read", every, missed, len(folded.keys))
		}
		t.Logf("committed every %d events: %d completions read %d merge lists, %d of them not read ahead", every, completions, len(folded.keys), missed)
		f.Close()
	}
}
