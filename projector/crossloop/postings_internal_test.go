package crossloop

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// memStore is an in-memory Store and Reader.
type memStore map[string][]byte

func (m memStore) Get(k []byte) ([]byte, bool, error) { v, ok := m[string(k)]; return v, ok, nil }
func (m memStore) Set(k, v []byte) error              { m[string(k)] = append([]byte(nil), v...); return nil }
func (m memStore) Delete(k []byte) error              { delete(m, string(k)); return nil }
func (m memStore) Scan(p []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k := range m {
		if strings.HasPrefix(k, string(p)) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// TestPostingChunks indexes, re-indexes and removes patterns at random
// and checks the chunked postings hold exactly each indexed pattern's
// terms (tf, length, meta: refreshed too), once, in the chunk its doc info records, chunks
// (body and tail) bounded, a tail only in a term's last chunk, document
// frequencies right, and nothing left once all are gone. The operations
// go through one memo flushed after every one, or every 50 (as the
// operations of one event: term records and tails written back at its
// end).
func TestPostingChunks(t *testing.T) {
	for _, every := range []int{1, 50} {
		t.Run(fmt.Sprint("flush every ", every), func(t *testing.T) { testPostingChunks(t, every) })
	}
}

func testPostingChunks(t *testing.T, every int) {
	rng := rand.New(rand.NewPCG(3, 3))
	var m memo
	s := memStore{}
	st := NewStats()
	vocab := make([]string, 40)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("word%c%c", 'a'+i%26, 'a'+i/26)
	}
	text := func() string {
		ws := make([]string, 3+rng.IntN(8))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	live := map[string]*Pattern{}
	maxChunk := uint32(0)
	verify := func() {
		t.Helper()
		if err := m.flush(s); err != nil {
			t.Fatal(err)
		}
		type post struct {
			tf, n int
			meta  string
		}
		want := map[string]map[string]post{} // term → id → posting
		for id, p := range live {
			tf, n := Terms(p.SearchText())
			meta := string(postingMeta(p, len(sortedBigrams(p.SearchText()))))
			for w, c := range tf {
				if want[w] == nil {
					want[w] = map[string]post{}
				}
				want[w][id] = post{c, n, meta}
			}
		}
		got := map[string]map[string]post{}
		chunkOf := map[string]uint32{}
		inChunk := map[string]int{}
		tails := map[string][]uint32{} // term → the chunks with a tail
		err := s.Scan([]byte(prefPosting), func(k, v []byte) error {
			rest := string(k[len(prefPosting):])
			w, ch := rest[:len(rest)-5], []byte(rest[len(rest)-4:])
			n2 := uint32(ch[0])<<24 | uint32(ch[1])<<16 | uint32(ch[2])<<8 | uint32(ch[3])
			chunk := n2 / 2 // odd: the chunk's tail
			if len(v) == 0 {
				t.Fatalf("empty chunk %q", k)
			}
			if n2%2 == 1 {
				tails[w] = append(tails[w], chunk)
			}
			n := 0
			for len(v) > 0 {
				id, tf, dl, meta, r, err := nextPosting(v)
				if err != nil {
					return err
				}
				v, n = r, n+1
				if got[w] == nil {
					got[w] = map[string]post{}
				}
				if _, dup := got[w][string(id)]; dup {
					t.Fatalf("%s: %s twice", w, id)
				}
				got[w][string(id)] = post{int(tf), int(dl), string(meta)}
				chunkOf[w+"\x00"+string(id)] = chunk
				inChunk[fmt.Sprint(w, chunk)]++
				maxChunk = max(maxChunk, chunk)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for c, n := range inChunk {
			if n > chunkCap {
				t.Fatalf("chunk %s holds %d postings", c, n)
			}
		}
		for w := range want {
			for id, p := range want[w] {
				if got[w][id] != p {
					t.Fatalf("posting %s/%s = %+q, want %+q", w, id, fmt.Sprint(got[w][id]), fmt.Sprint(p))
				}
			}
		}
		for w := range got {
			for id := range got[w] {
				if _, ok := want[w][id]; !ok {
					t.Fatalf("posting %s/%s of no pattern", w, id)
				}
			}
		}
		for w := range want {
			d, err := loadDF(s, w)
			if err != nil {
				t.Fatal(err)
			}
			if d.df != len(want[w]) {
				t.Fatalf("df(%s) = %d, want %d", w, d.df, len(want[w]))
			}
			if len(tails[w]) > 1 || len(tails[w]) == 1 && tails[w][0] != d.last {
				t.Fatalf("%s: tails in chunks %v, last chunk %d", w, tails[w], d.last)
			}
			if d.n != inChunk[fmt.Sprint(w, d.last)] {
				t.Fatalf("%s: last chunk %d counted %d postings, holds %d", w, d.last, d.n, inChunk[fmt.Sprint(w, d.last)])
			}
			// The record's fingerprint is the one of the postings stored,
			// recomputed from scratch (their order in the chunks aside).
			var fp fingerprint
			for id, p := range want[w] {
				fp.add(appendPosting(nil, []byte(id), uint64(p.tf), uint64(p.n), []byte(p.meta)))
			}
			if d.fp != fp {
				t.Fatalf("%s: fingerprint %x, want %x of its %d postings", w, d.fp, fp, len(want[w]))
			}
			raw, rfp, err := readTerm(s, w, true, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rfp != fp || len(raw) != d.df {
				t.Fatalf("%s: read %d postings, fingerprint %x; want %d, %x", w, len(raw), rfp, d.df, fp)
			}
		}
		for id := range live {
			raw, ok, _ := s.Get([]byte(prefDoc + id))
			if !ok {
				t.Fatalf("no doc info for %s", id)
			}
			d, err := decodeDocInfo(raw)
			if err != nil {
				t.Fatal(err)
			}
			for w, ch := range d.Chunks {
				if chunkOf[w+"\x00"+id] != ch {
					t.Fatalf("%s/%s: doc info says chunk %d, posting in %d", w, id, ch, chunkOf[w+"\x00"+id])
				}
			}
		}
	}
	for step := range 6000 {
		id := fmt.Sprintf("pat-%04d", rng.IntN(800))
		switch p := live[id]; {
		case p != nil && rng.IntN(3) == 1:
			if rng.IntN(4) > 0 { // else refreshed unchanged: nothing to write
				p.Successful++
			}
			p.SuccessRate = float64(p.Successful) / float64(p.Successful+p.Failed)
			if err := refreshPostings(s, &m, p, len(sortedBigrams(p.SearchText()))); err != nil {
				t.Fatal(err)
			}
		case p != nil && rng.IntN(3) == 0:
			if err := unindexPattern(s, st, id, &m); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
		default:
			q := &Pattern{ID: id, Type: TypeError, ErrorType: "E", ErrorPattern: text(), FixDescription: text(), Failed: 1, Category: fmt.Sprint("cat", rng.IntN(3))}
			if err := indexPattern(s, st, q, 0.5, &m, false); err != nil {
				t.Fatal(err)
			}
			live[id] = q
		}
		if step%every == 0 {
			if err := m.flush(s); err != nil {
				t.Fatal(err)
			}
		}
		if step%1000 == 999 {
			verify()
		}
	}
	verify()
	if maxChunk < 2 {
		t.Fatalf("last chunk %d: the test should span several chunks", maxChunk)
	}
	if st.IndexDocs != len(live) {
		t.Fatalf("index docs %d, want %d", st.IndexDocs, len(live))
	}
	for id := range live {
		if err := UnindexPattern(s, st, id); err != nil {
			t.Fatal(err)
		}
	}
	for k := range s {
		if strings.HasPrefix(k, prefPosting) || strings.HasPrefix(k, prefDF) || strings.HasPrefix(k, prefDoc) ||
			strings.HasPrefix(k, prefSig) || strings.HasPrefix(k, prefMerge) {
			t.Fatalf("key %q left once every pattern is removed", k)
		}
	}
}

// TestMergeListMemo indexes, re-indexes, merge-checks and removes patterns
// at random in one memo (as one event may) and without one: the two
// stores must hold the same bytes, the merge checks find the same
// matches, and every merge list the memo holds must be the stored one.
func TestMergeListMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	withMemo, without := memStore{}, memStore{}
	st1, st2 := NewStats(), NewStats()
	var m memo
	vocab := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"}
	sig := func() string {
		ws := make([]string, 2+rng.IntN(4))
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	live := map[string]bool{}
	for step := range 3000 {
		if step%100 == 99 {
			if err := m.flush(withMemo); err != nil {
				t.Fatal(err)
			}
		}
		id := fmt.Sprintf("pat-%03d", rng.IntN(120))
		switch {
		case live[id] && rng.IntN(3) == 0:
			if err := unindexPattern(withMemo, st1, id, &m); err != nil {
				t.Fatal(err)
			}
			if err := UnindexPattern(without, st2, id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
		case step%4 == 0:
			s := sig()
			a, err := mergeMatches(withMemo, TypeError, s, 0.5, &m)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mergeMatches(without, TypeError, s, 0.5, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("matches of %q: %v with the memo, %v without", s, a, b)
			}
		default:
			p := &Pattern{ID: id, Type: TypeError, ErrorType: "E", ErrorPattern: sig(), FixDescription: "fix", Failed: 1}
			q := *p
			if err := indexPattern(withMemo, st1, p, 0.5, &m, !live[id]); err != nil {
				t.Fatal(err)
			}
			if err := IndexPattern(without, st2, &q, 0.5); err != nil {
				t.Fatal(err)
			}
			live[id] = true
		}
	}
	if err := m.flush(withMemo); err != nil {
		t.Fatal(err)
	}
	if len(withMemo) != len(without) {
		t.Fatalf("%d keys with the memo, %d without", len(withMemo), len(without))
	}
	for k, v := range without {
		if string(withMemo[k]) != string(v) {
			t.Fatalf("key %q differs", k)
		}
	}
	if len(m.lists) == 0 {
		t.Fatal("the memo holds no merge list: the test should exercise it")
	}
	for k, l := range m.lists {
		if string(withMemo[k]) != string(l.v) {
			t.Fatalf("memo of merge list %q is stale", k)
		}
	}
}
