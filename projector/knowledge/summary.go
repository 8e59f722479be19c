package knowledge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
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
//	xa/h/<seq>/<id>                  summary of an active hive entry
//	xa/s/<project token>/<seq>/<id>  summary of an active swarm entry
//	xi/...                           the same for inactive (archived or
//	                                 quarantined) entries
//
// <seq> is CreatedSeq as 16 hex digits, so a scan lists a pool in
// (CreatedSeq, id) order: the order scanEntries gives (creation order, key
// order of ids among equal sequences).
//
// INVARIANT: every entry has exactly one summary, under xa/ when Active()
// and xi/ otherwise, equal to summaryOf(entry) for its stored JSON; the
// index i/<id> records the summary key so saveEntry can move it.
const (
	pfxSumActive   = "xa/"
	pfxSumInactive = "xi/"
)

// summary is the decoded summary of one entry.
type summary struct {
	ID, Tier, Project, Lesson, Category, Scope, Status, ArchiveReason, SourceProject string
	CreatedSeq                                                                       uint64
	CreatedAt                                                                        time.Time
	Confidence                                                                       float64
	Outcomes                                                                         Outcomes // Shown, Helpful, Harmful only
	features
}

func (s *summary) active() bool { return s.Status != StatusArchived && s.Status != StatusQuarantined }

// removed is Removed for a summary: a todo past its TTL.
func (s *summary) removed() bool {
	return s.Status == StatusArchived && s.ArchiveReason == ArchiveTTLTodo
}

func (s *summary) existing() Existing {
	return Existing{Text: s.Lesson, feat: &s.features}
}

func sumScope(tier, project string) string {
	if tier == TierHive {
		return "h/"
	}
	return "s/" + events.EncodeToken(project) + "/"
}

func summaryKey(e *Entry) string {
	p := pfxSumInactive
	if e.Active() {
		p = pfxSumActive
	}
	return fmt.Sprintf("%s%s%016x/%s", p, sumScope(e.Tier, e.Project), e.CreatedSeq, e.ID)
}

func summaryOf(e *Entry) *summary {
	return &summary{ID: e.ID, Tier: e.Tier, Project: e.Project, Lesson: e.Lesson, Category: e.Category,
		Scope: e.Scope, Status: e.Status, ArchiveReason: e.ArchiveReason, SourceProject: e.SourceProject,
		CreatedSeq: e.CreatedSeq, CreatedAt: e.CreatedAt, Confidence: e.Confidence,
		Outcomes: Outcomes{Shown: e.Outcomes.Shown, Helpful: e.Outcomes.Helpful, Harmful: e.Outcomes.Harmful},
		features: cachedFeatures(e.Lesson, e.Tags, e.Category)}
}

// Features are pure functions of the text, so a memo keyed by the exact
// text is always right; it saves recomputing them when an entry is saved
// again (outcomes, sweeps, reinforcements). Bounded: cleared when full.
var featureMemo = struct {
	sync.Mutex
	m map[string]features
}{m: map[string]features{}}

const featureMemoMax = 16384

