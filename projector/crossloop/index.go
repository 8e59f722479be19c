package crossloop

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
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

// Key layout of the read model. NB: must not change without a new
// Model.Version (a stored model of another version is rebuilt).
//
//	p/<pattern id>              pattern head: the Pattern without trend and lineage, their lengths (store.go)
//	pt/<pattern id>\x00<i>      trend point i (uint32)
//	ps/<pattern id>\x00<i>      lineage entry i (uint32)
//	pm/<pattern id>\x00<loop>   the loop is in the pattern's lineage (empty value)
//	l/<loop id>                 loop head: the Loop without iterations, their numbers
//	li/<loop id>\x00<N>         iteration N (uint64, sign bit flipped)
//	stats                       Stats
//	ix/t/<term>\x00<pattern id> posting: tf (uint32) + doc length (uint32) + the
//	                            pattern's scoring header (postingMeta)
//	ix/df/<term>                document frequency (uint64)
//	ix/d/<pattern id>           docInfo: indexed terms, merge tokens
//	ix/m/<type>/<token>         the patterns whose merge prefix holds the token, each with its
//	                            signature's sorted bigrams (mergeEntry), in insertion order
//	ix/r/<pattern id>           scoring record of an active pattern (store.go): injection
const (
	keyStats    = "stats"
	prefPattern = "p/"
	prefTrend   = "pt/"
	prefSource  = "ps/"
	prefMember  = "pm/"
	prefLoop    = "l/"
	prefIter    = "li/"
	prefPosting = "ix/t/"
	prefDF      = "ix/df/"
	prefDoc     = "ix/d/"
	prefMerge   = "ix/m/"
	prefScore   = "ix/r/"
)

func scoreKey(id string) []byte { return []byte(prefScore + id) }

func patternKey(id string) []byte { return []byte(prefPattern + id) }
func loopKey(id string) []byte    { return []byte(prefLoop + id) }
func postingKey(term, id string) []byte {
	return []byte(prefPosting + term + "\x00" + id)
}

// docInfo records what a pattern put in the index, so it can be removed.
type docInfo struct {
	Terms map[string]int
	Len   int
	Merge []string
	Type  string
}

