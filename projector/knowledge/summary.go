package knowledge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Entry summaries: a compact binary record per entry, written by saveEntry
// next to the entry's JSON, holding what the hot paths read — a
// submission's comparison with its pool (validation, near-duplicates,
// caps, hive encounters) and injection — so they neither decode JSON nor
// recompute text features of every existing entry.
//
// Keys (within the model):
//
//	x/h/a/<seq>/<id>                  summary of an active hive entry
//	x/s/<project token>/a/<seq>/<id>  summary of an active swarm entry
//	x/.../i/<seq>/<id>                the same for inactive (archived or
//	                                  quarantined) entries
//
// <seq> is CreatedSeq as 16 hex digits, so a scan lists a pool in
// (CreatedSeq, id) order: the order scanEntries gives (creation order, key
// order of ids among equal sequences).
//
// so one scan of x/<pool>/ reads a pool's version (x/<pool>/a,
// poolcache.go), its active entries, then its inactive ones, and
// x/<pool>/a/ its active ones only.
//
// INVARIANT: every entry has exactly one summary, under a/ when Active()
// and i/ otherwise, equal to summaryOf(entry) for its stored JSON; the
// index i/<id> records the summary key so saveEntry can move it.
const pfxSum = "x/"

// summary is the decoded summary of one entry.
type summary struct {
	ID, Tier, Project, Lesson, Category, Scope, Status, ArchiveReason, SourceProject string
	CreatedSeq                                                                       uint64
	CreatedAt                                                                        time.Time
	Confidence                                                                       float64
	Outcomes                                                                         Outcomes // Shown, Helpful, Harmful only
	features
	// vocab and relw are rel as ids of words of vocab, set for the
	// summaries of a cachedPool before it is shared (nil otherwise).
	vocab *relVocab
	relw  []uint32
}

func (s *summary) active() bool { return s.Status != StatusArchived && s.Status != StatusQuarantined }

// removed is Removed for a summary: a todo past its TTL.
func (s *summary) removed() bool {
	return s.Status == StatusArchived && s.ArchiveReason == ArchiveTTLTodo
}

func sumScope(tier, project string) string {
	if tier == TierHive {
		return "h/"
	}
	return "s/" + events.EncodeToken(project) + "/"
}

func summaryKey(e *Entry) string {
	state := "i/"
	if e.Active() {
		state = "a/"
	}
	return fmt.Sprintf("%s%s%s%016x/%s", pfxSum, sumScope(e.Tier, e.Project), state, e.CreatedSeq, e.ID)
}

func summaryOf(e *Entry) *summary {
	return &summary{ID: e.ID, Tier: e.Tier, Project: e.Project, Lesson: e.Lesson, Category: e.Category,
		Scope: e.Scope, Status: e.Status, ArchiveReason: e.ArchiveReason, SourceProject: e.SourceProject,
		CreatedSeq: e.CreatedSeq, CreatedAt: e.CreatedAt, Confidence: e.Confidence,
		Outcomes: Outcomes{Shown: e.Outcomes.Shown, Helpful: e.Outcomes.Helpful, Harmful: e.Outcomes.Harmful},
		features: cachedFeatures(e.Lesson, e.Tags, e.Category)}
}

// asDecoded returns s as decodeSummary(s.encode()) returns it: counts
// below zero as zero, the creation time in UTC.
func (s *summary) asDecoded() *summary {
	s.Outcomes.Shown, s.Outcomes.Helpful, s.Outcomes.Harmful = max(s.Outcomes.Shown, 0), max(s.Outcomes.Helpful, 0), max(s.Outcomes.Harmful, 0)
	s.CreatedAt = time.Unix(s.CreatedAt.Unix(), int64(s.CreatedAt.Nanosecond())).UTC()
	return s
}

// Features are pure functions of the text, so a memo keyed by the exact
// text is always right; it saves recomputing them when an entry is saved
// again (outcomes, sweeps, reinforcements). Bounded: cleared when full.
var featureMemo = struct {
	sync.Mutex
	m map[string]features
}{m: map[string]features{}}

const featureMemoMax = 16384

// recentFeatures are the last texts cachedFeatures was asked for: a fold
// asks for the same entry's features at each of its saves, and comparing
// the strings (the same ones, so equal at their first byte's address) is
// cheaper than building the memo's key.
var recentFeatures struct {
	sync.Mutex
	ring [8]struct {
		lesson, category string
		tags             []string // a copy: callers may change theirs
		f                features
	}
	next int
}

