package crossloop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestTopCandidatesEqualsSortAndCut: the selection keeps exactly the
// first n of a full sort by (score desc, id asc), ties included (many
// ties, ties straddling the cut, n above and below the count).
func TestTopCandidatesEqualsSortAndCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var ids []string
		var s []float64
		var docs []uint32
		levels := 1 + rng.IntN(30)
		for i := range rng.IntN(400) {
			ids = append(ids, fmt.Sprintf("pat-%04d", rng.IntN(1000)*1000+i))
			s = append(s, float64(rng.IntN(levels))/4)
			docs = append(docs, uint32(i))
		}
		rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		all := slices.Clone(docs)
		sort.Slice(all, func(i, j int) bool {
			a, b := all[i], all[j]
			if s[a] != s[b] {
				return s[a] > s[b]
			}
			return ids[a] < ids[b]
		})
		n := rng.IntN(80)
		want := all[:min(n, len(all))]
		got := topCandidates(docs, n, s, ids, nil)
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

// TestNthLargest: the quickselect agrees with a sort, duplicates included.
func TestNthLargest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3000 {
		vals := make([]float64, 1+rng.IntN(300))
		levels := 1 + rng.IntN(50)
		for i := range vals {
			vals[i] = float64(rng.IntN(levels)) * 0.37
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		slices.Reverse(sorted)
		k := rng.IntN(len(vals))
		if got := nthLargest(vals, k); got != sorted[k] {
			t.Fatalf("round %d: k=%d of %d: %v, want %v", round, k, len(vals), got, sorted[k])
		}
	}
}
