package promptline

import (
	"math/rand/v2"
	"testing"
)

// flatten's shortcut (flat) returns only what its loop would: random
// texts over the bytes and runes the loop treats apart give the same
// output with and without it.
func TestFlatShortcutAgreesWithLoop(t *testing.T) {
	alphabet := []string{"a", "Z", "0", " ", "  ", "<", "|", ">", "#", "\t", "\n", "\r", "\x00", "\x7f", "~",
		"é", "\u200b", "\u2028", "\u0085", "\U000E0041", "<|", "|>", "\v", "\f"}
	r := rand.New(rand.NewPCG(7, 8))
	shortcuts := 0
	for range 50000 {
		n := r.IntN(12)
		s := ""
		for range n {
			s += alphabet[r.IntN(len(alphabet))]
		}
		for _, collapse := range []bool{true, false} {
			want := rewrite(s, collapse)
			if got := flatten(s, collapse); got != want {
				t.Fatalf("flatten(%q, %v) = %q, rewrite gives %q", s, collapse, got, want)
			}
			if flat(s, collapse) {
				shortcuts++
			}
		}
	}
	if shortcuts == 0 {
		t.Fatal("no text took the shortcut: the test checks nothing")
	}
}
