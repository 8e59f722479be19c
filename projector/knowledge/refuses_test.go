package knowledge_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// TestRefusesIsTheFoldsRefusal: over a random knowledge history (every
// kind, caps, promotions, quarantines of unknown entries, sweeps, the
// master switch off and on) with malformed configurations among it, the
// fold refuses exactly the events Refuses names, whatever the state: an
// audit's fold set folds Refuses in place of the model (projector.FoldSet).
func TestRefusesIsTheFoldsRefusal(t *testing.T) {
	m := knowledge.New()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := projector.NewFolder(st, []projector.Model{m}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(21, 23))
	bad := []string{`{"swarm_max_entries":-5}`, `{"no_such_key":1}`, `{"dedup_threshold":"high"}`, `{"scope_filter":["nowhere"]}`}
	good := []string{`{"enabled":false}`, `{"enabled":true}`}
	seq := uint64(0)
	refused, configs := 0, 0
	for _, step := range randomWorkload(t, 5, 3000) {
		for _, ev := range step {
			if rng.IntN(40) == 0 { // a configuration before it
				raw := bad[rng.IntN(len(bad))]
				if rng.IntN(2) == 0 {
					raw = good[rng.IntN(len(good))]
				}
				c, err := events.New("knowledge.configured/v1", ev.Project, "test", ev.Time, &events.KnowledgeConfigured{Config: json.RawMessage(raw)})
				if err != nil {
					t.Fatal(err)
				}
				c.ID = fmt.Sprintf("cfg-%d", seq)
				seq++
				c.Seq = seq
				configs++
				refused += check(t, f, m, c)
			}
			e := *ev
			seq++
			e.Seq = seq
			refused += check(t, f, m, &e)
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if refused == 0 || configs < 20 {
		t.Fatalf("%d refusals among %d configurations: the case tests little", refused, configs)
	}
}

// check folds ev and compares the refusal with Refuses; 1 when refused.
func check(t *testing.T, f *projector.Folder, m *knowledge.Model, ev *events.Event) int {
	t.Helper()
	data, derr := events.Check(ev)
	if derr != nil {
		t.Fatalf("%s: %v", ev.Type, derr)
	}
	_, err := f.Fold(ev)
	if err != nil && !errors.Is(err, projector.ErrPoison) {
		t.Fatal(err)
	}
	want := m.Refuses(ev, data)
	if (err != nil) != (want != nil) {
		t.Fatalf("seq %d %s: the fold refused it: %v; Refuses: %v", ev.Seq, ev.Type, err, want)
	}
	if err != nil {
		return 1
	}
	return 0
}
