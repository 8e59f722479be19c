package learning

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// The read model's records are stored in a compact binary form instead of
// JSON (see Model.Version): a fold step decodes and re-encodes a criterion,
// a pattern and a bead record per outcome, and JSON was most of its cost.
//
// INVARIANT: decode(encode(v)) equals what json.Unmarshal(json.Marshal(v))
// gave when the records were JSON, for every value a fold stores, and
// encode fails where json.Marshal failed (a NaN or infinite float, a time
// whose year is outside [0, 9999]): queries print the same bytes and a
// poison event stays poison. Concretely:
//   - strings are sanitised as the JSON encoder does: each byte of an
//     invalid UTF-8 sequence becomes U+FFFD;
//   - a slice keeps the difference between nil and empty where JSON kept it
//     (fields without omitempty: "null" vs "[]"); an omitempty slice
//     decodes empty as nil, as JSON did;
//   - a time keeps its instant and its UTC offset; offset 0 decodes as UTC
//     (JSON wrote "Z"), another offset as the local zone when it has that
//     offset at that instant, else as a fixed zone (what time.Parse does).
//
// Layout: a leading format byte per record kind, then the fields in a fixed
// order: ints as zig-zag varints, floats as 8 little-endian bytes, strings
// and slices length-prefixed, optional values behind a presence byte.
// NB: must not change without bumping baseVersion.

// Record format bytes (the first byte of each stored record).
const (
	fmtCriterion = 0xC1
	fmtPattern   = 0xB1
	fmtBead      = 0xBE
	fmtError     = 0xE1
)

// errEncode is what encoding a value JSON could not encode returns.
var errEncode = errors.New("unsupported value")

// enc appends a record; the first failure sticks in err.
type enc struct {
	b   []byte
	err error
}

func (e *enc) byte(c byte) { e.b = append(e.b, c) }

func (e *enc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *enc) int(v int64) { e.b = binary.AppendVarint(e.b, v) }

func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *enc) float(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		e.fail("float %v", v)
	}
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

func (e *enc) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("%w: "+format, append([]any{errEncode}, args...)...)
	}
}