func cachedFeatures(lesson string, tags []string, category string) features {
	recentFeatures.Lock()
	for i := range recentFeatures.ring {
		r := &recentFeatures.ring[i]
		if r.lesson == lesson && r.category == category && slices.Equal(r.tags, tags) && r.f.bigrams != nil {
			f := r.f
			recentFeatures.Unlock()
			return f
		}
	}
	recentFeatures.Unlock()
	f := memoFeatures(lesson, tags, category)
	if f.bigrams != nil { // texts without bigrams are rare: not kept
		recentFeatures.Lock()
		r := &recentFeatures.ring[recentFeatures.next]
		recentFeatures.next = (recentFeatures.next + 1) % len(recentFeatures.ring)
		r.lesson, r.category, r.tags, r.f = lesson, category, append(r.tags[:0:0], tags...), f
		recentFeatures.Unlock()
	}
	return f
}

func memoFeatures(lesson string, tags []string, category string) features {
	n := len(lesson) + len(category) + 8
	for _, t := range tags {
		n += len(t) + 4
	}
	kb := make([]byte, 0, n)
	for _, s := range append([]string{lesson, category}, tags...) {
		kb = appendString(kb, s)
	}
	k := string(kb)
	featureMemo.Lock()
	f, ok := featureMemo.m[k]
	featureMemo.Unlock()
	if ok {
		return f
	}
	f = featuresOf(lesson, tags, category)
	featureMemo.Lock()
	if len(featureMemo.m) >= featureMemoMax {
		clear(featureMemo.m)
	}
	featureMemo.m[k] = f
	featureMemo.Unlock()
	return f
}

// Encoding, in this order so that the fold's pool scan (poolScan) reads a
// prefix of the record in place: format byte; flags (flagActive,
// flagRemoved, flagPromoted); uvarint created_seq; uvarint shown, helpful,
// harmful; id; the bigram list (count, the 8-byte little-endian hashes,
// the byte length of the strings, the strings), so a comparison walks the
// hashes and reads a string only on an equal hash; the contradiction-tag
// list; cnorm; then
// tier, project, lesson, category, scope, status, archive reason, source
// project, rel, varint seconds + uvarint nanoseconds of created_at and the
// IEEE-754 bits of confidence. Strings are uvarint length + bytes, lists
// uvarint count + strings.
const summaryFormat = 1

const (
	flagActive = 1 << iota
	flagRemoved
	flagPromoted
)

func (s *summary) encode() []byte {
	b := make([]byte, 0, 64+len(s.Lesson)*4)
	var flags byte
	if s.active() {
		flags |= flagActive
	}
	if s.removed() {
		flags |= flagRemoved
	}
	if s.Status == StatusPromoted {
		flags |= flagPromoted
	}
	b = append(b, summaryFormat, flags)
	b = binary.AppendUvarint(b, s.CreatedSeq)
	for _, n := range []int{s.Outcomes.Shown, s.Outcomes.Helpful, s.Outcomes.Harmful} {
		b = binary.AppendUvarint(b, uint64(max(n, 0)))
	}
	b = appendString(b, s.ID)
	b = binary.AppendUvarint(b, uint64(len(s.bigrams)))
	for _, h := range s.bghash {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	var block []byte
	for _, x := range s.bigrams {
		block = appendString(block, x)
	}
	b = binary.AppendUvarint(b, uint64(len(block)))
	b = append(b, block...)
	b = binary.AppendUvarint(b, uint64(len(s.ctags)))
	for _, x := range s.ctags {
		b = appendString(b, x)
	}
	for _, x := range []string{s.cnorm, s.Tier, s.Project, s.Lesson, s.Category, s.Scope, s.Status, s.ArchiveReason,
		s.SourceProject, s.rel} {
		b = appendString(b, x)
	}
	b = binary.AppendVarint(b, s.CreatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(s.CreatedAt.Nanosecond()))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Confidence))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errSummary = errors.New("knowledge: corrupt entry summary")

