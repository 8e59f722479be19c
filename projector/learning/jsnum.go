package learning

import (
	"math"
	"strconv"
	"time"
)

// jsRound is JavaScript's Math.round: halves go toward +Inf
// (jsRound(-1.5) = -1, jsRound(2.5) = 3); NaN and ±Inf pass through.
func jsRound(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r := math.Floor(x)
	if x-r >= 0.5 { // exact: x-floor(x) is representable for |x| < 2^52
		r++
	}
	return r
}

// jsNum formats a number as JavaScript's String(n) does for the values the
// rules print (integers and short decimals).
func jsNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		return "0" // also -0, as JavaScript prints it
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// msBetween is (b - a) in milliseconds as a float, like JavaScript's
// Date difference (exact for whole milliseconds).
func msBetween(a, b time.Time) float64 {
	d := b.Sub(a)
	return float64(d/time.Millisecond) + float64(d%time.Millisecond)/1e6
}

// ParseTime parses an RFC 3339 time (or a date, read as UTC midnight, as
// JavaScript reads "2025-10-03"); anything else is refused naming field.
func ParseTime(field, s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, badInput(field, "%q is not an RFC 3339 time", s)
}

// FormatTime is the RFC 3339 UTC form lore prints (milliseconds when not
// whole seconds).
func FormatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