func cachedFeatures(lesson string, tags []string, category string) features {
	var b strings.Builder
	for _, s := range append([]string{lesson, category}, tags...) {
		b.WriteString(fmt.Sprintf("%d:", len(s)))
		b.WriteString(s)
	}
	k := b.String()
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

// Encoding: strings and lists as uvarint length + bytes, counts as
// uvarint, confidence as IEEE-754 bits, created_at as varint seconds +
// uvarint nanoseconds. The first byte is the format version.
const summaryFormat = 1

func (s *summary) encode() []byte {
	b := make([]byte, 0, 64+len(s.Lesson)*4)
	b = append(b, summaryFormat)
	for _, x := range []string{s.ID, s.Tier, s.Project, s.Lesson, s.Category, s.Scope, s.Status, s.ArchiveReason,
		s.SourceProject, s.cnorm, s.rel} {
		b = appendString(b, x)
	}
	b = binary.AppendUvarint(b, s.CreatedSeq)
	b = binary.AppendVarint(b, s.CreatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(s.CreatedAt.Nanosecond()))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Confidence))
	for _, n := range []int{s.Outcomes.Shown, s.Outcomes.Helpful, s.Outcomes.Harmful} {
		b = binary.AppendUvarint(b, uint64(max(n, 0)))
	}
	for _, l := range [][]string{s.bigrams, s.ctags} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, x := range l {
			b = appendString(b, x)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errSummary = errors.New("knowledge: corrupt entry summary")

// decodeSummary decodes v; every string of the result shares one copy of v.
func decodeSummary(v []byte) (*summary, error) {
	d := sumDecoder{s: string(v)}
	if d.byte() != summaryFormat {
		return nil, errSummary
	}
	s := &summary{}
	for _, p := range []*string{&s.ID, &s.Tier, &s.Project, &s.Lesson, &s.Category, &s.Scope, &s.Status,
		&s.ArchiveReason, &s.SourceProject, &s.cnorm, &s.rel} {
		*p = d.str()
	}
	s.CreatedSeq = d.uvarint()
	sec := d.varint()
	nsec := d.uvarint()
	s.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	s.Confidence = math.Float64frombits(d.u64())
	s.Outcomes.Shown, s.Outcomes.Helpful, s.Outcomes.Harmful = int(d.uvarint()), int(d.uvarint()), int(d.uvarint())
	for _, l := range []*[]string{&s.bigrams, &s.ctags} {
		n := d.uvarint()
		if n > uint64(len(d.s)) {
			return nil, errSummary
		}
		if n > 0 {
			*l = make([]string, n)
			for i := range *l {
				(*l)[i] = d.str()
			}
		}
	}
	if d.bad {
		return nil, errSummary
	}
	return s, nil
}

type sumDecoder struct {
	s   string
	i   int
	bad bool
}

func (d *sumDecoder) byte() byte {
	if d.i >= len(d.s) {
		d.bad = true
		return 0
	}
	d.i++
	return d.s[d.i-1]
}

func (d *sumDecoder) uvarint() uint64 {
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

func (d *sumDecoder) varint() int64 {
	u := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *sumDecoder) u64() uint64 {
	if d.i+8 > len(d.s) {
		d.bad = true
		return 0
	}
	x := binary.LittleEndian.Uint64([]byte(d.s[d.i : d.i+8]))
	d.i += 8
	return x
}

func (d *sumDecoder) str() string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.s)-d.i) {
		d.bad = true
		return ""
	}
	x := d.s[d.i : d.i+int(n)]
	d.i += int(n)
	return x
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
	return scanSummaries(r, pfxSumActive+sumScope(tier, project))
}

// poolSummaries are the summaries of every entry of a tier's pool, active
// or not, in (CreatedSeq, id) order: the order of SwarmEntries/HiveEntries.
func poolSummaries(r projector.Reader, tier, project string) ([]*summary, error) {
	a, err := activeSummaries(r, tier, project)
	if err != nil {
		return nil, err
	}
	in, err := scanSummaries(r, pfxSumInactive+sumScope(tier, project))
	if err != nil || len(in) == 0 {
		return a, err
	}
	out := append(a, in...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CreatedSeq != out[j].CreatedSeq {
			return out[i].CreatedSeq < out[j].CreatedSeq
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// activeExisting lists the active entries of a pool for Validate, with the
// summaries they come from.
func activeExisting(pool []*summary, skip string) ([]Existing, []*summary) {
	var ex []Existing
	var ref []*summary
	for _, s := range pool {
		if s.active() && s.ID != skip {
			ex = append(ex, s.existing())
			ref = append(ref, s)
		}
	}
	return ex, ref
}

// nearestSummary is nearest on summaries: the first active near-duplicate
// (creation order), else the first inactive one, else nil; entries removed
// from view are ignored.
func nearestSummary(bigrams []string, pool []*summary, threshold float64) *summary {
	var inactive *summary
	for _, s := range pool {
		if s.removed() || jaccardSorted(bigrams, s.bigrams) < threshold {
			continue
		}
		if s.active() {
			return s
		}
		if inactive == nil {
			inactive = s
		}
	}
	return inactive
}
