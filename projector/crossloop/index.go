package crossloop

import (
	"encoding/binary"
	"fmt"
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
//	ix/t/<term>\x00<2·chunk>    the body of a chunk of the term's postings (uint32),
//	ix/t/<term>\x00<2·chunk+1>  and its tail (the last chunk only): at most chunkCap
//	                            postings in all, body first, each uvarint len(id) | id |
//	                            uvarint tf | uvarint doc length | uvarint len(meta) |
//	                            the pattern's scoring header (postingMeta)
//	ix/df/<term>                document frequency (uint64) + the term's last chunk (uint32)
//	                            + the number of postings in the last chunk (uint32) + the
//	                            fingerprint of the term's postings (2 × uint64; termDF)
//	ix/d/<pattern id>           docInfo: indexed terms with their chunks, merge tokens
//	ix/m/<type>/<key>           the patterns indexed under the merge key (mergeKeys), each with
//	                            its merge sequence number and its signature's number of bigrams
//	                            (mergeEntry), in sequence order
//	ix/g/<pattern id>           the signature's sorted bigrams of an indexed pattern (sigKey)
//	ix/mk                       the fingerprint of the set of merge lists present (mergeKeySet)
//	ix/ms                       the merge sequence: the number of patterns indexed so far (uint64)
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
	prefSig     = "ix/g/"
	keyMergeSeq = "ix/ms"
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
// INVARIANT: lists[k].v is the value of merge list k as the event leaves
// it (nil: absent), written to the store by flush when dirty: a memo
// lives for one event, and every write of a merge list goes through
// editList with the event's memo.
type memo struct {
	sigs  map[string]*sigInfo
	texts map[string]*searchInfo
	lists map[string]*mergeList
	terms map[string]*termState // see termState
	// seq is the merge sequence as the event leaves it (see flush), once
	// loaded (seqOK); seqDirty when the event advanced it.
	seq             uint64
	seqOK, seqDirty bool
	// filter is the filter of merge lists present (mergefilter.go).
	filter mergeFilterState
}

// nextSeq returns the next merge sequence number and advances the
// sequence (written back by flush). m must not be nil.
func (m *memo) nextSeq(s getter) (uint64, error) {
	if !m.seqOK {
		v, ok, err := s.Get([]byte(keyMergeSeq))
		if err != nil {
			return 0, err
		}
		m.seq, m.seqOK = 0, true
		if ok {
			if len(v) != 8 {
				return 0, fmt.Errorf("merge sequence: corrupt (%d bytes)", len(v))
			}
			m.seq = binary.BigEndian.Uint64(v)
		}
	}
	n := m.seq
	m.seq++
	m.seqDirty = true
	return n, nil
}

// mergeList is a merge list held by a memo: own when v is the memo's
// (appended to in place), dirty when the event changed it; stored when
// the store holds the list.
type mergeList struct {
	v                  []byte
	own, dirty, stored bool
}

// list reads the merge list at k, through the memo. The value must not be
// modified.
func (m *memo) list(s getter, k []byte) ([]byte, error) {
	if m == nil {
		v, _, err := s.Get(k)
		return v, err
	}
	l, err := m.listState(s, k)
	if err != nil {
		return nil, err
	}
	return l.v, nil
}

// listState is the memo's state of the merge list at k, read on first
// use. m must not be nil.
func (m *memo) listState(s getter, k []byte) (*mergeList, error) {
	if l := m.lists[string(k)]; l != nil {
		return l, nil
	}
	var v []byte
	may, err := m.mayHold(s, k)
	if err != nil {
		return nil, err
	}
	if may {
		if v, _, err = s.Get(k); err != nil {
			return nil, err
		}
	}
	l := &mergeList{v: v, stored: v != nil}
	if m.lists == nil {
		m.lists = map[string]*mergeList{}
	}
	m.lists[string(k)] = l
	return l, nil
}

// flushLists writes back the merge lists the event changed, and the
// fingerprint of the set of lists present when it changed.
func (m *memo) flushLists(s Store) error {
	changed := false
	for k, l := range m.lists {
		if !l.dirty {
			continue
		}
		l.dirty = false
		var err error
		if len(l.v) == 0 {
			l.v = nil
			err = s.Delete([]byte(k))
		} else {
			err = s.Set([]byte(k), l.v)
		}
		if err != nil {
			return err
		}
		if now := l.v != nil; now != l.stored {
			l.stored = now
			if err := m.listChanged(s, []byte(k), now); err != nil {
				return err
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return storeMergeKeySet(s, m.filter.ks)
}

type sigInfo struct {
	bigrams []string // sorted
	sketch  sketch   // of bigrams
	bits    []uint8  // sketchBit of each bigram
	tokens  []string // MergeTokens
	keys    []string // mergeKeys to index under
	lookup  []string // mergeKeys to look up
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
	ord := globalOrder(bg)
	si := &sigInfo{bigrams: bg, tokens: mergeTokens(ord, t), keys: mergeKeys(ord, t, false),
		lookup: mergeKeys(ord, t, true), t: t}
	si.sketch, si.bits = sketchOf(bg)
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
	d := docInfo{Terms: tf, Chunks: make(map[string]uint32, len(tf)), Len: n, Type: p.Type, Merge: sg.keys}
	seq, err := m.nextSeq(s)
	if err != nil {
		return err
	}
	entry := mergeEntry(p.ID, seq, len(sg.bigrams), sg.sketch)
	if err := s.Set(sigKey(p.ID), encodeList(sg.bigrams)); err != nil {
		return err
	}
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
	if err := s.Delete(sigKey(id)); err != nil {
		return err
	}
	st.IndexDocs--
	st.IndexLen -= d.Len
	return s.Delete([]byte(prefDoc + id))
}
