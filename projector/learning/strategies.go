package learning

import (
	"math/bits"
	"regexp"
	"strings"
)

// jsWhitespace is JavaScript's \s (Go's \s is ASCII only).
const jsWhitespace = `[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]`

// jsCI rewrites a lower-case JavaScript regex source written for the /i
// flag into an RE2 source with the same meaning: ASCII letters become
// [xX] classes (JavaScript's /i without /u folds no non-ASCII letter to
// ASCII, unlike RE2's (?i) which folds ſ to s and K to k) and \s becomes
// JavaScript's whitespace class.
func jsCI(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			i++
			if src[i] == 's' {
				b.WriteString(jsWhitespace)
			} else {
				b.WriteByte('\\')
				b.WriteByte(src[i])
			}
		case c >= 'a' && c <= 'z':
			b.WriteByte('[')
			b.WriteByte(c)
			b.WriteByte(c - 'a' + 'A')
			b.WriteByte(']')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// jsLowerRE rewrites a lower-case JavaScript regex source written for the
// /i flag into an RE2 source that means the same on asciiLower(text): \s
// becomes JavaScript's whitespace class, letters stay lower case.
//
// INVARIANT (why this equals jsCI's regex on the original text): the
// sources hold no letters outside a-z and no escapes but \s, and
// asciiLower maps only the bytes A-Z, which never occur inside a UTF-8
// multi-byte sequence, so every rune r of the text becomes a rune r' with
// r ∈ [xX] ⇔ r' = x and r ∈ class ⇔ r' ∈ class for the whitespace class
// (which holds no ASCII letter); invalid bytes stay invalid. The lower-case
// source has a literal prefix ("split", "test", ...), which Go's regexp
// finds with a substring search instead of trying every position.
func jsLowerRE(src string) string {
	return strings.ReplaceAll(src, `\s`, jsWhitespace)
}

// asciiLower maps A-Z to a-z and leaves every other byte as it is; it
// returns text itself when it holds no upper-case ASCII letter.
func asciiLower(text string) string {
	i := 0
	for i < len(text) && !('A' <= text[i] && text[i] <= 'Z') {
		i++
	}
	if i == len(text) {
		return text
	}
	b := []byte(text)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// strategy is one row of extractPatternsFromDescription's table.
type strategy struct {
	re *regexp.Regexp // matches asciiLower(text), see jsLowerRE
	// needs are literals a match must contain, each group as a bit mask of
	// its alternatives (bits of literals): a text missing a group cannot
	// match, so the regex (whose every call costs a pass over the text) is
	// skipped.
	needs []uint32
	label string
	id    string // PatternID(label)
}

// strategyRow is a row of the reference's table: a lower-case source for
// JavaScript's /i flag, the literals every match holds (see strategy.needs;
// each group read off the source: a word outside any optional part, or the
// alternatives of a required group), and the label.
type strategyRow struct {
	src   string
	needs [][]string
	label string
}

// strategyRows are the reference's twelve regexes, in its table order.
// NB: the order is the output order.
var strategyRows = []strategyRow{
	{`split(?:ting)?\s+by\s+file\s+type`, [][]string{{"split"}, {"by"}, {"file"}, {"type"}}, "Split by file type"},
	{`split(?:ting)?\s+by\s+component`, [][]string{{"split"}, {"by"}, {"component"}}, "Split by component"},
	{`split(?:ting)?\s+by\s+layer`, [][]string{{"split"}, {"by"}, {"layer"}}, "Split by layer (UI/logic/data)"},
	{`split(?:ting)?\s+by\s+feature`, [][]string{{"split"}, {"by"}, {"feature"}}, "Split by feature"},
	{`one\s+file\s+per\s+(?:sub)?task`, [][]string{{"one"}, {"file"}, {"per"}, {"task"}}, "One file per subtask"},
	{`shared\s+types?\s+first`, [][]string{{"shared"}, {"type"}, {"first"}}, "Handle shared types first"},
	{`api\s+(?:routes?)?\s+separate`, [][]string{{"api"}, {"separate"}}, "Separate API routes"},
	{`tests?\s+(?:with|alongside)\s+(?:code|implementation)`, [][]string{{"test"}, {"with", "alongside"}, {"code", "implementation"}},
		"Tests alongside implementation"},
	{`tests?\s+(?:in\s+)?separate\s+(?:sub)?task`, [][]string{{"test"}, {"separate"}, {"task"}}, "Tests in separate subtask"},
	{`parallel(?:ize)?\s+(?:all|everything)`, [][]string{{"parallel"}, {"all", "everything"}}, "Maximize parallelization"},
	{`sequential\s+(?:order|execution)`, [][]string{{"sequential"}, {"order", "execution"}}, "Sequential execution order"},
	{`dependency\s+(?:chain|order)`, [][]string{{"dependency"}, {"chain", "order"}}, "Respect dependency chain"},
}

// literals are the distinct literals of strategyRows' needs (at most 32,
// lower case, at least 2 bytes); byFirst and bySecond have bit n set at
// the first and second byte of literals[n].
var (
	literals          []string
	byFirst, bySecond [256]uint32
)

// strategies are strategyRows compiled once, with their pattern ids.
var strategies = func() []strategy {
	index := map[string]int{}
	out := make([]strategy, len(strategyRows))
	for i, r := range strategyRows {
		out[i] = strategy{re: regexp.MustCompile(jsLowerRE(r.src)), label: r.label, id: PatternID(r.label)}
		for _, group := range r.needs {
			var mask uint32
			for _, lit := range group {
				n, ok := index[lit]
				if !ok {
					n = len(literals)
					if n == 32 || len(lit) < 2 || lit != strings.ToLower(lit) {
						panic("learning: bad strategy literal " + lit)
					}
					index[lit] = n
					literals = append(literals, lit)
					byFirst[lit[0]] |= 1 << n
					bySecond[lit[1]] |= 1 << n
				}
				mask |= 1 << n
			}
			out[i].needs = append(out[i].needs, mask)
		}
	}
	return out
}()

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// literalsIn returns the set (bits of literals) of literals that
// asciiLower(text) contains, in one pass over text.
func literalsIn(text string) uint32 {
	var found uint32
	for i := 0; i+1 < len(text); i++ {
		m := byFirst[lowerByte(text[i])] & bySecond[lowerByte(text[i+1])] &^ found
		for m != 0 { // a literal's first two bytes: compare the rest
			n := bits.TrailingZeros32(m)
			m &= m - 1
			lit := literals[n]
			if len(text)-i < len(lit) {
				continue
			}
			j := 2
			for j < len(lit) && lowerByte(text[i+j]) == lit[j] {
				j++
			}
			if j == len(lit) {
				found |= 1 << n
			}
		}
	}
	return found
}

// mayMatch reports whether a text holding the literals found holds every
// literal group of s.
func (s *strategy) mayMatch(found uint32) bool {
	for _, g := range s.needs {
		if found&g == 0 {
			return false
		}
	}
	return true
}

// StrategyLabels lists the twelve strategies in table order.
func StrategyLabels() []string {
	out := make([]string, len(strategies))
	for i, s := range strategies {
		out[i] = s.label
	}
	return out
}

// ExtractPatternsFromDescription is extractPatternsFromDescription: each of
// the twelve strategies whose regex matches, once, in table order.
func ExtractPatternsFromDescription(text string) []string {
	out := []string{}
	for _, i := range extractStrategies(text) {
		out = append(out, strategies[i].label)
	}
	return out
}

// extractStrategies returns the indexes (in table order) of the strategies
// whose regex matches text; nil when none does.
func extractStrategies(text string) []int {
	found := literalsIn(text)
	var out []int
	lower, lowered := "", false
	for i := range strategies {
		s := &strategies[i]
		if !s.mayMatch(found) {
			continue
		}
		if !lowered {
			lower, lowered = asciiLower(text), true
		}
		if s.re.MatchString(lower) {
			out = append(out, i)
		}
	}
	return out
}
