package crossloop

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMergeFilterAnswersAsTheStore folds random events (index, re-index,
// unindex, archive, merge checks) into two stores with one filter pool,
// as one model folds into the live store and an audit's replay, and
// discards some events after they gave their filter back (a batch lost):
// every merge check finds what a check reading every list finds, the
// store's record of its set of merge lists is the fingerprint of the
// lists it holds, and the filter spares reads.
func TestMergeFilterAnswersAsTheStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	pool := &filterPool{}
	vocab := strings.Fields("alpha beta gamma delta eps zeta eta theta iota kappa")
	sig := func() string {
		ws := make([]string, 2+rng.IntN(12))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	type side struct {
		s        memStore
		st       *Stats
		live     map[string]bool
		archived map[string]bool
	}
	sides := []*side{{memStore{}, NewStats(), map[string]bool{}, map[string]bool{}},
		{memStore{}, NewStats(), map[string]bool{}, map[string]bool{}}}
	const th = 0.8
	filtered, checks := 0, 0
	for ev := range 1500 {
		sd := sides[rng.IntN(2)]
		var undo *side
		if rng.IntN(8) == 0 { // this event's batch is lost after it folded
			st := *sd.st
			undo = &side{maps.Clone(sd.s), &st, maps.Clone(sd.live), maps.Clone(sd.archived)}
		}
		m := memo{filter: mergeFilterState{pool: pool}}
		typ := []string{TypeError, archivedType(TypeError)}[rng.IntN(2)]
		probe := sig()
		want, err := mergeMatches(sd.s, typ, probe, th, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mergeMatches(sd.s, typ, probe, th, &m)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("event %d: matches of %q: %v with the filter, %v reading every list", ev, probe, got, want)
		}
		checks++
		if m.filter.f != nil {
			for _, k := range m.signature(probe, th).lookup {
				if _, ok := sd.s[string(mergeKey(typ, k))]; !ok && !m.filter.f.mayHold(mergeKey(typ, k)) {
					filtered++
				}
			}
		}
		for range 1 + rng.IntN(4) {
			id := fmt.Sprintf("pat-%03d", rng.IntN(150))
			p := &Pattern{ID: id, Type: TypeError, ErrorType: "E", ErrorPattern: sig(), FixDescription: "fix", Failed: 1}
			switch {
			case sd.archived[id]:
				if err := unindexArchived(sd.s, TypeError, id, &m); err != nil {
					t.Fatal(err)
				}
				delete(sd.archived, id)
			case sd.live[id] && rng.IntN(3) == 0:
				if err := unindexPattern(sd.s, sd.st, id, &m); err != nil {
					t.Fatal(err)
				}
				delete(sd.live, id)
				if rng.IntN(2) == 0 {
					if err := indexArchived(sd.s, p, th, &m); err != nil {
						t.Fatal(err)
					}
					sd.archived[id] = true
				}
			default:
				if err := indexPattern(sd.s, sd.st, p, th, &m, !sd.live[id]); err != nil {
					t.Fatal(err)
				}
				sd.live[id] = true
			}
		}
		if err := m.flush(sd.s); err != nil {
			t.Fatal(err)
		}
		m.release(true)
		var scanned mergeKeySet
		if err := sd.s.Scan([]byte(prefMerge), func(k, _ []byte) error { scanned.add(k); return nil }); err != nil {
			t.Fatal(err)
		}
		rec, err := loadMergeKeySet(sd.s)
		if err != nil {
			t.Fatal(err)
		}
		if rec != scanned {
			t.Fatalf("event %d: record %+v, lists present %+v", ev, rec, scanned)
		}
		if undo != nil {
			*sd = *undo
		}
	}
	if filtered == 0 {
		t.Fatalf("%d merge checks: the filter never spared a read", checks)
	}
}
