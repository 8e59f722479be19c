package crossloop

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestTopCandidatesEqualsSortAndCut: the heap selection keeps exactly the
// first n of a full sort by (score desc, id asc), ties included.
func TestTopCandidatesEqualsSortAndCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		cs := map[string]*candidate{}
		var all []*candidate
		for i := range rng.IntN(300) {
			c := &candidate{id: fmt.Sprintf("pat-%04d", i), s: float64(rng.IntN(20)) / 4} // many ties
			cs[c.id] = c
			all = append(all, c)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].better(all[j]) })
		n := rng.IntN(60)
		want := all[:min(n, len(all))]
		got := topCandidates(cs, n)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d candidates, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d: position %d is %s (%v), want %s (%v)", round, i, got[i].id, got[i].s, want[i].id, want[i].s)
			}
		}
	}
}
