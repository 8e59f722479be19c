package crossloop

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/projector"
)

// Storage of records that grow with history. A pattern's effectiveness
// trend and lineage, and a loop's iterations, are stored one key per entry
// beside a head record holding everything else, so that an update appends
// a key instead of decoding and re-encoding the whole history.
//
// INVARIANT: a pattern head p/<id> with trend_n = T and source_loops_n = S
// has exactly the keys pt/<id>\x00<i> for i < T and ps/<id>\x00<i> for i < S
// (i big-endian uint32, entries in append order), and pm/<id>\x00<loop> for
// every loop id of its lineage. A loop head l/<id> lists in iteration_ns the
// numbers N (ascending, distinct) whose li/<id>\x00<N> keys it has.
// INVARIANT: every active (not archived) pattern has its scoring record
// ix/r/<id>, written with the head; an archived pattern has none.

// patternHead is the stored head of a pattern.
type patternHead struct {
	Pattern
	TrendN  int `json:"trend_n"`
	SourceN int `json:"source_loops_n"`
}

// loopHead is the stored head of a loop.
type loopHead struct {
	Loop
	Ns []int `json:"iteration_ns,omitempty"`
	// Begun: a loop.started/v1 was folded for the loop. Only a begun loop
	// completes (and counts in the metrics).
	Begun bool `json:"begun,omitempty"`
}

// count is Loop.IterationCount of the loop the head stands for.
func (h *loopHead) count() int {
	if h.NIterations > 0 {
		return h.NIterations
	}
	return len(h.Ns)
}

func entryKey(pref, id string, i uint32) []byte {
	k := make([]byte, 0, len(pref)+len(id)+5)
	k = append(k, pref...)
	k = append(k, id...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, i)
}

func trendKey(id string, i int) []byte  { return entryKey(prefTrend, id, uint32(i)) }
func sourceKey(id string, i int) []byte { return entryKey(prefSource, id, uint32(i)) }
func memberKey(id, loopID string) []byte {
	return []byte(prefMember + id + "\x00" + loopID)
}

// iterKey orders iterations by number (sign bit flipped: negative first).
func iterKey(loopID string, n int) []byte {
	k := make([]byte, 0, len(prefIter)+len(loopID)+9)
	k = append(k, prefIter...)
	k = append(k, loopID...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(n)^(1<<63))
}

type getter interface {
	Get(key []byte) ([]byte, bool, error)
}

// loadHead reads a pattern's head: the pattern without trend and lineage
// (p.Trend and p.SourceLoops nil) and the stored lengths of both.
func loadHead(r getter, id string) (*patternHead, bool, error) {
	v, ok, err := r.Get(patternKey(id))
	if err != nil || !ok {
		return nil, false, err
	}
	var h patternHead
	if err := json.Unmarshal(v, &h); err != nil {
		return nil, false, fmt.Errorf("decode pattern %s: %w", id, err)
	}
	return &h, true, nil
}

// hasLoop reports whether loopID is in the lineage of the pattern whose
// head is h, counting the entries appended to h.SourceLoops since it was
// loaded.
func hasLoop(r getter, h *patternHead, loopID string) (bool, error) {
	if h.HasLoop(loopID) {
		return true, nil
	}
	_, ok, err := r.Get(memberKey(h.ID, loopID))
	return ok, err
}

// savePattern writes a head loaded with loadHead (or a new pattern, with
// zero lengths): the head, the trend points and lineage entries appended
// to h.Trend and h.SourceLoops since, and the scoring record; with
// refresh, the meta of its postings too (not needed right after
// IndexPattern). h's slices are emptied and its lengths advanced, so h can
// be modified and saved again.
func savePattern(s Store, h *patternHead, refresh bool, m *memo) error {
	for i, tp := range h.Trend {
		raw, err := json.Marshal(tp)
		if err != nil {
			return fmt.Errorf("encode trend: %w", err)
		}
		if err := s.Set(trendKey(h.ID, h.TrendN+i), raw); err != nil {
			return err
		}
	}
	for i, sl := range h.SourceLoops {
		raw, err := json.Marshal(sl)
		if err != nil {
			return fmt.Errorf("encode source loop: %w", err)
		}
		if err := s.Set(sourceKey(h.ID, h.SourceN+i), raw); err != nil {
			return err
		}
		if err := s.Set(memberKey(h.ID, sl.LoopID), nil); err != nil {
			return err
		}
	}
	h.TrendN += len(h.Trend)
	h.SourceN += len(h.SourceLoops)
	h.Trend, h.SourceLoops = nil, nil
	raw, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode pattern %s: %w", h.ID, err)
	}
	if err := s.Set(patternKey(h.ID), raw); err != nil {
		return err
	}
	if h.Archived {
		return s.Delete(scoreKey(h.ID))
	}
	bg := m.search(h.SearchText()).bigrams
	if refresh {
		if err := refreshPostings(s, m, &h.Pattern, len(bg)); err != nil {
			return err
		}
	}
	return s.Set(scoreKey(h.ID), encodeScore(&h.Pattern, bg))
}

