package knowledge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// check compares the index with the set it describes: each candidate of
// ks in exactly one live slot, with its quality; each word's slots those
// whose relevance text holds it; qmax bounding every quality.
func (ix *rankIndex) check(ks *keptSet) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.owner != ks {
		return fmt.Errorf("the index describes another set")
	}
	live := 0
	want := map[string][]int32{} // word → slots
	for slot, s := range ix.sums {
		on := ix.live[slot/64]&(1<<(slot%64)) != 0
		if on != (s != nil) {
			return fmt.Errorf("slot %d: live bit %v, summary %v", slot, on, s != nil)
		}
		if s == nil {
			continue
		}
		live++
		if got, ok := ix.slotOf[s]; !ok || got != int32(slot) {
			return fmt.Errorf("slot %d (%s): slotOf gives %d, %v", slot, s.ID, got, ok)
		}
		if q := quality(s, ix.minRet); ix.q[slot] != q || q > ix.qmax {
			return fmt.Errorf("slot %d (%s): quality %v, want %v (qmax %v)", slot, s.ID, ix.q[slot], q, ix.qmax)
		}
		seen := map[string]bool{}
		for _, w := range strings.Split(s.rel, " ") {
			if !seen[w] {
				seen[w] = true
				want[w] = append(want[w], int32(slot))
			}
		}
	}
	if live != ks.size() || len(ix.slotOf) != live {
		return fmt.Errorf("%d live slots, %d in slotOf, %d candidates", live, len(ix.slotOf), ks.size())
	}
	for _, s := range ks.list() {
		if _, ok := ix.slotOf[s]; !ok {
			return fmt.Errorf("candidate %s has no slot", s.ID)
		}
	}
	for id, w := range ix.strs {
		var got []int32
		if b := ix.dense[id]; b != nil {
			for slot := range 64 * len(b) {
				if b[slot/64]&(1<<(slot%64)) != 0 {
					got = append(got, int32(slot))
				}
			}
		} else {
			got = slices.Clone(ix.post[id])
			slices.Sort(got)
		}
		if !slices.Equal(got, want[w]) {
			return fmt.Errorf("word %q: slots %v, want %v", w, got, want[w])
		}
	}
	if !slices.IsSortedFunc(ix.byStr, func(a, b int32) int { return strings.Compare(ix.strs[a], ix.strs[b]) }) || len(ix.byStr) != len(ix.strs) {
		return fmt.Errorf("the words are not in string order")
	}
	return nil
}

