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
// merge key), the patterns indexed under it. The key layout is in
// index.go and below (mergeHead).

// MergeTokens are the prefix-filter tokens of a signature: its bigrams in
// a fixed global order (FNV hash, then text), the first |A| − ⌈t·|A|⌉ + 1.
// INVARIANT: two signatures with Jaccard ≥ t share a merge token.
func MergeTokens(sig string, t float64) []string { return mergeTokens(sortedBigrams(sig), t) }

// mergeTokens is MergeTokens of a signature's bigrams (any order).
func mergeTokens(bigrams []string, t float64) []string {
	if len(bigrams) == 0 {
		return []string{"\x01empty"}
	}
	ord := globalOrder(bigrams)
	return ord[:prefixLen(len(ord), t)]
}

// prefixLen is the length of the merge prefix of n ordered bigrams (n > 0).
func prefixLen(n int, t float64) int {
	p := n - int(math.Ceil(t*float64(n)-1e-9)) + 1
	return min(max(p, 1), n)
}

// globalOrder returns the bigrams sorted by the global order of merge
// tokens: FNV hash, then text (a total order: bigrams are distinct).
func globalOrder(bigrams []string) []string {
	type tok struct {
		h uint64
		s string
	}
	toks := make([]tok, len(bigrams))
	for i, b := range bigrams {
		toks[i] = tok{hash(b), b}
	}
	slices.SortFunc(toks, func(a, b tok) int {
		if a.h != b.h {
			return cmp.Compare(a.h, b.h)
		}
		return strings.Compare(a.s, b.s)
	})
	out := make([]string, len(toks))
	for i := range toks {
		out[i] = toks[i].s
	}
	return out
}

// pairMax bounds the signatures whose merge check looks up pairs
// (mergeKeys): a signature of n bigrams has about (n(1−t)+2)²/2 pairs
// (91 at 64 bigrams and t = 0.8; indexed up to pairMax/t bigrams: 153).
// Longer signatures use single-bigram lists, which grow with the number
// of long signatures sharing a bigram: with 24, multi-step success
// patterns of a shared vocabulary filled them, and each merge check read
// a share of every such pattern ever indexed.
const pairMax = 64

