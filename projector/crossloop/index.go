package crossloop

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sort"

	json "github.com/goccy/go-json"
)

// Store is the read/write view the index needs (a projector.Tx satisfies it).
type Store interface {
	Get(key []byte) ([]byte, bool, error)
	Set(key, value []byte) error
	Delete(key []byte) error
}

// Reader is the read view queries need (a projector.Reader satisfies it).
type Reader interface {
	Get(key []byte) ([]byte, bool, error)
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// Key layout of the read model. NB: must not change (rebuild otherwise).
//
//	p/<pattern id>              Pattern
//	l/<loop id>                 Loop
//	stats                       Stats
//	ix/t/<term>\x00<pattern id> posting: tf (uint32) + doc length (uint32)
//	ix/df/<term>                document frequency (uint64)
//	ix/d/<pattern id>           docInfo: indexed terms, merge tokens
//	ix/m/<type>/<token>         ids whose merge prefix holds the token
const (
	keyStats    = "stats"
	prefPattern = "p/"
	prefLoop    = "l/"
	prefPosting = "ix/t/"
	prefDF      = "ix/df/"
	prefDoc     = "ix/d/"
	prefMerge   = "ix/m/"
)

func patternKey(id string) []byte { return []byte(prefPattern + id) }
func loopKey(id string) []byte    { return []byte(prefLoop + id) }
func postingKey(term, id string) []byte {
	return []byte(prefPosting + term + "\x00" + id)
}

// docInfo records what a pattern put in the index, so it can be removed.
type docInfo struct {
	Terms map[string]int `json:"terms"`
	Len   int            `json:"len"`
	Merge []string       `json:"merge"`
	Type  string         `json:"type"`
}

// Terms of a text for BM25: normalised words without stop words, with counts.
func Terms(s string) (map[string]int, int) {
	tf := map[string]int{}
	n := 0
	for _, w := range Words(s) {
		if stop[w] || len(w) > 64 {
			continue
		}
		tf[w]++
		n++
	}
	return tf, n
}

// MergeTokens are the prefix-filter tokens of a signature: its bigrams in
// a fixed global order (FNV hash, then text), the first |A| − ⌈t·|A|⌉ + 1.
// INVARIANT: two signatures with Jaccard ≥ t share a merge token, so merge
// candidates are found without scanning the registry.
func MergeTokens(sig string, t float64) []string {
	bg := Bigrams(sig)
	toks := make([]string, 0, len(bg))
	for k := range bg {
		toks = append(toks, k)
	}
	if len(toks) == 0 {
		return []string{"\x01empty"}
	}
	sort.Slice(toks, func(i, j int) bool {
		hi, hj := hash(toks[i]), hash(toks[j])
		if hi != hj {
			return hi < hj
		}
		return toks[i] < toks[j]
	})
	n := len(toks) - int(math.Ceil(t*float64(len(toks))-1e-9)) + 1
	if n < 1 {
		n = 1
	}
	if n > len(toks) {
		n = len(toks)
	}
	return toks[:n]
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// IndexPattern (re)writes a pattern's postings, its document frequencies,
// the index totals in st, and its merge tokens. Archived patterns are
// removed from the index instead.
func IndexPattern(s Store, st *Stats, p *Pattern, threshold float64) error {
	if err := UnindexPattern(s, st, p.ID); err != nil {
		return err
	}
	if p.Archived {
		return nil
	}
	tf, n := Terms(p.SearchText())
	d := docInfo{Terms: tf, Len: n, Type: p.Type, Merge: MergeTokens(p.Signature(), threshold)}
	for t, c := range tf {
		v := make([]byte, 8)
		binary.BigEndian.PutUint32(v, uint32(c))
		binary.BigEndian.PutUint32(v[4:], uint32(n))
		if err := s.Set(postingKey(t, p.ID), v); err != nil {
			return err
		}
		if err := addDF(s, t, 1); err != nil {
			return err
		}
	}
	for _, tok := range d.Merge {
		if err := editList(s, mergeKey(p.Type, tok), p.ID, true); err != nil {
			return err
		}
	}
	st.IndexDocs++
	st.IndexLen += n
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode doc info: %w", err)
	}
	return s.Set([]byte(prefDoc+p.ID), raw)
}

// UnindexPattern removes a pattern from the index (no-op when absent).
func UnindexPattern(s Store, st *Stats, id string) error {
	raw, ok, err := s.Get([]byte(prefDoc + id))
	if err != nil || !ok {
		return err
	}
	var d docInfo
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("decode doc info %s: %w", id, err)
	}
	for t := range d.Terms {
		if err := s.Delete(postingKey(t, id)); err != nil {
			return err
		}
		if err := addDF(s, t, -1); err != nil {
			return err
		}
	}
	for _, tok := range d.Merge {
		if err := editList(s, mergeKey(d.Type, tok), id, false); err != nil {
			return err
		}
	}
	st.IndexDocs--
	st.IndexLen -= d.Len
	return s.Delete([]byte(prefDoc + id))
}

func mergeKey(typ, tok string) []byte { return []byte(prefMerge + typ + "/" + tok) }

func addDF(s Store, term string, d int64) error {
	k := []byte(prefDF + term)
	v, ok, err := s.Get(k)
	if err != nil {
		return err
	}
	var n int64
	if ok && len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += d
	if n <= 0 {
		return s.Delete(k)
	}
	return s.Set(k, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func getDF(r Reader, term string) (int, error) {
	v, ok, err := r.Get([]byte(prefDF + term))
	if err != nil || !ok || len(v) != 8 {
		return 0, err
	}
	return int(binary.BigEndian.Uint64(v)), nil
}

func editList(s Store, k []byte, id string, add bool) error {
	ids, err := getList(s, k)
	if err != nil {
		return err
	}
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	if add {
		out = append(out, id)
	}
	if len(out) == 0 {
		return s.Delete(k)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return s.Set(k, raw)
}

func getList(s interface {
	Get([]byte) ([]byte, bool, error)
}, k []byte) ([]string, error) {
	v, ok, err := s.Get(k)
	if err != nil || !ok {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(v, &ids); err != nil {
		return nil, fmt.Errorf("decode list %s: %w", k, err)
	}
	return ids, nil
}

// MergeCandidates are the ids of active patterns of a type that may be more
// than t similar to sig (they share a merge token), in first-seen order.
func MergeCandidates(s interface {
	Get([]byte) ([]byte, bool, error)
}, typ, sig string, t float64) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, tok := range MergeTokens(sig, t) {
		ids, err := getList(s, mergeKey(typ, tok))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out, nil
}
