package knowledge

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// contradictionsNaive is contradictions without the filter on the terms an
// entry must hold: every entry sharing a tag is split and searched.
func contradictionsNaive(ct []string, cnorm string, existing []Existing) []int {
	if len(ct) == 0 {
		return nil
	}
	cw := words(cnorm)
	var out []int
	for i, ex := range existing {
		if !sharesSorted(ct, ex.feat.ctags) {
			continue
		}
		ew := words(ex.feat.cnorm)
		for _, p := range negationPairs {
			if overlap(contextWords(cw, p[0]), contextWords(ew, p[1])) ||
				overlap(contextWords(cw, p[1]), contextWords(ew, p[0])) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// TestContradictionsFilterChangesNothing: on random lessons built from the
// negation terms, near-words ("user", "avoided", "nevertheless") and
// shared context words, the contradictions found are those of the naive
// search.
func TestContradictionsFilterChangesNothing(t *testing.T) {
	vocab := []string{"always", "never", "must", "must not", "should not", "enable", "disable", "use", "avoid",
		"don't use", "recommended", "not recommended", "user", "avoided", "nevertheless", "disabled", "useful",
		"the", "cache", "docker", "tests", "in", "ci", "typescript", "retries", "timeouts", "mocks", "go"}
	rng := rand.New(rand.NewPCG(1, 2))
	lesson := func() string {
		s := ""
		for i := range 3 + rng.IntN(10) {
			if i > 0 {
				s += " "
			}
			s += vocab[rng.IntN(len(vocab))]
		}
		return s
	}
	found := 0
	for round := range 300 {
		var existing []Existing
		for range 40 {
			l := lesson()
			f := features{ctags: contradictionTagList(l, []string{"ci"}), cnorm: normalizeText(l)}
			existing = append(existing, Existing{feat: &f})
		}
		c := lesson()
		ct, cn := contradictionTagList(c, []string{"ci"}), normalizeText(c)
		got, want := contradictions(ct, cn, existing), contradictionsNaive(ct, cn, existing)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, %q: got %v, want %v", round, c, got, want)
		}
		found += len(want)
	}
	if found == 0 {
		t.Fatal("no contradiction in any round: the test exercises nothing")
	}
}