// decodeSummary decodes v; every string of the result shares one copy of v.
func decodeSummary(v []byte) (*summary, error) {
	d := sumDecoder[string]{s: string(v)}
	if d.byte() != summaryFormat {
		return nil, errSummary
	}
	d.byte() // flags: derived from the status below
	s := &summary{}
	s.CreatedSeq = d.uvarint()
	s.Outcomes.Shown, s.Outcomes.Helpful, s.Outcomes.Harmful = int(d.uvarint()), int(d.uvarint()), int(d.uvarint())
	s.ID = d.str()
	s.bigrams, s.bghash = d.hashedList()
	s.ctags = d.list()
	for _, p := range []*string{&s.cnorm, &s.Tier, &s.Project, &s.Lesson, &s.Category, &s.Scope, &s.Status,
		&s.ArchiveReason, &s.SourceProject, &s.rel} {
		*p = d.str()
	}
	sec := d.varint()
	nsec := d.uvarint()
	s.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	s.Confidence = math.Float64frombits(d.u64())
	if d.bad {
		return nil, errSummary
	}
	return s, nil
}

// sumDecoder reads a summary from a string (sharing its bytes) or in
// place from a []byte.
type sumDecoder[T ~string | ~[]byte] struct {
	s   T
	i   int
	bad bool
}

func (d *sumDecoder[T]) byte() byte {
	if d.i >= len(d.s) {
		d.bad = true
		return 0
	}
	d.i++
	return d.s[d.i-1]
}

func (d *sumDecoder[T]) uvarint() uint64 {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c := d.byte()
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	d.bad = true
	return 0
}

func (d *sumDecoder[T]) varint() int64 {
	u := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *sumDecoder[T]) u64() uint64 {
	if d.i+8 > len(d.s) {
		d.bad = true
		return 0
	}
	var x uint64
	for k := 7; k >= 0; k-- {
		x = x<<8 | uint64(d.s[d.i+k])
	}
	d.i += 8
	return x
}

// str returns the next string (a slice of d.s, not a copy).
func (d *sumDecoder[T]) str() T {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.s)-d.i) {
		d.bad = true
		return d.s[:0]
	}
	x := d.s[d.i : d.i+int(n)]
	d.i += int(n)
	return x
}

// list returns the next list of strings as converted copies.
func (d *sumDecoder[T]) list() []string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.s)-d.i) {
		d.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = string(d.str())
	}
	return out
}

// hashedList returns the next bigram list and its hashes.
func (d *sumDecoder[T]) hashedList() ([]string, []uint64) {
	n := d.cursor()
	if n == 0 || d.bad || n*8 > len(d.s)-d.i {
		d.bad = d.bad || n*8 > len(d.s)-d.i
		d.uvarint() // the empty string block
		return nil, nil
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = d.u64()
	}
	d.uvarint() // byte length of the strings
	out := make([]string, n)
	for i := range out {
		out[i] = string(d.str())
	}
	return out, hs
}

// cursor reads a list's count (its strings follow).
func (d *sumDecoder[T]) cursor() int {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.s)-d.i) {
		d.bad = true
		return 0
	}
	return int(n)
}

// jaccardPacked is jaccardFeatures(a, the next bigram list of d) without
// copying the list: it merges the hashes and reads a string of the list
// only where the hashes are equal; it leaves d after the list.
func jaccardPacked(a features, d *sumDecoder[[]byte]) float64 {
	n := d.cursor()
	if d.bad || n*8 > len(d.s)-d.i {
		d.bad = true
		return 0
	}
	hs := d.s[d.i : d.i+8*n]
	d.i += 8 * n
	blockLen := d.uvarint()
	if d.bad || blockLen > uint64(len(d.s)-d.i) {
		d.bad = true
		return 0
	}
	strs := sumDecoder[[]byte]{s: d.s[d.i : d.i+int(blockLen)]}
	d.i += int(blockLen)
	if len(a.bigrams) == 0 && n == 0 {
		return 1
	}
	// sj is the index of the last string read from strs (x), -1 before.
	sj, x := -1, []byte(nil)
	inter := 0
	for i, j := 0, 0; i < len(a.bigrams) && j < n; {
		h := binary.LittleEndian.Uint64(hs[8*j:])
		switch ah := a.bghash[i]; {
		case ah < h:
			i++
			continue
		case ah > h:
			j++
			continue
		}
		for sj < j {
			x, sj = strs.str(), sj+1
		}
		switch {
		case a.bigrams[i] < string(x):
			i++
		case a.bigrams[i] > string(x):
			j++
		default:
			inter++
			i++
			j++
		}
	}
	if strs.bad {
		d.bad = true
	}
	return float64(inter) / float64(len(a.bigrams)+n-inter)
}

// sharesPacked is sharesSorted(a, the next list of d), leaving d after it.
func sharesPacked(a []string, d *sumDecoder[[]byte]) bool {
	n := d.cursor()
	shared, i := false, 0
	for range n {
		x := d.str()
		for i < len(a) && a[i] < string(x) {
			i++
		}
		if i < len(a) && a[i] == string(x) {
			shared = true
		}
	}
	return shared
}

