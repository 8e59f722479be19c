package crossloop

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// generalizeByRegex is GeneralizeMessage without its shortcuts: every
// message through both expressions.
func generalizeByRegex(msg string) string {
	msg = strings.TrimSpace(msg)
	lit := func(s string) string {
		var b strings.Builder
		last := 0
		for _, m := range numberRe.FindAllStringIndex(s, -1) {
			b.WriteString(regexp.QuoteMeta(s[last:m[0]]))
			b.WriteString(`\d+`)
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(s[last:]))
		return b.String()
	}
	var b strings.Builder
	last := 0
	for _, m := range quotedRe.FindAllStringIndex(msg, -1) {
		b.WriteString(lit(msg[last:m[0]]))
		q := msg[m[0] : m[0]+1]
		b.WriteString(q + ".*" + q)
		last = m[1]
	}
	b.WriteString(lit(msg[last:]))
	return b.String()
}

// TestGeneralizeMessageAsByRegex: the shortcuts (no quote, no digit)
// change nothing.
func TestGeneralizeMessageAsByRegex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	parts := []string{"Cannot", "read", " ", "'email'", "\"x\"", "`y`", "'", "42", "w1", "٣", "a.b", "(x)", "[0]", "$", "\t", "é", "null"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
			if rng.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		msg := b.String()
		if got, want := GeneralizeMessage(msg), generalizeByRegex(msg); got != want {
			t.Fatalf("%q: %q, by the expressions %q", msg, got, want)
		}
	}
}
