package learning

import (
	"encoding/binary"
	"math"
	"time"
)

// Key layout inside the model's prefix. NB: must not change: a change
// orphans the stored read model (bump Model.Version instead).
//
//	c \0 project \0 criterion                  criterion record (codec.go)
//	C \0 project \0 criterion \0 time seq       one feedback term (type, value)
//	p \0 project \0 pattern id                 pattern record (codec.go)
//	P \0 project \0 pattern id \0 time seq      one maturity feedback term
//	b \0 project \0 bead                       bead record (codec.go)
//	e \0 project \0 bead \0 seq                one error entry (codec.go)
//	E \0 project \0 error id                   bead \0 seq of that error
//	o \0 project \0 event id                   how that outcome was scored (JSON OutcomeView)
//	g \0                                       the folded configuration (JSON Config)
//
// The kind comes first so a clock tick scans every pattern record of every
// project without touching the (many) feedback terms.
const (
	kCriterion  = 'c'
	kCriterionT = 'C'
	kPattern    = 'p'
	kPatternT   = 'P'
	kBead       = 'b'
	kError      = 'e'
	kErrorID    = 'E'
	kOutcome    = 'o'
	kConfig     = 'g'
)

func key(kind byte, project string, parts ...string) []byte {
	n := 2 + len(project)
	for _, p := range parts {
		n += 1 + len(p)
	}
	k := make([]byte, 0, n+21) // room for termsPrefix's 0 and termKey's 20 bytes
	k = append(k, kind, 0)
	k = append(k, project...)
	for _, p := range parts {
		k = append(k, 0)
		k = append(k, p...)
	}
	return k
}

// termsPrefix is the prefix of an aggregate's feedback terms.
func termsPrefix(kind byte, project, id string) []byte {
	return append(key(kind, project, id), 0)
}

// termKey orders terms by time then stream sequence. It appends to prefix
// (whose capacity key reserves), so the prefix must not be used after.
func termKey(prefix []byte, t time.Time, seq uint64) []byte {
	k := prefix
	k = binary.BigEndian.AppendUint64(k, uint64(t.Unix())+1<<63)
	k = binary.BigEndian.AppendUint32(k, uint32(t.Nanosecond()))
	return binary.BigEndian.AppendUint64(k, seq)
}

// itemSeq is the sequence part of the term key of an observation: the
// event's stream sequence for a whole event (item single), and for item i
// of a pattern.observations/v1 the top bit set, then the sequence and the
// index (10 bits: at most events.MaxObservationsPerEvent items).
//
// INVARIANT: unique per observation (the top bit tells the two forms
// apart; sequences stay below 2^53). Terms are read in key order, time
// first; the terms of one time all weigh the same (one observation's
// worth), so their order within that time changes no sum.
func itemSeq(seq uint64, item int) uint64 {
	if item < 0 {
		return seq
	}
	return 1<<63 | seq<<10 | uint64(item)
}

func termTime(k []byte) time.Time {
	s := k[len(k)-20:]
	sec := int64(binary.BigEndian.Uint64(s[:8]) - 1<<63)
	return time.Unix(sec, int64(binary.BigEndian.Uint32(s[8:12]))).UTC()
}

func termValue(typ FeedbackType, v float64) []byte {
	b := make([]byte, 1, 9)
	switch typ {
	case Helpful:
		b[0] = 'h'
	case Harmful:
		b[0] = 'x'
	case Neutral:
		b[0] = 'n'
	}
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

func parseTerm(v []byte) (FeedbackType, float64) {
	if len(v) != 9 {
		return "", 0
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(v[1:]))
	switch v[0] {
	case 'h':
		return Helpful, f
	case 'x':
		return Harmful, f
	}
	return Neutral, f
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
