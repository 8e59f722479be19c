package crossloop

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loredev/lore/projector"
)

// TestMergeKeysHoldEveryListOfTheStretch: merge lists created and deleted
// at random over a run of commits, cut into deltas (what each wrote,
// deletions included, as projector.Delta.Keys gives them): the filter of
// MergeKeys started at a state holds every list present in every state
// after it that the deltas fed cover, lists created and deleted within one
// delta included; a delta that does not start where the last one ended
// is refused, and Covers tells the states covered.
func TestMergeKeysHoldEveryListOfTheStretch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	s := memStore{}
	present := map[string]bool{}
	next := 0
	fresh := func() string { next++; return fmt.Sprintf("%sm%05d", prefMerge, next) }
	old := func() string { return fmt.Sprintf("%sm%05d", prefMerge, 1+rng.IntN(next)) }
	set := func(k string, on bool) {
		var ks mergeKeySet
		ks, _ = loadMergeKeySet(s)
		if on && !present[k] {
			ks.add([]byte(k))
			present[k] = true
			s[k] = []byte("x")
		} else if !on && present[k] {
			ks.sub([]byte(k))
			delete(present, k)
			delete(s, k)
		}
		if err := storeMergeKeySet(s, ks); err != nil {
			t.Fatal(err)
		}
	}
	for range 400 {
		set(fresh(), true)
	}
	mk, err := NewMergeKeys(s, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Every state: the lists present at each commit, each delta's keys.
	var states []map[string]bool
	seq := uint64(100)
	for d := range 20 {
		written := map[string]bool{}
		var born []string                // created in this delta
		for c := range 2 + rng.IntN(4) { // commits of the delta
			for range 1 + rng.IntN(30) {
				k := fresh()
				if rng.IntN(2) == 0 {
					k = old()
				}
				set(k, rng.IntN(3) > 0)
				written[k] = true
				if present[k] {
					born = append(born, k)
				}
			}
			if c > 0 { // some lists live only between two commits of the delta
				for _, k := range born[:len(born)/2] {
					set(k, false)
				}
			}
			snap := map[string]bool{}
			for k := range present {
				snap[k] = true
			}
			states = append(states, snap)
		}
		from := seq
		seq += 10
		keys := func(prefix string, fn func(string)) {
			for k := range written {
				if sk := projector.ModelKeyPrefix(ModelName) + k; strings.HasPrefix(sk, prefix) {
					fn(sk)
				}
			}
		}
		if !mk.Feed(from, seq, keys) {
			t.Fatalf("delta %d (%d, %d] refused", d, from, seq)
		}
	}
	for i, st := range states {
		for k := range st {
			if !mk.f.mayHold([]byte(k)) {
				t.Fatalf("state %d: list %q present, not in the filter", i, k)
			}
		}
	}
	if !mk.Covers(100, seq) || !mk.Covers(150, 160) || mk.Covers(99, 150) || mk.Covers(150, seq+1) || mk.Covers(160, 150) {
		t.Fatalf("covers (%d, %d]: wrong answers", mk.from, mk.to)
	}
	if mk.Feed(seq+5, seq+10, func(string, func(string)) {}) {
		t.Fatal("a delta after a hole was taken")
	}
	if mk.Feed(seq, seq+10, func(string, func(string)) {}); !mk.Covers(100, seq+10) {
		t.Fatal("the delta after the last one was refused")
	}
}
