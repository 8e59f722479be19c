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
		var ids []string
		var s []float64
		var docs []uint32
		for i := range rng.IntN(300) {
			ids = append(ids, fmt.Sprintf("pat-%04d", rng.IntN(1000)*1000+i))
			s = append(s, float64(rng.IntN(20))/4) // many ties
			docs = append(docs, uint32(i))
		}
		rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		better := func(a, b uint32) bool {
			if s[a] != s[b] {
				return s[a] > s[b]
			}
			return ids[a] < ids[b]
		}
		all := append([]uint32(nil), docs...)
		sort.Slice(all, func(i, j int) bool { return better(all[i], all[j]) })
		n := rng.IntN(60)
		want := all[:min(n, len(all))]
		got := topCandidates(docs, n, better)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d candidates, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d: position %d is %s (%v), want %s (%v)", round, i, ids[got[i]], s[got[i]], ids[want[i]], s[want[i]])
			}
		}
	}
}
