package crossloop

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMergeKeysFindEverySimilar: whenever two signatures are more than t
// similar, one of the first's lookup keys is one of the second's index
// keys (mergeKeys), for thresholds below, at and above the pair scheme's
// bound and sizes on both sides of pairMax; near-duplicates are built by
// editing a few words of a signature.
func TestMergeKeysFindEverySimilar(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vocab := strings.Fields("a b c d e f g h i j k l m n o p q r s t u v w x y z")
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return w
	}
	similar := 0
	for round := range 20000 {
		th := []float64{0.5, 0.7, 0.8, 0.9}[round%4]
		a := words(1 + rng.IntN(120)) // up to ≈ 110 distinct bigrams: both sides of pairMax and pairMax/t
		b := slices.Clone(a)
		for range rng.IntN(3) { // a few edits
			switch i := rng.IntN(len(b) + 1); rng.IntN(3) {
			case 0:
				b = slices.Insert(b, i, vocab[rng.IntN(len(vocab))])
			case 1:
				if i < len(b) {
					b = slices.Delete(b, i, i+1)
				}
			default:
				if i < len(b) {
					b[i] = vocab[rng.IntN(len(vocab))]
				}
			}
		}
		if round%10 == 0 {
			b = words(rng.IntN(4))
		}
		sa, sb := strings.Join(a, " "), strings.Join(b, " ")
		if !ShouldMerge(Similarity(sa, sb), th) {
			continue
		}
		similar++
		look := mergeKeys(globalOrder(sortedBigrams(sa)), th, true)
		idx := mergeKeys(globalOrder(sortedBigrams(sb)), th, false)
		if !slices.ContainsFunc(look, func(k string) bool { return slices.Contains(idx, k) }) {
			t.Fatalf("t %v: %q and %q (similarity %v) share no key", th, sa, sb, Similarity(sa, sb))
		}
	}
	if similar < 2000 {
		t.Fatalf("only %d similar pairs", similar)
	}
}
