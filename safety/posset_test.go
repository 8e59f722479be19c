package safety

import "testing"

// TestPosSetFillAndFirst checks the word-wide operations of a position
// set (fill, first, next) against adding and testing positions one by
// one, at every word boundary.
func TestPosSetFillAndFirst(t *testing.T) {
	const n = 200
	words := n/64 + 1
	for from := 0; from <= n; from++ {
		for _, to := range []int{from, from + 1, 63, 64, 65, 127, 128, n} {
			if to < from || to > n {
				continue
			}
			got, want := make(posSet, words), make(posSet, words)
			got.fill(from, to)
			for i := from; i <= to; i++ {
				want.add(i)
			}
			for w := range want {
				if got[w] != want[w] {
					t.Fatalf("fill(%d, %d): word %d is %064b, want %064b", from, to, w, got[w], want[w])
				}
			}
			if f := got.first(); f != from {
				t.Fatalf("first after fill(%d, %d) = %d", from, to, f)
			}
		}
	}
	sparse := make(posSet, words)
	for _, i := range []int{0, 1, 63, 64, 130, n} {
		sparse.add(i)
	}
	for i := 0; i <= n+64; i++ {
		want := -1
		for j := i; j <= n; j++ {
			if sparse.has(j) {
				want = j
				break
			}
		}
		if got := sparse.next(i); got != want {
			t.Fatalf("next(%d) = %d, want %d", i, got, want)
		}
	}
	if f := make(posSet, words).first(); f != -1 {
		t.Fatalf("first of an empty set = %d, want -1", f)
	}
}
