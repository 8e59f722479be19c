package crossloop

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

// Postings: a term's chunks, the tail of its last chunk, its record
// (document frequency, last chunk, fingerprint), read and written through
// the fold's memo. The key layout is in index.go.

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
// its value. The body of the chunk the tail was last merged into is held
// too, once read (bodyOK): body is chunk bodyChunk's as the event leaves
// it, written back when the event moves on to another chunk or at the
// flush (bodyDirty), so the merges of an event into a chunk write it once;
// other chunks' bodies are written through at once. With the memo's cache
// set, ops are the postings removed and added since the load (from: the
// record's fingerprint then), for the cache's delta (flush).
type termState struct {
	df     termDF
	tail   []byte // owned
	stored []byte
	dirty  bool
	from   fingerprint
	ops    []postingOp

	body              []byte // owned
	bodyChunk         uint32
	bodyOK, bodyDirty bool
}

// loadBody makes chunk the body the state holds, reading it (the one held
// before is written back first when changed).
func (ts *termState) loadBody(s Store, term string, chunk uint32) error {
	if ts.bodyOK && ts.bodyChunk == chunk {
		return nil
	}
	if err := ts.writeBody(s, term); err != nil {
		return err
	}
	v, _, err := s.Get(chunkKey(term, chunk))
	if err != nil {
		return err
	}
	ts.body = append(ts.body[:0], v...)
	ts.bodyChunk, ts.bodyOK = chunk, true
	return nil
}

// writeBody writes back the body the state holds when the event changed
// it (deleted when empty).
func (ts *termState) writeBody(s Store, term string) error {
	if !ts.bodyDirty {
		return nil
	}
	ts.bodyDirty = false
	k := chunkKey(term, ts.bodyChunk)
	if len(ts.body) == 0 {
		return s.Delete(k)
	}
	return s.Set(k, ts.body) // Set copies: the body's buffer is reused
}

// logOp notes, for the memo's cache, that the event removed posting old
// and added now (either nil: none).
func (m *memo) logOp(ts *termState, old, now []byte) {
	if m.cache == nil {
		return
	}
	ts.ops = append(ts.ops, postingOp{old: clone(old), now: clone(now)})
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
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
	ts := &termState{df: df, from: df.fp}
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
// logs their deltas in the memo's cache (when set), and forgets them. m
// must not be nil.
func (m *memo) flush(s Store) error {
	if m.seqDirty {
		if err := s.Set([]byte(keyMergeSeq), binary.BigEndian.AppendUint64(nil, m.seq)); err != nil {
			return err
		}
	}
	m.seqOK, m.seqDirty = false, false
	if err := m.flushLists(s); err != nil {
		return err
	}
	for term, ts := range m.terms {
		if err := ts.writeBody(s, term); err != nil {
			return err
		}
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
		m.cache.record(term, ts.from, ts.df.fp, ts.ops)
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
	if ts.bodyOK && chunk == ts.bodyChunk {
		old, now, out, err := editPostings(ts.body, id, meta)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", chunkKey(term, chunk), err)
		}
		if old != nil && string(old) != string(now) {
			ts.body, ts.bodyDirty = out, true
		}
		return old, now, nil
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
		m.logOp(ts, old, now)
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
	m.logOp(ts, nil, ts.tail[at:])
	ts.dirty = true
	if len(ts.tail) < tailBytes && ts.df.n < chunkCap {
		return ts.df.last, nil
	}
	if err := ts.loadBody(s, term, ts.df.last); err != nil {
		return 0, err
	}
	ts.body = append(ts.body, ts.tail...)
	ts.bodyDirty = true
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
	m.logOp(ts, old, nil)
	ts.dirty = true
	if ts.df.df <= 0 { // no posting left: a term never seen (storeDF deletes its record)
		ts.df = termDF{}
	}
	return nil
}

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
// sums (mod 2^64) of two 64-bit hashes of each (xxHash64 and FNV-1a).
// Adding and removing a posting are O(1) and commute, so the fold
// maintains it as postings come, go and change, and a reader recomputes
// it from the postings it read. Two different multisets share a
// fingerprint only by a collision of these sums (chance about 2^-128 for
// unrelated contents). It is a cache's validator, in no answer: the
// hashes need to be stable, not cryptographic.
type fingerprint [2]uint64

func (f *fingerprint) add(posting []byte) {
	f[0] += xxhash.Sum64(posting)
	f[1] += fnv64(posting)
}

func (f *fingerprint) sub(posting []byte) {
	f[0] -= xxhash.Sum64(posting)
	f[1] -= fnv64(posting)
}

// fnv64 is FNV-1a (64 bit) of b.
func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
