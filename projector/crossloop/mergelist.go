package crossloop

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Merge lists: the prefix-filter tokens of a signature and, per (type,
// token), the patterns whose merge prefix holds it. The key layout is in
// index.go.

// MergeTokens are the prefix-filter tokens of a signature: its bigrams in
// a fixed global order (FNV hash, then text), the first |A| − ⌈t·|A|⌉ + 1.
// INVARIANT: two signatures with Jaccard ≥ t share a merge token, so merge
// candidates are found without scanning the registry.
func MergeTokens(sig string, t float64) []string { return mergeTokens(sortedBigrams(sig), t) }

// mergeTokens is MergeTokens of a signature's bigrams (any order).
func mergeTokens(bigrams []string, t float64) []string {
	if len(bigrams) == 0 {
		return []string{"\x01empty"}
	}
	type tok struct {
		h uint64
		s string
	}
	toks := make([]tok, len(bigrams))
	for i, b := range bigrams {
		toks[i] = tok{hash(b), b}
	}
	slices.SortFunc(toks, func(a, b tok) int { // a total order: bigrams are distinct
		if a.h != b.h {
			return cmp.Compare(a.h, b.h)
		}
		return strings.Compare(a.s, b.s)
	})
	n := len(toks) - int(math.Ceil(t*float64(len(toks))-1e-9)) + 1
	if n < 1 {
		n = 1
	}
	if n > len(toks) {
		n = len(toks)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = toks[i].s
	}
	return out
}

// hash is FNV-1a (64 bit) of s.
func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mergeKey is the key of a merge list.
func mergeKey(typ, tok string) []byte { return []byte(prefMerge + typ + "/" + tok) }

// A merge list is a sequence of entries, one per pattern:
//
//	uvarint len(id) | id | uvarint len(sig) | sig
//
// sig is the pattern's signature bigrams, sorted, as encodeList with the
// count first (uvarint). Merge checks read the similarity of every
// candidate from the lists, without loading a pattern.
func mergeEntry(id string, sig []string) []byte {
	body := binary.AppendUvarint(nil, uint64(len(sig)))
	body = append(body, encodeList(sig)...)
	out := binary.AppendUvarint(make([]byte, 0, len(id)+len(body)+8), uint64(len(id)))
	out = append(out, id...)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// nextEntry splits the first entry off a merge list: the id, the encoded
// signature (count first), the entry's bytes, the rest.
func nextEntry(v []byte) (id, sig, entry, rest []byte, err error) {
	l, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < l {
		return nil, nil, nil, nil, fmt.Errorf("corrupt merge list")
	}
	id = v[k : k+int(l)]
	w := v[k+int(l):]
	l, k = binary.Uvarint(w)
	if k <= 0 || uint64(len(w)-k) < l {
		return nil, nil, nil, nil, fmt.Errorf("corrupt merge list")
	}
	sig = w[k : k+int(l)]
	n := len(v) - len(w) + k + int(l)
	return id, sig, v[:n], v[n:], nil
}

// editList removes id's entry from the list at k and, when entry is not
// nil, appends entry at its end (a re-indexed pattern moves to the end).
// With absent, the list is known to hold no entry of id. The list is read
// and recorded through m.
func editList(s Store, k []byte, id string, entry []byte, m *memo, absent bool) error {
	v, err := m.list(s, k)
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(v)+len(entry))
	if absent {
		out = append(out, v...)
	} else {
		for rest := v; len(rest) > 0; {
			eid, _, e, r, err := nextEntry(rest)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if string(eid) != id {
				out = append(out, e...)
			}
			rest = r
		}
	}
	out = append(out, entry...)
	if len(out) == 0 {
		m.setList(k, nil)
		return s.Delete(k)
	}
	m.setList(k, out)
	return s.Set(k, out)
}

// encodeList encodes a list of strings: each as uvarint length + bytes.
func encodeList(l []string) []byte {
	n := 0
	for _, x := range l {
		n += len(x) + binary.MaxVarintLen32
	}
	out := make([]byte, 0, n)
	for _, x := range l {
		out = binary.AppendUvarint(out, uint64(len(x)))
		out = append(out, x...)
	}
	return out
}

// mergeMatch is one candidate of a merge check and its similarity.
type mergeMatch struct {
	id  string
	sim float64
}

// mergeMatches are the active patterns of a type more than t similar to
// sig (word-bigram Jaccard), in first-seen order of the merge lists of
// sig's tokens. By the prefix-filter invariant (MergeTokens) it misses
// none; only ids above t are materialised.
func mergeMatches(s getter, typ, sig string, t float64, m *memo) ([]mergeMatch, error) {
	si := m.signature(sig, t)
	sb := si.bigrams
	// Jaccard(A, B) <= min(|A|,|B|)/max(|A|,|B|): sizes outside
	// [t|A|, |A|/t] cannot exceed t.
	// (widened by 1e-9 against rounding: the filter may only keep more)
	lo, hi := t*float64(len(sb))*(1-1e-9), float64(len(sb))/t*(1+1e-9)
	var out []mergeMatch
	var seen map[string]bool
	for _, tok := range si.tokens {
		v, err := m.list(s, mergeKey(typ, tok))
		if err != nil {
			return nil, err
		}
		for rest := v; len(rest) > 0; {
			id, es, _, r, err := nextEntry(rest)
			if err != nil {
				return nil, err
			}
			rest = r
			n, k := binary.Uvarint(es)
			if k <= 0 {
				return nil, fmt.Errorf("corrupt merge list")
			}
			if len(sb) > 0 && n > 0 && (float64(n) < lo || float64(n) > hi) {
				continue
			}
			sim, err := jaccardEncoded(sb, es[k:])
			if err != nil {
				return nil, err
			}
			if !ShouldMerge(sim, t) || seen[string(id)] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[string(id)] = true
			out = append(out, mergeMatch{string(id), sim})
		}
	}
	return out, nil
}

// MergeCandidates are the ids of active patterns of a type that may be more
// than t similar to sig (they share a merge token), in first-seen order.
func MergeCandidates(s interface {
	Get([]byte) ([]byte, bool, error)
}, typ, sig string, t float64) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, tok := range MergeTokens(sig, t) {
		v, _, err := s.Get(mergeKey(typ, tok))
		if err != nil {
			return nil, err
		}
		for rest := v; len(rest) > 0; {
			id, _, _, r, err := nextEntry(rest)
			if err != nil {
				return nil, err
			}
			rest = r
			if !seen[string(id)] {
				seen[string(id)] = true
				out = append(out, string(id))
			}
		}
	}
	return out, nil
}
