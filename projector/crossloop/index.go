package crossloop

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
//	ix/t/<term>\x00<2·chunk>    the body of a chunk of the term's postings (uint32),
//	ix/t/<term>\x00<2·chunk+1>  and its tail (the last chunk only): at most chunkCap
//	                            postings in all, body first, each uvarint len(id) | id |
//	                            uvarint tf | uvarint doc length | uvarint len(meta) |
//	                            the pattern's scoring header (postingMeta)
//	ix/df/<term>                document frequency (uint64) + the term's last chunk (uint32)
//	                            + the number of postings in the last chunk (uint32) + the
//	                            fingerprint of the term's postings (4 × uint64; termDF)
//	ix/d/<pattern id>           docInfo: indexed terms with their chunks, merge tokens
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

// chunkKey is the key of the body of a term's chunk of postings.
func chunkKey(term string, chunk uint32) []byte { return postingKey(term, 2*chunk) }

// tailKey is the key of the tail of a term's chunk of postings: right
// after the chunk's body and before the next chunk, so a scan of the
// term's keys reads its postings in order.
func tailKey(term string, chunk uint32) []byte { return postingKey(term, 2*chunk+1) }

func postingKey(term string, n uint32) []byte {
	k := make([]byte, 0, len(prefPosting)+len(term)+5)
	k = append(k, prefPosting...)
	k = append(k, term...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, n)
}

// chunkCap bounds the postings of a chunk (body and tail): refreshing a
// posting's meta, or removing it, rewrites one key of ≤ chunkCap
// postings, and a query reads a term's postings with ⌈df/chunkCap⌉ keys
// or so (removals leave chunks partly filled; new postings go to the last
// one).
//
// INVARIANT: only a term's last chunk (termDF.last) may have a tail. A
// new posting is appended to the last chunk's tail, which is merged into
// the chunk's body once it holds tailBytes or more, or the chunk is full:
// an addition rewrites a key of about tailBytes, not the whole chunk.
const (
	chunkCap  = 64
	tailBytes = 512
)

// docInfo records what a pattern put in the index, so it can be removed.
type docInfo struct {
	Terms  map[string]int
	Chunks map[string]uint32 // the chunk holding the posting of each term
	Len    int
	Merge  []string
	Type   string
}