// encode: type, len, then the terms (sorted: the bytes are deterministic)
// with their tf, then the merge tokens; counts and lengths as uvarints.
func (d *docInfo) encode() []byte {
	terms := make([]string, 0, len(d.Terms))
	for t := range d.Terms {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	out := binary.AppendUvarint(nil, uint64(len(d.Type)))
	out = append(out, d.Type...)
	out = binary.AppendUvarint(out, uint64(d.Len))
	out = binary.AppendUvarint(out, uint64(len(terms)))
	for _, t := range terms {
		out = binary.AppendUvarint(out, uint64(len(t)))
		out = append(out, t...)
		out = binary.AppendUvarint(out, uint64(d.Terms[t]))
	}
	out = binary.AppendUvarint(out, uint64(len(d.Merge)))
	return append(out, encodeList(d.Merge)...)
}

func decodeDocInfo(v []byte) (docInfo, error) {
	var d docInfo
	bad := fmt.Errorf("corrupt doc info")
	num := func() (int, bool) {
		x, k := binary.Uvarint(v)
		if k <= 0 {
			return 0, false
		}
		v = v[k:]
		return int(x), true
	}
	str := func() (string, bool) {
		l, ok := num()
		if !ok || l > len(v) {
			return "", false
		}
		s := string(v[:l])
		v = v[l:]
		return s, true
	}
	var ok bool
	if d.Type, ok = str(); !ok {
		return d, bad
	}
	if d.Len, ok = num(); !ok {
		return d, bad
	}
	n, ok := num()
	if !ok {
		return d, bad
	}
	d.Terms = make(map[string]int, n)
	for range n {
		t, ok1 := str()
		c, ok2 := num()
		if !ok1 || !ok2 {
			return d, bad
		}
		d.Terms[t] = c
	}
	if n, ok = num(); !ok {
		return d, bad
	}
	for range n {
		t, ok := str()
		if !ok {
			return d, bad
		}
		d.Merge = append(d.Merge, t)
	}
	return d, nil
}

// memo caches the analysis of texts met while folding one event (a
// pattern's signature and search text are analysed by the merge check,
// the index and the save). A nil memo computes every time.
type memo struct {
	sigs  map[string]*sigInfo
	texts map[string]*searchInfo
}

type sigInfo struct {
	bigrams []string // sorted
	tokens  []string // MergeTokens
	t       float64
}

type searchInfo struct {
	tf      map[string]int // Terms
	n       int
	bigrams []string // sorted
}

func (m *memo) signature(sig string, t float64) *sigInfo {
	if m != nil {
		if si := m.sigs[sig]; si != nil && si.t == t {
			return si
		}
	}
	bg := sortedBigrams(sig)
	si := &sigInfo{bigrams: bg, tokens: mergeTokens(bg, t), t: t}
	if m != nil {
		if m.sigs == nil {
			m.sigs = map[string]*sigInfo{}
		}
		m.sigs[sig] = si
	}
	return si
}

func (m *memo) search(text string) *searchInfo {
	if m != nil {
		if si := m.texts[text]; si != nil {
			return si
		}
	}
	tf, n := Terms(text)
	si := &searchInfo{tf: tf, n: n, bigrams: sortedBigrams(text)}
	if m != nil {
		if m.texts == nil {
			m.texts = map[string]*searchInfo{}
		}
		m.texts[text] = si
	}
	return si
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
	sort.Slice(toks, func(i, j int) bool {
		if toks[i].h != toks[j].h {
			return toks[i].h < toks[j].h
		}
		return toks[i].s < toks[j].s
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

// IndexPattern (re)writes a pattern's postings, its document frequencies,
// the index totals in st, and its merge tokens. Archived patterns are
// removed from the index instead.
func IndexPattern(s Store, st *Stats, p *Pattern, threshold float64) error {
	return indexPattern(s, st, p, threshold, nil, false)
}

// indexPattern is IndexPattern; with isNew the pattern is known to be
// absent from the index (no removal first); m memoises text analysis.
func indexPattern(s Store, st *Stats, p *Pattern, threshold float64, m *memo, isNew bool) error {
	if !isNew {
		if err := UnindexPattern(s, st, p.ID); err != nil {
			return err
		}
	}
	if p.Archived {
		return nil
	}
	si := m.search(p.SearchText())
	tf, n := si.tf, si.n
	sg := m.signature(p.Signature(), threshold)
	d := docInfo{Terms: tf, Len: n, Type: p.Type, Merge: sg.tokens}
	entry := mergeEntry(p.ID, sg.bigrams)
	meta := postingMeta(p, len(si.bigrams))
	for t, c := range tf {
		if err := s.Set(postingKey(t, p.ID), posting(c, n, meta)); err != nil {
			return err
		}
		if err := addDF(s, t, 1); err != nil {
			return err
		}
	}
	for _, tok := range d.Merge {
		if err := editList(s, mergeKey(p.Type, tok), p.ID, entry); err != nil {
			return err
		}
	}
	st.IndexDocs++
	st.IndexLen += n
	return s.Set([]byte(prefDoc+p.ID), d.encode())
}

// posting is a posting's value: tf, the document's length, meta.
func posting(tf, dl int, meta []byte) []byte {
	v := make([]byte, 8, 8+len(meta))
	binary.BigEndian.PutUint32(v, uint32(tf))
	binary.BigEndian.PutUint32(v[4:], uint32(dl))
	return append(v, meta...)
}

// postingMeta is what a posting carries of its pattern, so that ranking
// filters and bounds a candidate without reading it: the scoring header
// (type, counts, success rate), the number of bigrams of its search text
// and its category.
//
//	type (1) | successful, failed (int64) | success_rate (float64 bits) | bigrams (uint32) | category
//
// INVARIANT: the postings of an active pattern carry the meta of its
// stored head (IndexPattern writes them; savePattern refreshes them).
func postingMeta(p *Pattern, nBigrams int) []byte {
	v := make([]byte, 0, 29+len(p.Category))
	v = append(v, typeCodes[p.Type])
	v = binary.BigEndian.AppendUint64(v, uint64(p.Successful))
	v = binary.BigEndian.AppendUint64(v, uint64(p.Failed))
	v = binary.BigEndian.AppendUint64(v, math.Float64bits(p.SuccessRate))
	v = binary.BigEndian.AppendUint32(v, uint32(nBigrams))
	return append(v, p.Category...)
}

// refreshPostings rewrites the meta of an indexed pattern's postings.
func refreshPostings(s Store, p *Pattern, nBigrams int) error {
	raw, ok, err := s.Get([]byte(prefDoc + p.ID))
	if err != nil || !ok {
		return err
	}
	d, err := decodeDocInfo(raw)
	if err != nil {
		return fmt.Errorf("decode doc info %s: %w", p.ID, err)
	}
	meta := postingMeta(p, nBigrams)
	for t, c := range d.Terms {
		if err := s.Set(postingKey(t, p.ID), posting(c, d.Len, meta)); err != nil {
			return err
		}
	}
	return nil
}

// UnindexPattern removes a pattern from the index (no-op when absent).
func UnindexPattern(s Store, st *Stats, id string) error {
	raw, ok, err := s.Get([]byte(prefDoc + id))
	if err != nil || !ok {
		return err
	}
	d, err := decodeDocInfo(raw)
	if err != nil {
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
		if err := editList(s, mergeKey(d.Type, tok), id, nil); err != nil {
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
func editList(s Store, k []byte, id string, entry []byte) error {
	v, _, err := s.Get(k)
	if err != nil {
		return err
	}
	out := make([]byte, 0, len(v)+len(entry))
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
	out = append(out, entry...)
	if len(out) == 0 {
		return s.Delete(k)
	}
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
		v, _, err := s.Get(mergeKey(typ, tok))
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
