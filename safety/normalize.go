package safety

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Normalize is the text the instruction and command rules read: NFKC
// (full-width and styled letters become plain), lower case, hidden
// characters removed (zero-width, bidi controls, tag characters, soft
// hyphens, variation selectors), every run of white space one space.
//
// INVARIANT: Normalize(Normalize(s)) == Normalize(s).
func Normalize(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := true // drops leading space
	for _, r := range s {
		switch {
		case IsHidden(r):
			continue
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return strings.TrimRight(b.String(), " ")
}

// IsHidden reports a character that renders as nothing or reorders text:
// zero-width characters, bidi controls, Unicode tag characters
// (U+E0000–E007F, used to smuggle ASCII), variation selectors and other
// invisible format characters.
func IsHidden(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x180E, r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F:
		return true
	case r >= 0xE0000 && r <= 0xE007F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	case r >= 0xFE00 && r <= 0xFE0E: // variation selectors but VS16 (emoji style)
		return true
	}
	return false
}

// deleet maps the digits and symbols used as letters ("1gn0re", "@ct")
// to those letters, for the instruction rules only.
var deleet = strings.NewReplacer("0", "o", "1", "i", "3", "e", "4", "a", "5", "s", "7", "t", "@", "a", "$", "s")

// words is the normalised text as words of letters: anything else
// separates them. Leetspeak is undone first when a token mixes letters
// and digits ("1gn0re" but not "v2" or "2024").
func letterWords(normalized string) []string {
	toks := strings.Fields(normalized)
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if mixesLeet(t) {
			t = deleet.Replace(t)
		}
		out = append(out, strings.FieldsFunc(t, func(r rune) bool { return !unicode.IsLetter(r) })...)
	}
	return joinSpelled(out)
}

// joinSpelled joins a run of 3 or more one-letter words ("i g n o r e",
// "i.g.n.o.r.e") into one word.
func joinSpelled(ws []string) []string {
	out := ws[:0:0]
	for i := 0; i < len(ws); {
		j := i
		for j < len(ws) && len([]rune(ws[j])) == 1 {
			j++
		}
		if j-i >= 3 {
			out = append(out, strings.Join(ws[i:j], ""))
			i = j
			continue
		}
		if j == i {
			j++
		}
		out = append(out, ws[i:j]...)
		i = j
	}
	return out
}

// mixesLeet reports a token with letters and leet symbols inside a word.
func mixesLeet(t string) bool {
	letters, leet := 0, 0
	for _, r := range t {
		switch {
		case unicode.IsLetter(r):
			letters++
		case strings.ContainsRune("013457@$", r):
			leet++
		}
	}
	return letters >= 2 && leet >= 1
}

// confusables maps the Cyrillic and Greek letters that look like Latin
// ones ("іgnоrе" with Cyrillic і, о, е) to those letters, for the
// instruction rules. NFKC keeps them apart; a reader's eye does not.
var confusables = strings.NewReplacer(
	"а", "a", "в", "b", "е", "e", "ё", "e", "к", "k", "м", "m", "н", "h", "о", "o", "р", "p", "с", "c", "т", "t",
	"у", "y", "х", "x", "і", "i", "ї", "i", "ј", "j", "ѕ", "s", "ԁ", "d", "ɡ", "g", "ԛ", "q", "ԝ", "w", "һ", "h",
	"α", "a", "β", "b", "ε", "e", "η", "n", "ι", "i", "κ", "k", "ν", "v", "ο", "o", "ρ", "p", "τ", "t", "υ", "u",
	"χ", "x", "ɩ", "i", "ı", "i", "ℓ", "l")

// foldConfusables is s with look-alike letters mapped to Latin; ASCII text
// is returned as is.
func foldConfusables(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return confusables.Replace(s)
		}
	}
	return s
}