// encode: type, len, then the terms (sorted: the bytes are deterministic)
// with their tf and chunk, then the merge tokens; counts and lengths as uvarints.
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
		out = binary.AppendUvarint(out, uint64(d.Chunks[t]))
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
	d.Chunks = make(map[string]uint32, n)
	for range n {
		t, ok1 := str()
		c, ok2 := num()
		ch, ok3 := num()
		if !ok1 || !ok2 || !ok3 {
			return d, bad
		}
		d.Terms[t] = c
		d.Chunks[t] = uint32(ch)
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
// the index and the save), and the merge lists read or written in it (the
// merge check reads the lists the index then appends to). A nil memo
// computes and reads every time.
//
// INVARIANT: lists[k] is the value of merge list k in the event's store
// (nil: absent): a memo lives for one event, and every write of a merge
// list goes through editList with the event's memo.
type memo struct {
	sigs  map[string]*sigInfo
	texts map[string]*searchInfo
	lists map[string][]byte
	terms map[string]*termState // see termState
}

// list reads the merge list at k, through the memo. The value must not be
// modified.
func (m *memo) list(s getter, k []byte) ([]byte, error) {
	if m != nil {
		if v, ok := m.lists[string(k)]; ok {
			return v, nil
		}
	}
	v, _, err := s.Get(k)
	if err != nil {
		return nil, err
	}
	m.setList(k, v)
	return v, nil
}

// setList records the merge list at k as written (nil: deleted).
func (m *memo) setList(k, v []byte) {
	if m == nil {
		return
	}
	if m.lists == nil {
		m.lists = map[string][]byte{}
	}
	m.lists[string(k)] = v
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
	w := Words(text)
	tf, n := termsOf(w)
	si := &searchInfo{tf: tf, n: n, bigrams: sortedBigramsOf(w)}
	if m != nil {
		if m.texts == nil {
			m.texts = map[string]*searchInfo{}
		}
		m.texts[text] = si
	}
	return si
}

// Terms of a text for BM25: normalised words without stop words, with counts.
func Terms(s string) (map[string]int, int) { return termsOf(Words(s)) }

// termsOf is Terms of a text's words.
func termsOf(words []string) (map[string]int, int) {
	tf := map[string]int{}
	n := 0
	for _, w := range words {
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

// IndexPattern (re)writes a pattern's postings, its document frequencies,
// the index totals in st, and its merge tokens. Archived patterns are
// removed from the index instead.
func IndexPattern(s Store, st *Stats, p *Pattern, threshold float64) error {
	var m memo
	if err := indexPattern(s, st, p, threshold, &m, false); err != nil {
		return err
	}
	return m.flush(s)
}

// indexPattern is IndexPattern; with isNew the pattern is known to be
// absent from the index (no removal first); m memoises text analysis and
// holds the terms' records and tails until its flush (not nil).
func indexPattern(s Store, st *Stats, p *Pattern, threshold float64, m *memo, isNew bool) error {
	if !isNew {
		if err := unindexPattern(s, st, p.ID, m); err != nil {
			return err
		}
	}
	if p.Archived {
		return nil
	}
	si := m.search(p.SearchText())
	tf, n := si.tf, si.n
	sg := m.signature(p.Signature(), threshold)
	d := docInfo{Terms: tf, Chunks: make(map[string]uint32, len(tf)), Len: n, Type: p.Type, Merge: sg.tokens}
	entry := mergeEntry(p.ID, sg.bigrams)
	meta := postingMeta(p, len(si.bigrams))
	for t, c := range tf {
		ch, err := addPosting(s, m, t, p.ID, c, n, meta)
		if err != nil {
			return err
		}
		d.Chunks[t] = ch
	}
	for _, tok := range d.Merge {
		if err := editList(s, mergeKey(p.Type, tok), p.ID, entry, m, isNew); err != nil {
			return err
		}
	}
	st.IndexDocs++
	st.IndexLen += n
	return s.Set([]byte(prefDoc+p.ID), d.encode())
}

// appendPosting appends a posting (id, tf, doc length, meta) to a chunk.
func appendPosting(chunk []byte, id []byte, tf, dl uint64, meta []byte) []byte {
	chunk = binary.AppendUvarint(chunk, uint64(len(id)))
	chunk = append(chunk, id...)
	chunk = binary.AppendUvarint(chunk, tf)
	chunk = binary.AppendUvarint(chunk, dl)
	chunk = binary.AppendUvarint(chunk, uint64(len(meta)))
	return append(chunk, meta...)
}

var errPostings = fmt.Errorf("corrupt postings")

// nextPosting splits the first posting off a chunk.
func nextPosting(v []byte) (id []byte, tf, dl uint64, meta, rest []byte, err error) {
	l, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < l {
		return nil, 0, 0, nil, nil, errPostings
	}
	id, v = v[k:k+int(l)], v[k+int(l):]
	tf, k = binary.Uvarint(v)
	if k <= 0 {
		return nil, 0, 0, nil, nil, errPostings
	}
	v = v[k:]
	dl, k = binary.Uvarint(v)
	if k <= 0 {
		return nil, 0, 0, nil, nil, errPostings
	}
	v = v[k:]
	l, k = binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < l {
		return nil, 0, 0, nil, nil, errPostings
	}
	return id, tf, dl, v[k : k+int(l)], v[k+int(l):], nil
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

// termState is a term's record and the tail of its last chunk as the
// event folding leaves them. An event's memo loads them at its first
// posting operation on the term and writes them back at its end (flush):
// the postings an event adds to a term (an import adds hundreds) rewrite
// its record and tail once, not once each.
//
// INVARIANT: between a term's load and the flush, the memo's state is the
// term's: its record, and tail the tail of chunk df.last (empty: none);
// stored is the key of the tail the store holds (nil: none), whatever
// its value. The bodies of chunks are written through at once.
type termState struct {
	df     termDF
	tail   []byte // owned
	stored []byte
	dirty  bool
}

// term returns the state of term, loading it on first use. m must not be
// nil.
func (m *memo) term(s getter, term string) (*termState, error) {
	if ts := m.terms[term]; ts != nil {
		return ts, nil
	}
	df, err := loadDF(s, term)
	if err != nil {
		return nil, err
	}
	ts := &termState{df: df}
	if df.n > 0 {
		k := tailKey(term, df.last)
		v, ok, err := s.Get(k)
		if err != nil {
			return nil, err
		}
		if ok {
			ts.tail, ts.stored = append([]byte(nil), v...), k
		}
	}
	if m.terms == nil {
		m.terms = map[string]*termState{}
	}
	m.terms[term] = ts
	return ts, nil
}

// flush writes back the records and tails of the terms the event changed,
// and forgets them. m must not be nil.
func (m *memo) flush(s Store) error {
	for term, ts := range m.terms {
		if !ts.dirty {
			continue
		}
		var k []byte
		if len(ts.tail) > 0 {
			k = tailKey(term, ts.df.last)
		}
		if ts.stored != nil && string(ts.stored) != string(k) {
			if err := s.Delete(ts.stored); err != nil {
				return err
			}
		}
		if k != nil {
			if err := s.Set(k, ts.tail); err != nil {
				return err
			}
		}
		if err := storeDF(s, term, ts.df); err != nil {
			return err
		}
	}
	m.terms = nil
	return nil
}

// edit rewrites id's posting in the term's chunk (the tail when it is the
// last chunk, else its body): with meta set, its meta replaced; else
// removed. It returns the posting as it was (encoded, nil when the chunk
// does not hold it) and as it is now (nil when removed). A meta equal to
// the posting's leaves the chunk unwritten.
func (ts *termState) edit(s Store, term, id string, chunk uint32, meta []byte) (old, now []byte, err error) {
	if chunk == ts.df.last && len(ts.tail) > 0 {
		old, now, out, err := editPostings(ts.tail, id, meta)
		if err != nil {
			return nil, nil, fmt.Errorf("tail of %q: %w", term, err)
		}
		if old != nil {
			if string(old) != string(now) {
				ts.tail, ts.dirty = out, true
			}
			return old, now, nil
		}
	}
	k := chunkKey(term, chunk)
	v, _, err := s.Get(k)
	if err != nil {
		return nil, nil, err
	}
	old, now, out, err := editPostings(v, id, meta)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", k, err)
	}
	switch {
	case old == nil || string(old) == string(now):
		return old, now, nil
	case len(out) == 0:
		return old, now, s.Delete(k)
	default:
		return old, now, s.Set(k, out)
	}
}

// editPostings is edit of the postings v: it returns the edited postings
// (a new slice) as out, unless the posting is absent or unchanged.
func editPostings(v []byte, id string, meta []byte) (old, now, out []byte, err error) {
	for rest := v; len(rest) > 0; {
		pid, tf, dl, m, r, err := nextPosting(rest)
		if err != nil {
			return nil, nil, nil, err
		}
		if string(pid) != id {
			rest = r
			continue
		}
		at := len(v) - len(rest)
		old = append([]byte(nil), rest[:len(rest)-len(r)]...)
		if meta != nil {
			if string(m) == string(meta) {
				return old, old, nil, nil
			}
			now = appendPosting(nil, pid, tf, dl, meta)
		}
		out = make([]byte, 0, len(v)-len(old)+len(now))
		out = append(append(append(out, v[:at]...), now...), r...)
		return old, now, out, nil
	}
	return nil, nil, nil, nil
}

// refreshPostings rewrites the meta of an indexed pattern's postings, and
// the fingerprints of the terms whose posting changed (in m: see flush).
func refreshPostings(s Store, m *memo, p *Pattern, nBigrams int) error {
	raw, ok, err := s.Get([]byte(prefDoc + p.ID))
	if err != nil || !ok {
		return err
	}
	d, err := decodeDocInfo(raw)
	if err != nil {
		return fmt.Errorf("decode doc info %s: %w", p.ID, err)
	}
	meta := postingMeta(p, nBigrams)
	for t := range d.Terms {
		ts, err := m.term(s, t)
		if err != nil {
			return err
		}
		old, now, err := ts.edit(s, t, p.ID, d.Chunks[t], meta)
		if err != nil {
			return err
		}
		if old == nil {
			return fmt.Errorf("posting %s/%s not in chunk %d", t, p.ID, d.Chunks[t])
		}
		if string(old) == string(now) {
			continue // meta unchanged: the chunk and the fingerprint too
		}
		ts.df.fp.sub(old)
		ts.df.fp.add(now)
		ts.dirty = true
	}
	return nil
}

// addPosting adds id's posting of term to the tail of the term's last
// chunk (a new chunk when that one is full), merging the tail into the
// chunk's body when it has grown to tailBytes or the chunk is full; it
// counts the posting in the term's document frequency and fingerprint
// (in m: see flush), and returns the chunk.
func addPosting(s Store, m *memo, term, id string, tf, dl int, meta []byte) (uint32, error) {
	ts, err := m.term(s, term)
	if err != nil {
		return 0, err
	}
	if ts.df.n >= chunkCap { // its tail was merged when it filled
		ts.df.last, ts.df.n = ts.df.last+1, 0
	}
	at := len(ts.tail)
	ts.tail = appendPosting(ts.tail, []byte(id), uint64(tf), uint64(dl), meta)
	ts.df.df++
	ts.df.n++
	ts.df.fp.add(ts.tail[at:])
	ts.dirty = true
	if len(ts.tail) < tailBytes && ts.df.n < chunkCap {
		return ts.df.last, nil
	}
	bk := chunkKey(term, ts.df.last)
	body, _, err := s.Get(bk)
	if err != nil {
		return 0, err
	}
	out := ts.tail
	if len(body) > 0 {
		out = append(append(make([]byte, 0, len(body)+len(ts.tail)), body...), ts.tail...)
	}
	if err := s.Set(bk, out); err != nil { // Set copies: the tail's buffer is reused
		return 0, err
	}
	ts.tail = ts.tail[:0]
	return ts.df.last, nil
}

// removePosting removes id's posting of term from the chunk holding it
// and uncounts it (in m: see flush).
func removePosting(s Store, m *memo, term, id string, chunk uint32) error {
	ts, err := m.term(s, term)
	if err != nil {
		return err
	}
	old, _, err := ts.edit(s, term, id, chunk, nil)
	if err != nil {
		return err
	}
	if old == nil {
		return fmt.Errorf("posting %s/%s not in chunk %d", term, id, chunk)
	}
	if chunk == ts.df.last {
		ts.df.n--
	}
	ts.df.df--
	ts.df.fp.sub(old)
	ts.dirty = true
	if ts.df.df <= 0 { // no posting left: a term never seen (storeDF deletes its record)
		ts.df = termDF{}
	}
	return nil
}

// UnindexPattern removes a pattern from the index (no-op when absent).
func UnindexPattern(s Store, st *Stats, id string) error {
	var m memo
	if err := unindexPattern(s, st, id, &m); err != nil {
		return err
	}
	return m.flush(s)
}

// unindexPattern is UnindexPattern, reading and writing merge lists, term
// records and tails through m (not nil; see flush).
func unindexPattern(s Store, st *Stats, id string, m *memo) error {
	raw, ok, err := s.Get([]byte(prefDoc + id))
	if err != nil || !ok {
		return err
	}
	d, err := decodeDocInfo(raw)
	if err != nil {
		return fmt.Errorf("decode doc info %s: %w", id, err)
	}
	for t := range d.Terms {
		if err := removePosting(s, m, t, id, d.Chunks[t]); err != nil {
			return err
		}
	}
	for _, tok := range d.Merge {
		if err := editList(s, mergeKey(d.Type, tok), id, nil, m, false); err != nil {
			return err
		}
	}
	st.IndexDocs--
	st.IndexLen -= d.Len
	return s.Delete([]byte(prefDoc + id))
}

func mergeKey(typ, tok string) []byte { return []byte(prefMerge + typ + "/" + tok) }

// termDF is a term's record: its document frequency, its last chunk and
// the number of postings in it, and the fingerprint of its postings.
//
// INVARIANT: fp is the fingerprint of the multiset of the term's stored
// postings (each encoded as appendPosting does), whatever chunks hold
// them: every write of a posting rewrites the record in the same batch.
type termDF struct {
	df   int
	last uint32
	n    int
	fp   fingerprint
}

// dfLen is the length of a stored term record.
const dfLen = 16 + 8*len(fingerprint{})

// loadDF reads a term's record (zero when the term has no posting).
func loadDF(s interface {
	Get([]byte) ([]byte, bool, error)
}, term string) (termDF, error) {
	v, ok, err := s.Get([]byte(prefDF + term))
	if err != nil || !ok {
		return termDF{}, err
	}
	return decodeDF(term, v)
}

// decodeDF decodes a term's record.
func decodeDF(term string, v []byte) (termDF, error) {
	var d termDF
	if len(v) != dfLen {
		return d, fmt.Errorf("term record %q: corrupt (%d bytes)", term, len(v))
	}
	d.df, d.last, d.n = int(binary.BigEndian.Uint64(v)), binary.BigEndian.Uint32(v[8:]), int(binary.BigEndian.Uint32(v[12:]))
	for i := range d.fp {
		d.fp[i] = binary.BigEndian.Uint64(v[16+8*i:])
	}
	return d, nil
}

// storeDF writes a term's record (deleted at df 0: the term has no chunk
// left, and the fingerprint of no posting is zero).
func storeDF(s Store, term string, d termDF) error {
	k := []byte(prefDF + term)
	if d.df <= 0 {
		return s.Delete(k)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, dfLen), uint64(d.df))
	v = binary.BigEndian.AppendUint32(v, d.last)
	v = binary.BigEndian.AppendUint32(v, uint32(d.n))
	for _, x := range d.fp {
		v = binary.BigEndian.AppendUint64(v, x)
	}
	return s.Set(k, v)
}

// fingerprint identifies a multiset of encoded postings: the lane-wise
// sums (mod 2^64) of their SHA-256 digests, read as 4 uint64. Adding and
// removing a posting are O(1) and commute, so the fold maintains it as
// postings come, go and change, and a reader recomputes it from the
// postings it read. Two different multisets share a fingerprint only by a
// collision of these sums (chance about 2^-256 for unrelated contents).
type fingerprint [4]uint64

func (f *fingerprint) add(posting []byte) {
	h := sha256.Sum256(posting)
	for i := range f {
		f[i] += binary.BigEndian.Uint64(h[8*i:])
	}
}

func (f *fingerprint) sub(posting []byte) {
	h := sha256.Sum256(posting)
	for i := range f {
		f[i] -= binary.BigEndian.Uint64(h[8*i:])
	}
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
