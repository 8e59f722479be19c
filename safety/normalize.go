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
// (U+E0000–E007F, used to smuggle ASCII), variation selectors, Hangul
// fillers and every other format character (Unicode category Cf) but the
// prepended concatenation marks, which show.
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
	case r < 0x80:
		return false
	case r >= 0x0600 && r <= 0x0605, r == 0x06DD, r == 0x070F, r == 0x0890, r == 0x0891, r == 0x08E2, r == 0x110BD, r == 0x110CD:
		return false // prepended concatenation marks: format characters that show
	}
	// Every other format character renders as nothing (invisible
	// operators, musical and shorthand format controls, interlinear
	// annotation marks, …).
	return unicode.Is(unicode.Cf, r)
}

// deleet maps the digits and symbols used as letters ("1gn0re", "@ct")
// to those letters, for the instruction rules only.
var deleet = strings.NewReplacer("0", "o", "1", "i", "3", "e", "4", "a", "5", "s", "7", "t", "@", "a", "$", "s")

// letterWords is the normalised text as words of letters: anything else
// separates them. Leetspeak is undone first when a token mixes letters
// and digits ("1gn0re" but not "v2" or "2024"); a token spelled out
// letter by letter ("i-g-n-o-r-e", "i.g.n.o.r.e") is one word; a run of
// spelled-out letters across tokens ("i g n o r e p r e v i o u s") is
// joined and cut back into the grammar's words. stop[i] reports a clause
// boundary (. , ; : ! ? or the end) right after word i.
func letterWords(normalized string) (ws []string, stop []bool) {
	toks := strings.Fields(normalized)
	ws, stop = make([]string, 0, len(toks)), make([]bool, 0, len(toks))
	for _, t := range toks {
		if mixesLeet(t) {
			t = deleet.Replace(t)
		}
		n0 := len(ws)
		start := -1
		for i, r := range t {
			if unicode.IsLetter(r) {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				ws, stop = append(ws, t[start:i]), append(stop, false)
				start = -1
			}
			if len(ws) > 0 && strings.ContainsRune(".,;:!?", r) {
				stop[len(stop)-1] = true
			}
		}
		if start >= 0 {
			ws, stop = append(ws, t[start:]), append(stop, false)
		}
		// One token spelled out: i-g-n-o-r-e; or cut in syllables
		// (ig-nore, in-struc-tions) into a word of the grammar.
		if parts := ws[n0:]; len(parts) >= 3 && allSingle(parts) {
			last := stop[len(stop)-1]
			ws, stop = append(ws[:n0], strings.Join(parts, "")), append(stop[:n0], last)
		} else if len(parts) >= 2 && !anyStop(stop[n0:len(stop)-1]) {
			if joined := strings.Join(parts, ""); grammarVocab()[joined] {
				last := stop[len(stop)-1]
				ws, stop = append(ws[:n0], joined), append(stop[:n0], last)
			}
		}
	}
	if len(stop) > 0 {
		stop[len(stop)-1] = true
	}
	return joinSpelled(ws, stop)
}

func anyStop(stop []bool) bool {
	for _, s := range stop {
		if s {
			return true
		}
	}
	return false
}

func allSingle(ws []string) bool {
	for _, w := range ws {
		if len([]rune(w)) != 1 {
			return false
		}
	}
	return true
}

// joinSpelled joins a run of 3 or more one-letter words ("i g n o r e",
// "i.g.n.o.r.e") into one word, cut into the grammar's words when it is
// made of them (white space between spelled words is lost in
// normalisation: "ignoreprevious" is "ignore previous").
func joinSpelled(ws []string, stop []bool) ([]string, []bool) {
	run, spelled := 0, false
	for _, w := range ws {
		if run = run + 1; len([]rune(w)) != 1 {
			run = 0
		}
		spelled = spelled || run >= 3
	}
	if !spelled {
		return ws, stop
	}
	out, ostop := ws[:0:0], stop[:0:0]
	for i := 0; i < len(ws); {
		j := i
		for j < len(ws) && len([]rune(ws[j])) == 1 {
			j++
		}
		if j-i >= 3 {
			joined := strings.Join(ws[i:j], "")
			parts := segment(joined)
			for k, p := range parts {
				out, ostop = append(out, p), append(ostop, k == len(parts)-1 && stop[j-1])
			}
			i = j
			continue
		}
		if j == i {
			j++
		}
		out, ostop = append(out, ws[i:j]...), append(ostop, stop[i:j]...)
		i = j
	}
	return out, ostop
}

// segment cuts s into the fewest words of the instruction grammar's
// vocabulary; s itself when it is one of them or cannot be cut.
func segment(s string) []string {
	vocab := grammarVocab()
	if vocab[s] || len(s) > 200 {
		return []string{s}
	}
	// best[i]: fewest words covering s[:i] (-1: none), from[i]: its last cut.
	best, from := make([]int, len(s)+1), make([]int, len(s)+1)
	for i := range best {
		best[i] = -1
	}
	best[0] = 0
	for i := 1; i <= len(s); i++ {
		for j := max(0, i-maxVocabLen); j < i; j++ {
			if best[j] >= 0 && vocab[s[j:i]] && (best[i] < 0 || best[j]+1 < best[i]) {
				best[i], from[i] = best[j]+1, j
			}
		}
	}
	if best[len(s)] < 0 {
		return []string{s}
	}
	var parts []string
	for i := len(s); i > 0; i = from[i] {
		parts = append(parts, s[from[i]:i])
	}
	for a, b := 0, len(parts)-1; a < b; a, b = a+1, b-1 {
		parts[a], parts[b] = parts[b], parts[a]
	}
	return parts
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