// mergeKeys are the merge lists a signature of n bigrams is indexed under
// (lookup false) or looked up in (lookup true). Pairs: with t ≥ 0.7, the
// pairs of its first prefixLen+1 bigrams in the global order, looked up
// by signatures of up to pairMax bigrams and indexed by those of up to
// pairMax/t. Merge tokens (MergeTokens): looked up by the others, indexed
// by those of more than pairMax·t bigrams, and by every signature small
// enough (n·t < 1) to be more than t similar to one it shares a single
// bigram with.
//
// INVARIANT: if A and B have Jaccard > t, one of A's lookup keys is one of
// B's index keys. Proof: |A∩B| > t·max(|A|,|B|), so |A∩B| ≥ ⌈t|A|⌉ and
// ≥ ⌈t|B|⌉, and t|B| < |A| < |B|/t.
//   - A looks up pairs (|A| ≤ pairMax), so |B| < pairMax/t and B is
//     indexed under pairs. With |A∩B| ≥ 2, let i1 < i2 be its first two
//     bigrams in the global order: at most |A| − |A∩B| bigrams of A
//     precede i2 outside A∩B, so i2 is among A's first |A| − ⌈t|A|⌉ + 2
//     (likewise in B), and the pair (i1, i2) is a key of both. With
//     |A∩B| = 1, Jaccard = 1/(|A|+|B|−1) > t needs |A|·t < 1 and
//     |B|·t < 1: both have their merge tokens too, which share a bigram
//     (the prefix filter, MergeTokens); two empty signatures share the
//     token of emptiness.
//   - A looks up merge tokens (|A| > pairMax or t < 0.7): B is indexed
//     under its merge tokens (|B| > t|A| > pairMax·t, or t < 0.7), and the
//     prefix filter applies.
//
// A pair's list holds the few patterns that share two leading bigrams, so
// the merge check of a short signature reads a handful of entries
// whatever the registry's size; a token's list holds a share of the
// registry (a shared vocabulary fills it).
func mergeKeys(ord []string, t float64, lookup bool) []string {
	n := len(ord)
	pairs := t >= 0.7 && n >= 2
	tokens := n == 0 || float64(n)*t < 1 || t < 0.7
	if lookup {
		pairs = pairs && n <= pairMax
		tokens = tokens || n > pairMax
	} else {
		pairs = pairs && float64(n) <= float64(pairMax)/t
		tokens = tokens || float64(n) > float64(pairMax)*t
	}
	var out []string
	if tokens {
		out = append(out, mergeTokens(ord, t)...)
	}
	if pairs {
		p := min(prefixLen(n, t)+1, n)
		for i := 0; i < p; i++ {
			for j := i + 1; j < p; j++ {
				out = append(out, "\x02"+ord[i]+"\x00"+ord[j])
			}
		}
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

// A merge list is one key per entry under the list's head key, so a
// pattern joins or leaves a list with one write, whatever the list's size
// (a list rewritten whole on every join made each new pattern cost, in
// bytes written and compacted, the size of its lists):
//
//	ix/m/<type>/<uvarint len(key)><key>          head: empty, present once the list had an entry
//	ix/m/<type>/<uvarint len(key)><key><id>      entry: uvarint seq | uvarint n
//	ix/g/<id>                                    the signature's n bigrams, sorted (encodeList)
//
// seq is the pattern's merge sequence number: the number of patterns
// indexed before it (the counter at keyMergeSeq). A pattern's signature is
// stored once, not in each of its entries (a long one has many keys);
// a merge check reads it only for candidates whose size n can be similar
// enough. A merge check first reads the head (a point read, which the
// store's bloom filters answer without reading a table when the list
// never existed: most pair keys), and scans the entries only when it is
// present. A head is never deleted (a list emptied keeps it: a scan that
// finds nothing).

// mergeHead is the head key of a merge list; its entries' keys extend it
// with a pattern id. (The key's length makes a head the prefix of no
// other list's keys.)
func mergeHead(typ, key string) []byte {
	h := make([]byte, 0, len(prefMerge)+len(typ)+1+binary.MaxVarintLen32+len(key))
	h = append(append(append(h, prefMerge...), typ...), '/')
	h = binary.AppendUvarint(h, uint64(len(key)))
	return append(h, key...)
}

// mergeEntryKey is the key of id's entry in the merge list with head h.
func mergeEntryKey(h []byte, id string) []byte {
	return append(append(make([]byte, 0, len(h)+len(id)), h...), id...)
}

// mergeBody is the value of a merge list entry.
func mergeBody(seq uint64, n int) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, seq), uint64(n))
}

// sigKey is the key of a pattern's signature bigrams.
func sigKey(id string) []byte { return []byte(prefSig + id) }

// scanList calls fn with the id and body of each entry of the merge list
// with head h, in id order.
func scanList(s Reader, h []byte, fn func(id, body []byte) error) error {
	_, ok, err := s.Get(h)
	if err != nil || !ok {
		return err
	}
	return s.Scan(h, func(k, v []byte) error {
		if len(k) == len(h) {
			return nil // the head
		}
		return fn(k[len(h):], v)
	})
}

// joinList adds (or replaces) id's entry in the merge list with head h.
func joinList(s Store, h []byte, id string, body []byte) error {
	if err := s.Set(h, nil); err != nil {
		return err
	}
	return s.Set(mergeEntryKey(h, id), body)
}

// leaveList removes id's entry from the merge list with head h.
func leaveList(s Store, h []byte, id string) error { return s.Delete(mergeEntryKey(h, id)) }

