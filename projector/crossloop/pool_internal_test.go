package crossloop

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestPrunedPoolEqualsScan: the pool chosen from what prunedPool keeps is
// the pool of the full scan, exact scores and first metas included, on
// random term lists with heavy ties (few distinct tf and lengths, shared
// and disjoint docs, pools below and above the number of docs).
func TestPrunedPoolEqualsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pruned := 0
	for round := range 400 {
		docs := 50 + rng.IntN(3000)
		ids := make([]string, docs)
		for i := range ids {
			ids[i] = "pat-" + string(rune('a'+rng.IntN(26))) + string(rune('a'+i%26)) + strconv.Itoa(i)
		}
		m := 1 + rng.IntN(7)
		lists := make([]*termPostings, m)
		idfs := make([]float64, m)
		for j := range lists {
			p := 0.05 + rng.Float64()*0.5
			e := &termPostings{}
			for d := range docs {
				if rng.Float64() < p {
					e.ps = append(e.ps, cachedPosting{doc: uint32(d), meta: uint32(rng.IntN(5)),
						tf: uint32(1 + rng.IntN(1+round%3)), dl: uint32(8 + rng.IntN(1+round%4*3))})
				}
			}
			rng.Shuffle(len(e.ps), func(a, b int) { e.ps[a], e.ps[b] = e.ps[b], e.ps[a] })
			lists[j] = e
			idfs[j] = 0.5 + float64(rng.IntN(4))*0.4
		}
		avgdl := 9 + rng.Float64()*3
		n := 1 + rng.IntN(300)
		full := getScratch(docs)
		for j, e := range lists {
			for _, p := range e.ps {
				if !full.seen[p.doc] {
					full.seen[p.doc], full.meta[p.doc] = true, p.meta
					full.touched = append(full.touched, p.doc)
				}
				full.s[p.doc] += bm25Term(idfs[j], float64(p.tf), float64(p.dl), avgdl)
			}
		}
		want := topCandidates(full.touched, n, full.s, ids, nil)
		wantS, wantM := pick(want, full)
		full.release()
		sc := getScratch(docs)
		if prunedPool(sc, lists, idfs, avgdl, n) {
			pruned++
			if len(sc.touched) > 0 && len(sc.touched) < len(want) {
				t.Fatalf("round %d: kept %d docs, pool %d", round, len(sc.touched), len(want))
			}
		} else {
			for j, e := range lists {
				for _, p := range e.ps {
					if !sc.seen[p.doc] {
						sc.seen[p.doc], sc.meta[p.doc] = true, p.meta
						sc.touched = append(sc.touched, p.doc)
					}
					sc.s[p.doc] += bm25Term(idfs[j], float64(p.tf), float64(p.dl), avgdl)
				}
			}
		}
		got := topCandidates(sc.touched, n, sc.s, ids, nil)
		gotS, gotM := pick(got, sc)
		sc.release()
		if !slices.Equal(got, want) || !slices.Equal(gotS, wantS) || !slices.Equal(gotM, wantM) {
			t.Fatalf("round %d (m %d, n %d): pool differs\ngot  %v\nwant %v", round, m, n, got, want)
		}
	}
	if pruned < 100 {
		t.Fatalf("only %d of 400 rounds pruned", pruned)
	}
}

func pick(docs []uint32, sc *scratch) ([]float64, []uint32) {
	s, m := make([]float64, len(docs)), make([]uint32, len(docs))
	for i, d := range docs {
		s[i], m[i] = sc.s[d], sc.meta[d]
	}
	return s, m
}