// LoadPattern reads one pattern, whole.
func LoadPattern(r Reader, id string) (*Pattern, bool, error) {
	h, ok, err := loadHead(r, id)
	if err != nil || !ok {
		return nil, ok, err
	}
	p := &h.Pattern
	if h.TrendN > 0 {
		p.Trend = make([]TrendPoint, 0, h.TrendN)
		err := r.Scan([]byte(prefTrend+id+"\x00"), func(_, v []byte) error {
			var tp TrendPoint
			if err := json.Unmarshal(v, &tp); err != nil {
				return fmt.Errorf("decode trend of %s: %w", id, err)
			}
			p.Trend = append(p.Trend, tp)
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	if h.SourceN > 0 {
		p.SourceLoops = make([]SourceLoop, 0, h.SourceN)
		err := r.Scan([]byte(prefSource+id+"\x00"), func(_, v []byte) error {
			var sl SourceLoop
			if err := json.Unmarshal(v, &sl); err != nil {
				return fmt.Errorf("decode source loop of %s: %w", id, err)
			}
			p.SourceLoops = append(p.SourceLoops, sl)
			return nil
		})
		if err != nil {
			return nil, false, err
		}
	}
	return p, true, nil
}

// AllPatterns reads every pattern, whole, in id order (list, export,
// prune: admin reads): three ordered scans, heads then trends then lineages.
func AllPatterns(r Reader, keep func(*Pattern) bool) ([]*Pattern, error) {
	all, err := PatternsAfter(r, "", 0)
	if err != nil || keep == nil {
		return all, err
	}
	out := all[:0]
	for _, p := range all {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// PatternsAfter reads, whole and in id order, the patterns whose id sorts
// after after ("": from the first), at most limit of them (0: every one).
// Keys up to after are passed over undecoded and each scan stops past the
// last pattern read, so a part of a large registry (an export in parts)
// decodes its own patterns, not the registry's.
func PatternsAfter(r Reader, after string, limit int) ([]*Pattern, error) {
	var all []*Pattern
	byID := map[string]*Pattern{}
	err := r.Scan([]byte(prefPattern), func(k, v []byte) error {
		if after != "" && string(k[len(prefPattern):]) <= after {
			return nil
		}
		if limit > 0 && len(all) == limit {
			return projector.ErrStopScan
		}
		var h patternHead
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode pattern: %w", err)
		}
		p := &h.Pattern
		all = append(all, p)
		byID[p.ID] = p
		return nil
	})
	if err != nil || len(all) == 0 {
		return all, err
	}
	// Entry keys are prefix + id + \x00 + 4 bytes of index: in id order,
	// so a scan ends past the last pattern read.
	last := all[len(all)-1].ID
	entries := func(pref string, add func(p *Pattern, v []byte) error) error {
		return r.Scan([]byte(pref), func(k, v []byte) error {
			id := string(k[len(pref) : len(k)-5])
			if id > last {
				return projector.ErrStopScan
			}
			if p := byID[id]; p != nil {
				return add(p, v)
			}
			return nil
		})
	}
	err = entries(prefTrend, func(p *Pattern, v []byte) error {
		var tp TrendPoint
		if err := json.Unmarshal(v, &tp); err != nil {
			return fmt.Errorf("decode trend of %s: %w", p.ID, err)
		}
		p.Trend = append(p.Trend, tp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = entries(prefSource, func(p *Pattern, v []byte) error {
		var sl SourceLoop
		if err := json.Unmarshal(v, &sl); err != nil {
			return fmt.Errorf("decode source loop of %s: %w", p.ID, err)
		}
		p.SourceLoops = append(p.SourceLoops, sl)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// loadLoopHead reads a loop's head (Iterations nil).
func loadLoopHead(r getter, id string) (*loopHead, bool, error) {
	v, ok, err := r.Get(loopKey(id))
	if err != nil || !ok {
		return nil, false, err
	}
	var h loopHead
	if err := json.Unmarshal(v, &h); err != nil {
		return nil, false, fmt.Errorf("decode loop %s: %w", id, err)
	}
	return &h, true, nil
}

// loadIterations fills h.Iterations from its iteration keys, by number.
func loadIterations(r getter, h *loopHead) error {
	h.Iterations = make([]Iteration, 0, len(h.Ns))
	for _, n := range h.Ns {
		v, ok, err := r.Get(iterKey(h.ID, n))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("loop %s: iteration %d missing", h.ID, n)
		}
		var it Iteration
		if err := json.Unmarshal(v, &it); err != nil {
			return fmt.Errorf("decode iteration %d of %s: %w", n, h.ID, err)
		}
		h.Iterations = append(h.Iterations, it)
	}
	return nil
}

// LoadLoop reads one loop, whole.
func LoadLoop(r Reader, id string) (*Loop, bool, error) {
	h, ok, err := loadLoopHead(r, id)
	if err != nil || !ok {
		return nil, ok, err
	}
	if err := loadIterations(r, h); err != nil {
		return nil, false, err
	}
	if len(h.Iterations) == 0 {
		h.Iterations = nil
	}
	return &h.Loop, true, nil
}

// saveLoopHead writes the head of a loop (never its iterations).
func saveLoopHead(s Store, h *loopHead) error {
	its := h.Iterations
	h.Iterations = nil
	raw, err := json.Marshal(h)
	h.Iterations = its
	if err != nil {
		return fmt.Errorf("encode loop %s: %w", h.ID, err)
	}
	return s.Set(loopKey(h.ID), raw)
}

// putIteration stores one iteration, replacing one of the same number.
func putIteration(s Store, h *loopHead, it *Iteration) error {
	i := sort.SearchInts(h.Ns, it.N)
	if i == len(h.Ns) || h.Ns[i] != it.N {
		h.Ns = append(h.Ns, 0)
		copy(h.Ns[i+1:], h.Ns[i:])
		h.Ns[i] = it.N
	}
	raw, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("encode iteration: %w", err)
	}
	return s.Set(iterKey(h.ID, it.N), raw)
}

// Scoring record ix/r/<id> of an active pattern: what injection needs to
// filter and score a candidate without decoding the pattern.
//
//	type (1 byte) | successful, failed (int64 each) | success_rate (float64 bits)
//	| category length (uvarint) | category | search-text bigrams, sorted, each
//	  uvarint length + bytes
type scoreRec struct {
	typ                byte
	successful, failed int
	rate               float64
	category           []byte
	bigrams            []byte // the encoded sorted bigrams
	nBigrams           int
}

var typeCodes = map[string]byte{TypeError: 1, TypeSuccess: 2, TypeAnti: 3, TypeTemplate: 4}
var typeNames = [...]string{"", TypeError, TypeSuccess, TypeAnti, TypeTemplate}

// encodeScore encodes p's scoring record; bg is sortedBigrams(p.SearchText()).
func encodeScore(p *Pattern, bg []string) []byte {
	n := 1 + 24 + binary.MaxVarintLen64 + len(p.Category) + binary.MaxVarintLen64
	for _, b := range bg {
		n += len(b) + 2
	}
	out := make([]byte, 0, n)
	out = append(out, typeCodes[p.Type])
	out = binary.BigEndian.AppendUint64(out, uint64(p.Successful))
	out = binary.BigEndian.AppendUint64(out, uint64(p.Failed))
	out = binary.BigEndian.AppendUint64(out, math.Float64bits(p.SuccessRate))
	out = binary.AppendUvarint(out, uint64(len(p.Category)))
	out = append(out, p.Category...)
	out = binary.AppendUvarint(out, uint64(len(bg)))
	for _, b := range bg {
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

func decodeScore(v []byte) (scoreRec, bool) {
	var s scoreRec
	if len(v) < 25 || int(v[0]) >= len(typeNames) {
		return s, false
	}
	s.typ = v[0]
	s.successful = int(int64(binary.BigEndian.Uint64(v[1:])))
	s.failed = int(int64(binary.BigEndian.Uint64(v[9:])))
	s.rate = math.Float64frombits(binary.BigEndian.Uint64(v[17:]))
	v = v[25:]
	cl, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < cl {
		return s, false
	}
	s.category = v[k : k+int(cl)]
	v = v[k+int(cl):]
	nb, k := binary.Uvarint(v)
	if k <= 0 {
		return s, false
	}
	s.nBigrams, s.bigrams = int(nb), v[k:]
	return s, true
}

// decodeMeta reads a posting's meta (postingMeta).
func decodeMeta(v []byte) (scoreRec, bool) {
	var s scoreRec
	if len(v) < 29 || int(v[0]) >= len(typeNames) {
		return s, false
	}
	s.typ = v[0]
	s.successful = int(int64(binary.BigEndian.Uint64(v[1:])))
	s.failed = int(int64(binary.BigEndian.Uint64(v[9:])))
	s.rate = math.Float64frombits(binary.BigEndian.Uint64(v[17:]))
	s.nBigrams = int(binary.BigEndian.Uint32(v[25:]))
	s.category = v[29:]
	return s, true
}

// pattern is a stand-in carrying what Keep, Maturity and Effectiveness read.
func (s *scoreRec) pattern() Pattern {
	return Pattern{Type: typeNames[s.typ], Successful: s.successful, Failed: s.failed, SuccessRate: s.rate}
}

// jaccard of a sorted bigram list and the record's bigrams (Jaccard's
// rule: both empty → 1).
func (s *scoreRec) jaccard(set map[string]struct{}) float64 {
	if len(set) == 0 && s.nBigrams == 0 {
		return 1
	}
	inter := 0
	v := s.bigrams
	for range s.nBigrams {
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			break
		}
		if _, ok := set[string(v[k:k+int(l)])]; ok {
			inter++
		}
		v = v[k+int(l):]
	}
	return float64(inter) / float64(len(set)+s.nBigrams-inter)
}

// sortedBigrams is Bigrams(s) as a sorted list.
func sortedBigrams(s string) []string { return sortedBigramsOf(Words(s)) }

// sortedBigramsOf is sortedBigrams of a text's words: the set of their
// bigrams (Bigrams), sorted, built without a map.
func sortedBigramsOf(w []string) []string {
	if len(w) == 1 {
		return []string{w[0]}
	}
	if len(w) < 2 {
		return []string{}
	}
	// The bigrams are substrings of one string (one allocation, not one
	// each).
	n := 0
	for i := 0; i+1 < len(w); i++ {
		n += len(w[i]) + 1 + len(w[i+1])
	}
	var b strings.Builder
	b.Grow(n)
	for i := 0; i+1 < len(w); i++ {
		b.WriteString(w[i])
		b.WriteByte(' ')
		b.WriteString(w[i+1])
	}
	all := b.String()
	out := make([]string, len(w)-1)
	at := 0
	for i := range out {
		l := len(w[i]) + 1 + len(w[i+1])
		out[i] = all[at : at+l]
		at += l
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// jaccardSorted is Jaccard of two sets given as sorted lists.
func jaccardSorted(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			inter++
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// jaccardEncoded is jaccardSorted of a sorted list and a sorted list
// encoded with encodeList, without decoding the latter.
func jaccardEncoded(a []string, enc []byte) (float64, error) {
	inter, nb, i := 0, 0, 0
	for v := enc; len(v) > 0; nb++ {
		l, k := binary.Uvarint(v)
		if k <= 0 || uint64(len(v)-k) < l {
			return 0, fmt.Errorf("corrupt list")
		}
		b := v[k : k+int(l)]
		v = v[k+int(l):]
		for i < len(a) && a[i] < string(b) {
			i++
		}
		if i < len(a) && a[i] == string(b) {
			inter++
			i++
		}
	}
	if len(a) == 0 && nb == 0 {
		return 1, nil
	}
	return float64(inter) / float64(len(a)+nb-inter), nil
}
