package knowledge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergedViewMatchesFullDedup moves merged views through random
// changes of a swarm pool (additions anywhere, removals, edits of lesson,
// scope or status) and of the hive, and checks after every step that the
// view's kept list is the dedup of the whole pool (buildMerged).
func TestMergedViewMatchesFullDedup(t *testing.T) {
	words := []string{"cache", "lock", "retry", "queue", "parser", "timeout", "token", "index"}
	for _, threshold := range []float64{0.3, 0.6, 1, 1.5} {
		rng := rand.New(rand.NewPCG(uint64(threshold*10), 9))
		lesson := func() string {
			n := rng.IntN(5)
			out := "use"
			for range n {
				out += " " + words[rng.IntN(len(words))]
			}
			return out
		}
		seq := uint64(0)
		mk := func(tier string) *summary {
			seq++
			scope := "global"
			if rng.IntN(6) == 0 {
				scope = "stack:go"
			}
			s := &summary{ID: fmt.Sprintf("id%05d-%d", rng.IntN(100000), seq), Tier: tier, Status: StatusCandidate, Scope: scope,
				CreatedSeq: seq, features: cachedFeatures(lesson(), nil, "debugging")}
			return s
		}
		var hive, swarm []*summary
		for range 8 {
			hive = append(hive, mk(TierHive))
		}
		c := &poolCache{}
		scopes := setOf("global")
		version := 0
		pool := func(sums []*summary) *cachedPool {
			version++
			return &cachedPool{version: fmt.Sprint(version), sums: sums}
		}
		hp := pool(hive)
		for step := range 600 {
			next := slices.Clone(swarm)
			switch r := rng.IntN(10); {
			case r < 5 || len(next) == 0:
				s := mk(TierSwarm)
				if rng.IntN(4) == 0 && len(next) > 0 {
					s.CreatedSeq = next[rng.IntN(len(next))].CreatedSeq // among the older ones
				}
				i, _ := slices.BinarySearchFunc(next, s, func(a, b *summary) int { return cmpSummary(a, b) })
				next = slices.Insert(next, i, s)
			case r < 7:
				i := rng.IntN(len(next))
				next = slices.Delete(next, i, i+1)
			case r < 9:
				i := rng.IntN(len(next))
				e := *next[i]
				switch rng.IntN(5) {
				case 0:
					e.features = cachedFeatures(lesson(), nil, "debugging")
				case 1:
					e.Scope = "stack:go"
				case 2:
					e.Status = StatusQuarantined
				default: // saved again, its bigrams unchanged (an outcome)
					e.Confidence += 0.1
					e.Outcomes.Shown++
				}
				next[i] = &e
			default:
				i := rng.IntN(len(hive))
				hive = slices.Clone(hive)
				if rng.IntN(2) == 0 {
					e := *hive[i] // saved again, its bigrams unchanged
					e.Confidence += 0.1
					hive[i] = &e
				} else {
					hive[i] = mk(TierHive)
					hive[i].CreatedSeq = hive[max(i-1, 0)].CreatedSeq
				}
				prev := hp
				hp = pool(hive)
				hp.from = prev
			}
			swarm = next
			sp := pool(swarm)
			got := c.mergedKept("s/p/", hp, sp, scopes, dedupKeyOf(scopes, threshold)).list()
			want := buildMerged(hp, sp, scopes, threshold)
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Logf("at %d: got %s/%d %p want %s/%d %p", i, got[i].ID, got[i].CreatedSeq, got[i], want[i].ID, want[i].CreatedSeq, want[i])
					}
				}
				t.Fatalf("threshold %v, step %d: the view keeps %d entries, a full dedup %d", threshold, step, len(got), len(want))
			}
		}
	}
}