// entryBody splits an entry's body: its seq and the number of bigrams of
// its signature.
func entryBody(body []byte) (seq, n uint64, err error) {
	seq, k := binary.Uvarint(body)
	if k <= 0 {
		return 0, 0, fmt.Errorf("corrupt merge list")
	}
	n, j := binary.Uvarint(body[k:])
	if j <= 0 || k+j != len(body) {
		return 0, 0, fmt.Errorf("corrupt merge list")
	}
	return seq, n, nil
}

// decodeList decodes a list encoded by encodeList.
func decodeList(v []byte) ([]string, error) {
	var out []string
	for len(v) > 0 {
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			return nil, fmt.Errorf("corrupt list")
		}
		out = append(out, string(v[k:k+int(l)]))
		v = v[k+int(l):]
	}
	return out, nil
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
// sig (word-bigram Jaccard), in candidate order: by the first of sig's
// merge tokens (MergeTokens, in their order) that is also one of the
// pattern's, then by merge sequence number. (That is the order in which
// a scan of the per-token lists of sig's merge tokens, each in insertion
// order, first meets them.) The candidates come from the lists of sig's
// merge keys, which miss none (mergeKeys); only ids above t are
// materialised.
func mergeMatches(s Reader, typ, sig string, t float64, m *memo) ([]mergeMatch, error) {
	si := m.signature(sig, t)
	sb := si.bigrams
	// Jaccard(A, B) <= min(|A|,|B|)/max(|A|,|B|): sizes outside
	// [t|A|, |A|/t] cannot exceed t.
	// (widened by 1e-9 against rounding: the filter may only keep more)
	lo, hi := t*float64(len(sb))*(1-1e-9), float64(len(sb))/t*(1+1e-9)
	type found struct {
		mergeMatch
		pos int
		seq uint64
	}
	var out []found
	var seen map[string]bool
	for _, key := range si.lookup {
		err := scanList(s, mergeHead(typ, key), func(id, body []byte) error {
			seq, n, err := entryBody(body)
			if err != nil {
				return err
			}
			if len(sb) > 0 && n > 0 && (float64(n) < lo || float64(n) > hi) {
				return nil
			}
			if seen[string(id)] {
				return nil
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[string(id)] = true
			es, ok, err := s.Get(sigKey(string(id)))
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("merge list entry of %s: no signature", id)
			}
			sim, err := jaccardEncoded(sb, es)
			if err != nil {
				return err
			}
			if !ShouldMerge(sim, t) {
				return nil
			}
			bb, err := decodeList(es)
			if err != nil {
				return err
			}
			out = append(out, found{mergeMatch{string(id), sim}, firstShared(si.tokens, mergeTokens(bb, t)), seq})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b found) int {
		if a.pos != b.pos {
			return cmp.Compare(a.pos, b.pos)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	ms := make([]mergeMatch, len(out))
	for i, f := range out {
		ms[i] = f.mergeMatch
	}
	return ms, nil
}

// firstShared is the index of the first of a's tokens that b holds
// (len(a) when none: by the prefix-filter invariant, never for a match).
func firstShared(a, b []string) int {
	for i, x := range a {
		if slices.Contains(b, x) {
			return i
		}
	}
	return len(a)
}

// MergeCandidates are the ids of active patterns of a type that may be more
// than t similar to sig (they share a merge key), in first-seen order
// (each list in merge sequence order).
func MergeCandidates(s Reader, typ, sig string, t float64) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, key := range mergeKeys(globalOrder(sortedBigrams(sig)), t, true) {
		type entry struct {
			id  string
			seq uint64
		}
		var list []entry
		err := scanList(s, mergeHead(typ, key), func(id, body []byte) error {
			seq, _, err := entryBody(body)
			list = append(list, entry{string(id), seq})
			return err
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
		for _, e := range list {
			if !seen[e.id] {
				seen[e.id] = true
				out = append(out, e.id)
			}
		}
	}
	return out, nil
}