// TestRankIndexIsExhaustive is the ranking index against the exhaustive
// ranking (rankSummaries) on random pools and tasks: pools of 0 to 400
// candidates from a small vocabulary with prefixes of each other (a term
// matching several words), few confidences, statuses and creation times
// (ties of score, then of time), hive and swarm entries from two
// vocabularies and some without one; k from 1 to more than the pool;
// tasks of 0 to 9 terms, some matching nothing. Each pool is then changed
// at random (additions, removals, summaries saved again with other
// outcomes, confidence, status or text) and the index moved to it, 30
// times, and the minimum of retrievals for utility changed now and then.
// Every answer must be the same list: entries, relevances and scores.
func TestRankIndexIsExhaustive(t *testing.T) {
	words := strings.Fields("test tests testing cache caches cach lock locks retry queue parser parse timeout tok token index db sql fix fails deploy")
	taskWords := append(slices.Clone(words), "tes", "testi", "caching", "deployment", "xyzzy", "quorum", "parsers")
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		w := func(ws []string) string { return ws[rng.IntN(len(ws))] }
		vocabs := []*relVocab{{}, {}}
		seq := uint64(0)
		newSum := func(tier string) *summary {
			seq++
			n := 1 + rng.IntN(8)
			lesson := make([]string, n)
			for i := range lesson {
				lesson[i] = w(words)
			}
			statuses := []string{StatusCandidate, StatusEstablished, StatusPromoted}
			s := summaryOf(&Entry{ID: fmt.Sprintf("%s-%05d", tier, seq), Tier: tier, Status: statuses[rng.IntN(3)],
				Scope: "global", Category: w(words), Tags: []string{w(words)}, CreatedSeq: seq,
				CreatedAt: rankT0.Add(time.Duration(rng.IntN(4)) * time.Hour), Confidence: float64(3+rng.IntN(3)) / 10,
				Outcomes: Outcomes{Shown: rng.IntN(6), Helpful: rng.IntN(3)}, Lesson: strings.Join(lesson, " ")})
			switch rng.IntN(5) {
			case 0: // no vocab: the index splits its text
			case 1, 2:
				vocabs[0].index([]*summary{s})
			default:
				vocabs[1].index([]*summary{s})
			}
			return s
		}
		var sums []*summary
		n := rng.IntN(400)
		if seed < 3 {
			n = int(seed) // empty and tiny pools
		}
		for range n {
			tier := TierSwarm
			if rng.IntN(3) == 0 {
				tier = TierHive
			}
			sums = append(sums, newSum(tier))
		}
		order := func(xs []*summary) []*summary {
			slices.SortFunc(xs, mergedOrder)
			return xs
		}
		sums = order(sums)
		cfg := DefaultConfig()
		ks := &keptSet{sums: sums}
		ix := buildRankIndex(ks, cfg.MinRetrievalsForUtility)
		if ix == nil {
			t.Fatalf("seed %d: no index for a list in merged order", seed)
		}
		for round := range 30 {
			if err := ix.check(ks); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			for q := range 25 {
				nt := rng.IntN(10)
				tw := make([]string, nt)
				for i := range tw {
					tw[i] = w(taskWords)
				}
				task := taskTerms(strings.Join(tw, " "))
				k := 1 + rng.IntN(8)
				if q%7 == 0 {
					k = len(sums) + 1 + rng.IntN(3)
				}
				want := rankSummaries(ks.list(), task, k, cfg)
				got, ok := ix.top(ks, task, k, cfg)
				if !ok {
					t.Fatalf("seed %d round %d: the index declined its own set", seed, round)
				}
				if !sameRanking(got, want) {
					t.Fatalf("seed %d round %d: task %q, k %d:\nindex      %s\nexhaustive %s", seed, round, task, k, rankingString(got), rankingString(want))
				}
			}
			if rng.IntN(6) == 0 {
				cfg.MinRetrievalsForUtility = rng.IntN(4)
			}
			// Change the pool and move the index along.
			next := slices.Clone(sums)
			for range 1 + rng.IntN(6) {
				switch r := rng.IntN(10); {
				case r < 3 || len(next) == 0:
					tier := TierSwarm
					if rng.IntN(3) == 0 {
						tier = TierHive
					}
					next = append(next, newSum(tier))
				case r < 5:
					i := rng.IntN(len(next))
					next = slices.Delete(next, i, i+1)
				default:
					i := rng.IntN(len(next))
					s := *next[i]
					s.Outcomes.Shown += rng.IntN(3)
					s.Outcomes.Helpful += rng.IntN(2)
					if rng.IntN(3) == 0 {
						s.Confidence = float64(3+rng.IntN(3)) / 10
					}
					if rng.IntN(4) == 0 {
						s.Status = StatusPromoted
					}
					if rng.IntN(4) == 0 {
						r := newSum(s.Tier)
						s.rel, s.relw, s.vocab = r.rel, r.relw, r.vocab
					}
					next[i] = &s
				}
			}
			sums = order(next)
			nks := &keptSet{sums: sums}
			ix.mu.Lock()
			moved := ix.moveTo(ks, nks)
			ix.mu.Unlock()
			if !moved {
				t.Fatalf("seed %d round %d: the index did not move to a list in merged order", seed, round)
			}
			if _, ok := ix.top(ks, nil, 1, cfg); ok {
				t.Fatalf("seed %d round %d: the index still answers for the set it left", seed, round)
			}
			ks = nks
		}
	}
}

// TestRankIndexDeclinesUnorderedLists checks that a list out of merged
// pool order (its order is the rank order's last key) gets no index.
func TestRankIndexDeclinesUnorderedLists(t *testing.T) {
	a := summaryOf(&Entry{ID: "a", Tier: TierSwarm, CreatedSeq: 2, Lesson: "cache lock"})
	b := summaryOf(&Entry{ID: "b", Tier: TierSwarm, CreatedSeq: 1, Lesson: "cache lock"})
	h := summaryOf(&Entry{ID: "h", Tier: TierHive, CreatedSeq: 3, Lesson: "cache lock"})
	if buildRankIndex(&keptSet{sums: []*summary{a, b}}, 0) != nil {
		t.Fatal("an index for a list out of creation order")
	}
	if buildRankIndex(&keptSet{sums: []*summary{b, h}}, 0) != nil {
		t.Fatal("an index for a list with the hive after the swarm")
	}
	from := &keptSet{sums: []*summary{h, b}}
	ix := buildRankIndex(from, 0)
	if ix == nil {
		t.Fatal("no index for a list in merged order")
	}
	if ix.moveTo(from, &keptSet{sums: []*summary{h, a, b}}) {
		t.Fatal("the index moved to a list out of order")
	}
}

func sameRanking(a, b []scored) bool {
	return slices.EqualFunc(a, b, func(x, y scored) bool { return x.e == y.e && x.rel == y.rel && x.val == y.val })
}

func rankingString(xs []scored) string {
	var sb strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&sb, "%s(%.4f %.6f) ", x.e.ID, x.rel, x.val)
	}
	return sb.String()
}

var rankT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchmarkRankIndexBuild builds the ranking index of a kept set from
// scratch (a merged view's first set), at 150 and 15 000 candidates.
func BenchmarkRankIndexBuild(b *testing.B) {
	for _, n := range []int{150, 15000} {
		b.Run(fmt.Sprint("N=", n), func(b *testing.B) {
			sums := benchSummaries(n)
			for b.Loop() {
				if buildRankIndex(&keptSet{sums: sums}, 0) == nil {
					b.Fatal("no index")
				}
			}
		})
	}
}
