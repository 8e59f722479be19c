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
// (and each new pattern rewrote) lists holding a share of every such
// pattern ever indexed.
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

// mergeKey is the key of a merge list.
func mergeKey(typ, tok string) []byte { return []byte(prefMerge + typ + "/" + tok) }

// A merge list is a sequence of entries, one per pattern:
//
//	uvarint len(id) | id | uvarint len(body) | body
//	body: uvarint seq | uvarint n | sketch (16 bytes)
//
// seq is the pattern's merge sequence number: the number of patterns
// indexed before it (the counter at keyMergeSeq), so a list's entries are
// in seq order. n is the number of bigrams of the pattern's signature;
// the signature itself is stored once per pattern (sigKey), not in each
// list (a long one is in many): a merge check reads it only for the
// candidates whose size and sketch can be similar enough. The sketch is
// the set of bits sketchBit of the signature's bigrams (sketch).
func mergeEntry(id string, seq uint64, n int, sk sketch) []byte {
	body := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64+sketchLen), seq)
	body = binary.AppendUvarint(body, uint64(n))
	body = binary.BigEndian.AppendUint64(body, sk[0])
	body = binary.BigEndian.AppendUint64(body, sk[1])
	out := binary.AppendUvarint(make([]byte, 0, len(id)+len(body)+8), uint64(len(id)))
	out = append(out, id...)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// sketch is a 128-bit set of a signature's bigrams: bit sketchBit(b) for
// each bigram b. Two signatures share a bigram only if each one's bit is
// in the other's sketch, so the number of A's bigrams whose bit is in
// B's sketch bounds |A ∩ B| from above (maxShared).
type sketch [2]uint64

const sketchLen = 16

// sketchBit is a bigram's bit in a sketch: the low 7 bits of its FNV
// hash, mixed (fmix64 of MurmurHash3: the global order sorts by the hash,
// so a signature's leading bigrams share its high bits).
func sketchBit(b string) uint8 {
	h := hash(b)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return uint8(h & 127)
}

// sketchOf returns the sketch of bigrams and each bigram's bit.
func sketchOf(bigrams []string) (sketch, []uint8) {
	var sk sketch
	bits := make([]uint8, len(bigrams))
	for i, b := range bigrams {
		bits[i] = sketchBit(b)
		sk[bits[i]>>6] |= 1 << (bits[i] & 63)
	}
	return sk, bits
}

// maxShared bounds |A ∩ B| from above: the number of A's bigrams (given
// by their bits) whose bit is in B's sketch.
func maxShared(bits []uint8, sk sketch) int {
	n := 0
	for _, b := range bits {
		n += int(sk[b>>6] >> (b & 63) & 1)
	}
	return n
}

// nextEntry splits the first entry off a merge list: the id, the entry's
// body, the entry's bytes, the rest.
func nextEntry(v []byte) (id, body, entry, rest []byte, err error) {
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
	body = w[k : k+int(l)]
	n := len(v) - len(w) + k + int(l)
	return id, body, v[:n], v[n:], nil
}

// entryBody splits an entry's body: its seq, the number of bigrams of
// its signature and its sketch.
func entryBody(body []byte) (seq, n uint64, sk sketch, err error) {
	seq, k := binary.Uvarint(body)
	if k <= 0 {
		return 0, 0, sk, fmt.Errorf("corrupt merge list")
	}
	n, j := binary.Uvarint(body[k:])
	if j <= 0 || k+j+sketchLen != len(body) {
		return 0, 0, sk, fmt.Errorf("corrupt merge list")
	}
	sk[0] = binary.BigEndian.Uint64(body[k+j:])
	sk[1] = binary.BigEndian.Uint64(body[k+j+8:])
	return seq, n, sk, nil
}

// sigKey is the key of an indexed pattern's signature bigrams, sorted
// (encodeList).
func sigKey(id string) []byte { return []byte(prefSig + id) }

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

// editList removes id's entry from the list at k and, when entry is not
// nil, appends entry at its end (a re-indexed pattern moves to the end).
// With absent, the list is known to hold no entry of id. The list is read
// and edited through m (not nil), which writes it back at its flush.
func editList(s Store, k []byte, id string, entry []byte, m *memo, absent bool) error {
	l, err := m.listState(s, k)
	if err != nil {
		return err
	}
	if absent && l.own {
		l.v = append(l.v, entry...) // in place: earlier readers see their prefix unchanged
	} else {
		if l.v, err = editEntries(k, l.v, id, entry, absent); err != nil {
			return err
		}
		l.own = true
	}
	l.dirty = true
	return nil
}

// editEntries returns a new list: v without id's entry (absent: v holds
// none), then entry.
func editEntries(k, v []byte, id string, entry []byte, absent bool) ([]byte, error) {
	out := make([]byte, 0, len(v)+len(entry)+len(entry)/2)
	if absent {
		out = append(out, v...)
	} else {
		for rest := v; len(rest) > 0; {
			eid, _, e, r, err := nextEntry(rest)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if string(eid) != id {
				out = append(out, e...)
			}
			rest = r
		}
	}
	return append(out, entry...), nil
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
func mergeMatches(s getter, typ, sig string, t float64, m *memo) ([]mergeMatch, error) {
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
		v, err := m.list(s, mergeKey(typ, key))
		if err != nil {
			return nil, err
		}
		for rest := v; len(rest) > 0; {
			id, body, _, r, err := nextEntry(rest)
			if err != nil {
				return nil, err
			}
			rest = r
			seq, n, sk, err := entryBody(body)
			if err != nil {
				return nil, err
			}
			if len(sb) > 0 && n > 0 {
				if float64(n) < lo || float64(n) > hi {
					continue
				}
				// At most ub bigrams are shared, and the Jaccard of
				// inter ≤ ub shared is at most ub/(|A|+n−ub) (the
				// same float division, monotone: never pruned above t).
				ub := maxShared(si.bits, sk)
				if !ShouldMerge(float64(ub)/float64(len(sb)+int(n)-ub), t) {
					continue
				}
			}
			if seen[string(id)] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[string(id)] = true
			es, ok, err := s.Get(sigKey(string(id)))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("merge list entry of %s: no signature", id)
			}
			sim, err := jaccardEncoded(sb, es)
			if err != nil {
				return nil, err
			}
			if !ShouldMerge(sim, t) {
				continue
			}
			bb, err := decodeList(es)
			if err != nil {
				return nil, err
			}
			out = append(out, found{mergeMatch{string(id), sim}, firstShared(si.tokens, mergeTokens(bb, t)), seq})
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
// than t similar to sig (they share a merge key), in first-seen order.
func MergeCandidates(s interface {
	Get([]byte) ([]byte, bool, error)
}, typ, sig string, t float64) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, key := range mergeKeys(globalOrder(sortedBigrams(sig)), t, true) {
		v, _, err := s.Get(mergeKey(typ, key))
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
