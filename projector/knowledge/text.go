package knowledge

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Text helpers shared by the rules. Lengths are JavaScript string lengths,
// i.e. UTF-16 code units, as in the reference ("📚" counts 2, "…" counts 1).

// UTF16Len is the length of s in UTF-16 code units. An invalid UTF-8 byte
// counts as one unit (it decodes to U+FFFD).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// TruncateUTF16 cuts s to at most max UTF-16 code units, never inside a
// surrogate pair, and appends suffix when it cut. It reports whether it cut.
func TruncateUTF16(s string, max int, suffix string) (string, bool) {
	if UTF16Len(s) <= max {
		return s, false
	}
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > max {
			return s[:i] + suffix, true
		}
		n += w
	}
	return s, false
}

// isJSSpace reports whether r matches JavaScript's \s.
func isJSSpace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == ' ' ||
		r == 0xA0 || r == 0xFEFF || r == 0x1680 || (r >= 0x2000 && r <= 0x200A) ||
		r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000
}

func isASCIIWord(r rune) bool {
	return r < utf8.RuneSelf && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}

// Normalize is the reference's dedup normalisation: lower-case, every
// character that is neither an ASCII word character nor white space becomes
// a space, runs of white space collapse to one space, trimmed. \w is ASCII,
// so "Café" becomes "caf".
func Normalize(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if isASCIIWord(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
			continue
		}
		space = true
	}
	return b.String()
}

// normalizeText is the validator's normalisation: NFKC first, then Normalize.
func normalizeText(s string) string { return Normalize(norm.NFKC.String(s)) }

// invisible lists the invisible format characters the validator treats as
// injection (and as spaces before matching commands).
func isInvisible(r rune) bool {
	return r == 0xAD || (r >= 0x200B && r <= 0x200F) || (r >= 0x202A && r <= 0x202E) ||
		(r >= 0x2060 && r <= 0x2064) || (r >= 0x2066 && r <= 0x2069) || r == 0xFEFF
}

// safetyText is the text the command and security checks see: NFKC,
// invisible characters as spaces, white space collapsed, lower-cased.
func safetyText(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if isInvisible(r) || isJSSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// words splits normalised text on single spaces ("" gives no words).
func words(normalized string) []string {
	if normalized == "" {
		return nil
	}
	return strings.Split(normalized, " ")
}
