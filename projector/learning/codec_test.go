package learning

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// The binary records decode to what the JSON records of format 1 decoded
// to (codec.go's invariant): every record a fold stores, with the edge
// cases of the JSON form (nil vs empty slices, omitempty, time offsets,
// invalid UTF-8), round-trips both ways to deeply equal values and prints
// the same JSON.

// jsonRoundTrip is what format 1 stored and read back.
func jsonRoundTrip[T any](t *testing.T, v *T) (*T, error) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("json decode %s: %v", raw, err)
	}
	return out, nil
}

func binRoundTrip[T any, P interface {
	*T
	record
}](t *testing.T, v P) (P, error) {
	t.Helper()
	e := enc{}
	v.encode(&e)
	if e.err != nil {
		return nil, e.err
	}
	out := P(new(T))
	if err := out.decode(newDec(e.b)); err != nil {
		t.Fatalf("binary decode: %v", err)
	}
	return out, nil
}

func checkSame[T any, P interface {
	*T
	record
}](t *testing.T, v P) {
	t.Helper()
	j, jerr := jsonRoundTrip(t, (*T)(v))
	b, berr := binRoundTrip[T, P](t, v)
	if (jerr == nil) != (berr == nil) {
		t.Fatalf("json error %v, binary error %v for %+v", jerr, berr, v)
	}
	if jerr != nil {
		return
	}
	if !reflect.DeepEqual(j, (*T)(b)) {
		t.Fatalf("round trips differ:\njson   %+v\nbinary %+v", j, (*T)(b))
	}
	jj, _ := json.Marshal(j)
	bj, _ := json.Marshal(b)
	if string(jj) != string(bj) {
		t.Fatalf("printed differently:\njson   %s\nbinary %s", jj, bj)
	}
}

var (
	plus2   = time.FixedZone("CEST", 2*3600)
	minus5  = time.FixedZone("", -5*3600-30*60)
	oddZone = time.FixedZone("LMT", 17*60+30) // seconds in the offset
)

func randTime(r *rand.Rand) time.Time {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(1e18)) - 5e17)
	switch r.IntN(7) {
	case 0:
		return time.Time{}
	case 1:
		return base.In(plus2)
	case 2:
		return base.In(minus5)
	case 3:
		return base.In(time.Local)
	case 4:
		return base.In(oddZone)
	case 5:
		return base.Truncate(time.Millisecond)
	}
	return base
}

func randTimePtr(r *rand.Rand) *time.Time {
	if r.IntN(3) == 0 {
		return nil
	}
	t := randTime(r)
	return &t
}

func randString(r *rand.Rand) string {
	parts := []string{"", "a", "type_safe", "Split by feature", "bd-1.2", "ünïcödé", "\xff", "a\xc3", "\u2028", "<&>", "\"q\"", "\x00"}
	var b strings.Builder
	for range r.IntN(4) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randStrings(r *rand.Rand) []string {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+r.IntN(12))
	for i := range out {
		out[i] = randString(r)
	}
	return out
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.SmallestNonzeroFloat64
	case 3:
		return math.MaxFloat64
	}
	return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
}

func randSums(r *rand.Rand) DecaySums {
	return DecaySums{EpochMs: r.Int64() >> r.IntN(64), Helpful: randFloat(r), Harmful: randFloat(r), NewestMs: r.Int64N(1 << 50), Terms: r.Int64N(1 << 40)}
}

func randState(r *rand.Rand) MaturityState {
	return []MaturityState{"", Candidate, Established, Proven, Deprecated}[r.IntN(5)]
}

func TestCodecMatchesJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		checkSame[criterionRec](t, &criterionRec{Criterion: randString(r), HalfLifeDays: randFloat(r), Sums: randSums(r),
			HelpfulCount: r.IntN(1000), HarmfulCount: r.IntN(1000), NeutralCount: r.IntN(3), LastValidated: randTimePtr(r),
			FirstSeen: randTime(r), LastSeen: randTime(r), Deprecated: r.IntN(2) == 0, DeprecatedAt: randTimePtr(r)})

		p := &patternRec{
			Pattern: Pattern{ID: randString(r), Content: randString(r), Kind: KindPattern, IsNegative: r.IntN(2) == 0,
				SuccessCount: r.IntN(100), FailureCount: r.IntN(100), CreatedAt: randTime(r), UpdatedAt: randTime(r),
				Reason: randString(r), Tags: randStrings(r), ExampleBeads: randStrings(r)},
			Maturity: Maturity{PatternID: randString(r), State: randState(r), HelpfulCount: r.IntN(50), HarmfulCount: r.IntN(50),
				LastValidated: randTime(r), PromotedAt: randTimePtr(r), DeprecatedAt: randTimePtr(r)},
			Sums: randSums(r), NeutralCount: r.IntN(5), StateReason: randString(r), StateSince: randTime(r),
			Inverted: r.IntN(2) == 0, AntiReason: randString(r), InvertedAt: randTimePtr(r), ResetAt: randTimePtr(r),
		}
		if r.IntN(2) == 0 {
			p.Maturity.Manual = &Manual{State: randState(r), Reason: randString(r), At: randTime(r), Source: randString(r)}
		}
		checkSame[patternRec](t, p)

		b := &beadRec{Stats: ErrorStats{Total: r.IntN(9), Unresolved: r.IntN(9)}, Outcomes: r.IntN(9)}
		for range r.IntN(4) {
			b.Stats.ByType.Add(errorTypes[r.IntN(len(errorTypes))], 1+r.IntN(3))
		}
		if r.IntN(3) == 0 {
			b.Stats.ByType = ByType{}
		}
		if r.IntN(3) != 0 {
			b.LastOutcome = &OutcomeView{EventID: randString(r), Time: randTime(r), Success: r.IntN(2) == 0,
				Type: FeedbackType(randString(r)), Raw: randFloat(r), Reasoning: randString(r), ErrorCount: r.IntN(5),
				FailureMode: randString(r), Criteria: randStrings(r), Patterns: randStrings(r)}
		}
		checkSame[beadRec](t, b)

		checkSame[ErrorEntry](t, &ErrorEntry{ID: randString(r), BeadID: randString(r), ErrorType: randString(r),
			Message: randString(r), StackTrace: randString(r), ToolName: randString(r), Context: randString(r),
			Time: randTime(r), Resolved: r.IntN(2) == 0})
	}
}

// TestCodecRefusesWhatJSONRefused: values json.Marshal could not encode
// fail to encode (the event stays poison).
func TestCodecRefusesWhatJSONRefused(t *testing.T) {
	for _, c := range []*criterionRec{
		{Sums: DecaySums{Helpful: math.NaN()}},
		{HalfLifeDays: math.Inf(1)},
		{FirstSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{LastSeen: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{LastSeen: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
		{LastSeen: time.Date(10000, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600))}, // 9999 in UTC
	} {
		if _, err := json.Marshal(c); err == nil {
			t.Fatalf("json encoded %+v", c)
		}
		if _, err := binRoundTrip[criterionRec](t, c); err == nil {
			t.Fatalf("binary encoded %+v", c)
		}
	}
}

// TestCodecRefusesGarbage: a truncated, extended or foreign record is an
// error, never a panic or a silent zero value.
func TestCodecRefusesGarbage(t *testing.T) {
	e := enc{}
	(&patternRec{Pattern: Pattern{ID: "p", Tags: []string{"x"}}, Maturity: Maturity{Manual: &Manual{State: Proven}}}).encode(&e)
	full := e.b
	for n := range len(full) {
		var p patternRec
		if err := p.decode(newDec(full[:n])); err == nil {
			t.Fatalf("decoded a record truncated to %d of %d bytes", n, len(full))
		}
	}
	var p patternRec
	if err := p.decode(newDec(append(append([]byte(nil), full...), 0))); err == nil {
		t.Fatal("decoded a record with a trailing byte")
	}
	var c criterionRec
	if err := c.decode(newDec(full)); err == nil {
		t.Fatal("decoded a pattern record as a criterion")
	}
	if err := c.decode(newDec([]byte(`{"criterion":"x"}`))); err == nil {
		t.Fatal("decoded a JSON record")
	}
}

// TestVarintsReadBack: dec reads what encoding/binary's varints wrote.
func TestVarintsReadBack(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 20, -1 << 40, math.MaxInt64, math.MinInt64} {
		e := enc{}
		e.int(v)
		e.uint(uint64(v))
		d := newDec(e.b)
		if got := d.int(); got != v {
			t.Fatalf("int %d read back as %d", v, got)
		}
		if got := d.uint(); got != uint64(v) {
			t.Fatalf("uint %d read back as %d", uint64(v), got)
		}
		if err := d.end(); err != nil {
			t.Fatal(err)
		}
	}
	// An 11-byte varint overflows, as binary.Uvarint says.
	d := newDec([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	if d.uint(); d.err == nil {
		t.Fatal("read an overflowing varint")
	}
}
