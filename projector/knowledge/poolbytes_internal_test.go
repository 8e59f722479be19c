package knowledge

import (
	"fmt"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// TestReplayedPoolBytes: a pool replayed from the journal (replay) carries
// its memory estimate through the steps instead of adding up every
// summary again; it must equal the sum over its summaries, also when one
// entry is saved several times between two reads and when entries are
// added.
func TestReplayedPoolBytes(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := New()
	fold := folderOf(t, st, m)
	submit := func(i int) {
		conf := 0.8
		fold("knowledge.submitted/v1", &events.KnowledgeSubmitted{Category: "tooling", Confidence: &conf,
			Lesson: fmt.Sprintf("lesson %d: retry the flaky call %d with backoff and jitter %d", i, i*7, i*13)})
	}
	for i := range 6 {
		submit(i)
	}
	r := st.Model(ModelName)
	cfg := DefaultConfig()
	scope := sumScope(TierSwarm, "p")
	replays := 0
	for round := range 5 {
		inj, err := m.InjectFrom(r, cfg, InjectOptions{Task: "retry the flaky call", Headroom: 1, Project: "p"}, time.Time{})
		if err != nil || len(inj.Entries) == 0 {
			t.Fatalf("round %d: injection %+v, %v", round, inj, err)
		}
		p, _ := m.cache.lookup(scope, "")
		if p == nil {
			t.Fatalf("round %d: the swarm is not cached", round)
		}
		if p.from != nil {
			replays++
		}
		want := 0
		for _, s := range p.sums {
			want += s.memCost()
		}
		if p.bytes != want {
			t.Fatalf("round %d: the cached swarm estimates %d bytes, its summaries %d", round, p.bytes, want)
		}
		ids := make([]string, len(inj.Entries))
		for i, s := range inj.Entries {
			ids[i] = s.ID
		}
		// Two records (the same entries saved twice) and a new entry.
		for range 2 {
			fold("knowledge.injected/v1", &events.KnowledgeInjected{Task: "t", Headroom: 1, Regime: RegimeFull, EntryIDs: ids})
		}
		submit(100 + round)
	}
	if replays == 0 {
		t.Fatal("no injection replayed its pool from the journal")
	}
}