// poolScan is what a change of a pool (a project's swarm store or the
// hive) needs to know about it with respect to one lesson, read from the
// summaries in place (nothing decoded but what is kept):
type poolScan struct {
	// activeIDs and capKeys describe the active entries, in creation order.
	activeIDs []string
	capKeys   []capKey
	// shared are the active entries sharing a contradiction tag with the
	// lesson and holding a term its contexts need (candidateContexts): the
	// only ones Contradictions can report, in creation order;
	// sharedIDs[i] is the id of shared[i].
	shared    []Existing
	sharedIDs []string
	// nearActive lists the active near-duplicates in creation order;
	// nearInactive is the first inactive near-duplicate not removed from
	// view; nearAny tells whether any entry at all (removed ones too) is a
	// near-duplicate.
	nearActive   []string
	nearInactive string
	nearAny      bool
}

// scanPool reads the pool of (tier, project) for a lesson with the given
// features, in one scan: the active entries, then (when withInactive) the
// inactive ones. The fold reads its pools from held pool states instead
// (foldpool.go); scanPool is the reference they are tested against.
func scanPool(r projector.Reader, tier, project string, lf features, threshold float64, withInactive bool) (*poolScan, error) {
	ps := &poolScan{}
	var needed []string
	if len(lf.ctags) > 0 {
		_, needed = candidateContexts(lf.cnorm)
	}
	prefix := pfxSum + sumScope(tier, project)
	if !withInactive {
		prefix += "a/"
	}
	vk := poolVersionKey(sumScope(tier, project))
	err := r.Scan([]byte(prefix), func(k, v []byte) error {
		if string(k) == vk {
			return nil // the pool's version, listed before its active summaries
		}
		d := sumDecoder[[]byte]{s: v}
		if d.byte() != summaryFormat {
			return fmt.Errorf("%w: %s", errSummary, k)
		}
		flags := d.byte()
		seq := d.uvarint()
		d.uvarint() // shown
		helpful, harmful := d.uvarint(), d.uvarint()
		id := d.str()
		near := jaccardPacked(lf, &d) >= threshold
		if flags&flagActive == 0 {
			if near {
				ps.nearAny = true
				if flags&flagRemoved == 0 && ps.nearInactive == "" {
					ps.nearInactive = string(id)
				}
			}
			if d.bad {
				return fmt.Errorf("%w: %s", errSummary, k)
			}
			return nil
		}
		start := d.i
		if len(needed) > 0 && sharesPacked(lf.ctags, &d) {
			ctags := (&sumDecoder[[]byte]{s: v, i: start}).list()
			if cnorm := string(d.str()); containsAny(cnorm, needed) {
				ps.shared = append(ps.shared, Existing{feat: &features{ctags: ctags, cnorm: cnorm}})
				ps.sharedIDs = append(ps.sharedIDs, string(id))
			}
		}
		if d.bad {
			return fmt.Errorf("%w: %s", errSummary, k)
		}
		sid := string(id)
		ps.activeIDs = append(ps.activeIDs, sid)
		ps.capKeys = append(ps.capKeys, capKey{active: true, promoted: flags&flagPromoted != 0,
			signal: ValueSignal(Outcomes{Helpful: int(helpful), Harmful: int(harmful)}), seq: seq})
		if near {
			ps.nearAny = true
			ps.nearActive = append(ps.nearActive, sid)
		}
		return nil
	})
	return ps, err
}

// nearest is the near-duplicate a submission meets: the first active one
// (creation order), else the first inactive one, else ""; entries removed
// from view are ignored.
func (ps *poolScan) nearest() string {
	if len(ps.nearActive) > 0 {
		return ps.nearActive[0]
	}
	return ps.nearInactive
}

// scanSummaries decodes the summaries under prefix, in key order.
func scanSummaries(r projector.Reader, prefix string) ([]*summary, error) {
	var out []*summary
	err := r.Scan([]byte(prefix), func(k, v []byte) error {
		s, err := decodeSummary(v)
		if err != nil {
			return fmt.Errorf("%w: %s", err, k)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// activeSummaries are the summaries of the active entries of a tier's pool
// (a project's swarm store, or the hive), in (CreatedSeq, id) order.
func activeSummaries(r projector.Reader, tier, project string) ([]*summary, error) {
	return scanSummaries(r, pfxSum+sumScope(tier, project)+"a/")
}
