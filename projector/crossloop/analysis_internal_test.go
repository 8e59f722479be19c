package crossloop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortedBigramsIsBigrams checks the map-free sortedBigrams and the
// memo's one-pass analysis against Bigrams and Terms: empty and one-word
// texts, repeated bigrams, punctuation and case.
func TestSortedBigramsIsBigrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	vocab := []string{"nil", "Map", "map", "x_1", "é", "panic:", "--", "read", "of"}
	texts := []string{"", " ", "--", "one", "One!", "a a a a", "a b a b a b"}
	for range 2000 {
		ws := make([]string, rng.IntN(7))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		texts = append(texts, strings.Join(ws, " "))
	}
	for _, s := range texts {
		var want []string
		for b := range Bigrams(s) {
			want = append(want, b)
		}
		slices.Sort(want)
		got := sortedBigrams(s)
		if got == nil || !slices.Equal(got, want) {
			t.Fatalf("sortedBigrams(%q) = %q, want %q", s, got, want)
		}
		var m memo
		si := m.search(s)
		tf, n := Terms(s)
		if !slices.Equal(si.bigrams, want) || si.n != n || fmt.Sprint(si.tf) != fmt.Sprint(tf) {
			t.Fatalf("memo analysis of %q: %v %d %q, want %v %d %q", s, si.tf, si.n, si.bigrams, tf, n, want)
		}
	}
}