func (e *enc) string(s string) {
	if !utf8.ValidString(s) {
		s = jsonSafe(s)
	}
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// jsonSafe replaces each byte of an invalid UTF-8 sequence with U+FFFD, as
// the JSON encoder does.
func jsonSafe(s string) string {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// strings writes a slice: 0 for nil, else 1 + its length, then the items.
func (e *enc) strings(ss []string) {
	if ss == nil {
		e.uint(0)
		return
	}
	e.uint(uint64(len(ss)) + 1)
	for _, s := range ss {
		e.string(s)
	}
}

// Unix seconds of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years
// time.Time's JSON encoding accepts.
const (
	minJSONUnix = -62167219200
	maxJSONUnix = 253402300799
)

func (e *enc) time(t time.Time) {
	_, off := t.Zone()
	sec := t.Unix()
	if local := sec + int64(off); local < minJSONUnix || local > maxJSONUnix {
		e.fail("time %s: year outside [0,9999]", t)
	}
	if off <= -24*3600 || off >= 24*3600 {
		e.fail("time %s: zone offset hour outside [0,23]", t)
	}
	if trunc := off / 60 * 60; trunc != off {
		// RFC 3339 writes the offset in whole minutes (truncated) next to
		// the wall clock of the full offset: JSON read back another instant.
		sec += int64(off - trunc)
		off = trunc
	}
	e.int(sec)
	ns := uint64(t.Nanosecond()) << 1
	if off == 0 {
		e.uint(ns)
		return
	}
	e.uint(ns | 1)
	e.int(int64(off))
}

func (e *enc) timePtr(t *time.Time) {
	if t == nil {
		e.byte(0)
		return
	}
	e.byte(1)
	e.time(*t)
}

func (e *enc) sums(s DecaySums) {
	e.int(s.EpochMs)
	e.float(s.Helpful)
	e.float(s.Harmful)
	e.int(s.NewestMs)
	e.int(s.Terms)
}

// dec reads a record; the first failure sticks in err and every later read
// returns a zero value. It reads from one string copy of the record, so a
// decoded string is a substring of it and costs no allocation of its own.
type dec struct {
	s   string
	err error
}

func newDec(raw []byte) *dec { return &dec{s: string(raw)} }

var errShort = errors.New("truncated record")

func (d *dec) setErr(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dec) byte() byte {
	if d.err != nil || len(d.s) == 0 {
		d.setErr(errShort)
		return 0
	}
	c := d.s[0]
	d.s = d.s[1:]
	return c
}

// uint reads a uvarint (binary.Uvarint's format).
func (d *dec) uint() uint64 {
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflow
			}
			d.s = d.s[i+1:]
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	d.setErr(errShort)
	return 0
}

// int reads a zig-zag varint (binary.Varint's format).
func (d *dec) int() int64 {
	u := d.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *dec) bool() bool { return d.byte() != 0 }

func (d *dec) float() float64 {
	if d.err != nil || len(d.s) < 8 {
		d.setErr(errShort)
		return 0
	}
	s := d.s
	v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	d.s = s[8:]
	return math.Float64frombits(v)
}

func (d *dec) string() string {
	n := d.uint()
	if d.err != nil || uint64(len(d.s)) < n {
		d.setErr(errShort)
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

// strings reads a slice written by enc.strings (nil stays nil).
func (d *dec) strings() []string {
	n := d.uint()
	if d.err != nil || n == 0 {
		return nil
	}
	n--
	if n > uint64(len(d.s)) { // every item takes at least one byte
		d.setErr(errShort)
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}

func (d *dec) time() time.Time {
	sec := d.int()
	ns := d.uint()
	var off int64
	if ns&1 != 0 {
		off = d.int()
	}
	if d.err != nil {
		return time.Time{}
	}
	t := time.Unix(sec, int64(ns>>1))
	if off == 0 {
		return t.UTC()
	}
	if _, lo := t.In(time.Local).Zone(); int64(lo) == off {
		return t.In(time.Local)
	}
	return t.In(time.FixedZone("", int(off)))
}

func (d *dec) timePtr() *time.Time {
	if d.byte() == 0 {
		return nil
	}
	t := d.time()
	return &t
}

func (d *dec) sums() DecaySums {
	return DecaySums{EpochMs: d.int(), Helpful: d.float(), Harmful: d.float(), NewestMs: d.int(), Terms: d.int()}
}

// begin checks the record's format byte.
func (d *dec) begin(format byte) {
	if c := d.byte(); d.err == nil && c != format {
		d.setErr(fmt.Errorf("record format %#x, want %#x", c, format))
	}
}

// end fails on trailing bytes.
func (d *dec) end() error {
	if d.err == nil && len(d.s) != 0 {
		d.setErr(fmt.Errorf("%d trailing bytes", len(d.s)))
	}
	return d.err
}

func (r *criterionRec) encode(e *enc) {
	e.byte(fmtCriterion)
	e.string(r.Criterion)
	e.float(r.HalfLifeDays)
	e.sums(r.Sums)
	e.int(int64(r.HelpfulCount))
	e.int(int64(r.HarmfulCount))
	e.int(int64(r.NeutralCount))
	e.timePtr(r.LastValidated)
	e.time(r.FirstSeen)
	e.time(r.LastSeen)
	e.bool(r.Deprecated)
	e.timePtr(r.DeprecatedAt)
}

func (r *criterionRec) decode(d *dec) error {
	d.begin(fmtCriterion)
	*r = criterionRec{Criterion: d.string(), HalfLifeDays: d.float(), Sums: d.sums(),
		HelpfulCount: int(d.int()), HarmfulCount: int(d.int()), NeutralCount: int(d.int()),
		LastValidated: d.timePtr(), FirstSeen: d.time(), LastSeen: d.time(), Deprecated: d.bool(), DeprecatedAt: d.timePtr()}
	return d.end()
}

func (r *patternRec) encode(e *enc) {
	e.byte(fmtPattern)
	p := &r.Pattern
	e.string(p.ID)
	e.string(p.Content)
	e.string(p.Kind)
	e.bool(p.IsNegative)
	e.int(int64(p.SuccessCount))
	e.int(int64(p.FailureCount))
	e.time(p.CreatedAt)
	e.time(p.UpdatedAt)
	e.string(p.Reason)
	e.strings(p.Tags)
	e.strings(p.ExampleBeads)
	m := &r.Maturity
	e.string(m.PatternID)
	e.string(string(m.State))
	e.int(int64(m.HelpfulCount))
	e.int(int64(m.HarmfulCount))
	e.time(m.LastValidated)
	e.timePtr(m.PromotedAt)
	e.timePtr(m.DeprecatedAt)
	if m.Manual == nil {
		e.byte(0)
	} else {
		e.byte(1)
		e.string(string(m.Manual.State))
		e.string(m.Manual.Reason)
		e.time(m.Manual.At)
		e.string(m.Manual.Source)
	}
	e.sums(r.Sums)
	e.int(int64(r.NeutralCount))
	e.string(r.StateReason)
	e.time(r.StateSince)
	e.bool(r.Inverted)
	e.string(r.AntiReason)
	e.timePtr(r.InvertedAt)
	e.timePtr(r.ResetAt)
	e.int(int64(r.Rehabilitations))
	e.string(r.RehabReason)
	e.timePtr(r.RehabilitatedAt)
}

func (r *patternRec) decode(d *dec) error {
	d.begin(fmtPattern)
	*r = patternRec{}
	p := &r.Pattern
	p.ID, p.Content, p.Kind = d.string(), d.string(), d.string()
	p.IsNegative = d.bool()
	p.SuccessCount, p.FailureCount = int(d.int()), int(d.int())
	p.CreatedAt, p.UpdatedAt = d.time(), d.time()
	p.Reason = d.string()
	p.Tags, p.ExampleBeads = d.strings(), d.strings()
	m := &r.Maturity
	m.PatternID, m.State = d.string(), MaturityState(d.string())
	m.HelpfulCount, m.HarmfulCount = int(d.int()), int(d.int())
	m.LastValidated = d.time()
	m.PromotedAt, m.DeprecatedAt = d.timePtr(), d.timePtr()
	if d.byte() != 0 {
		m.Manual = &Manual{State: MaturityState(d.string()), Reason: d.string(), At: d.time(), Source: d.string()}
	}
	r.Sums = d.sums()
	r.NeutralCount = int(d.int())
	r.StateReason = d.string()
	r.StateSince = d.time()
	r.Inverted = d.bool()
	r.AntiReason = d.string()
	r.InvertedAt, r.ResetAt = d.timePtr(), d.timePtr()
	r.Rehabilitations = int(d.int())
	r.RehabReason = d.string()
	r.RehabilitatedAt = d.timePtr()
	return d.end()
}

func (r *beadRec) encode(e *enc) {
	e.byte(fmtBead)
	e.int(int64(r.Stats.Total))
	e.int(int64(r.Stats.Unresolved))
	e.uint(uint64(len(r.Stats.ByType)))
	for _, tc := range r.Stats.ByType {
		e.string(tc.Type)
		e.int(int64(tc.Count))
	}
	e.int(int64(r.Outcomes))
	o := r.LastOutcome
	if o == nil {
		e.byte(0)
		return
	}
	e.byte(1)
	e.string(o.EventID)
	e.time(o.Time)
	e.bool(o.Success)
	e.string(string(o.Type))
	e.float(o.Raw)
	e.string(o.Reasoning)
	e.int(int64(o.ErrorCount))
	e.string(o.FailureMode)
	// omitempty in the JSON form: an empty list decodes as nil.
	e.strings(nilIfEmpty(o.Criteria))
	e.strings(nilIfEmpty(o.Patterns))
}

func nilIfEmpty(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

func (r *beadRec) decode(d *dec) error {
	d.begin(fmtBead)
	*r = beadRec{}
	r.Stats.Total, r.Stats.Unresolved = int(d.int()), int(d.int())
	n := d.uint()
	if n > uint64(len(d.s)) {
		d.setErr(errShort)
		n = 0
	}
	if n > 0 { // an empty by_type decoded from JSON was nil
		r.Stats.ByType = make(ByType, n)
		for i := range r.Stats.ByType {
			r.Stats.ByType[i] = TypeCount{Type: d.string(), Count: int(d.int())}
		}
	}
	r.Outcomes = int(d.int())
	if d.byte() != 0 {
		r.LastOutcome = &OutcomeView{EventID: d.string(), Time: d.time(), Success: d.bool(), Type: FeedbackType(d.string()),
			Raw: d.float(), Reasoning: d.string(), ErrorCount: int(d.int()), FailureMode: d.string(),
			Criteria: d.strings(), Patterns: d.strings()}
	}
	return d.end()
}

func (r *ErrorEntry) encode(e *enc) {
	e.byte(fmtError)
	e.string(r.ID)
	e.string(r.BeadID)
	e.string(r.ErrorType)
	e.string(r.Message)
	e.string(r.StackTrace)
	e.string(r.ToolName)
	e.string(r.Context)
	e.time(r.Time)
	e.bool(r.Resolved)
}

func (r *ErrorEntry) decode(d *dec) error {
	d.begin(fmtError)
	*r = ErrorEntry{ID: d.string(), BeadID: d.string(), ErrorType: d.string(), Message: d.string(),
		StackTrace: d.string(), ToolName: d.string(), Context: d.string(), Time: d.time(), Resolved: d.bool()}
	return d.end()
}
