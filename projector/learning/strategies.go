package learning

import (
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

// strategy is one row of extractPatternsFromDescription's table.
type strategy struct {
	re    *regexp.Regexp
	label string
}

// strategies are the reference's twelve regexes, in its table order.
// NB: the order is the output order.
var strategies = func() []strategy {
	rows := [][2]string{
		{`split(?:ting)?\s+by\s+file\s+type`, "Split by file type"},
		{`split(?:ting)?\s+by\s+component`, "Split by component"},
		{`split(?:ting)?\s+by\s+layer`, "Split by layer (UI/logic/data)"},
		{`split(?:ting)?\s+by\s+feature`, "Split by feature"},
		{`one\s+file\s+per\s+(?:sub)?task`, "One file per subtask"},
		{`shared\s+types?\s+first`, "Handle shared types first"},
		{`api\s+(?:routes?)?\s+separate`, "Separate API routes"},
		{`tests?\s+(?:with|alongside)\s+(?:code|implementation)`, "Tests alongside implementation"},
		{`tests?\s+(?:in\s+)?separate\s+(?:sub)?task`, "Tests in separate subtask"},
		{`parallel(?:ize)?\s+(?:all|everything)`, "Maximize parallelization"},
		{`sequential\s+(?:order|execution)`, "Sequential execution order"},
		{`dependency\s+(?:chain|order)`, "Respect dependency chain"},
	}
	out := make([]strategy, len(rows))
	for i, r := range rows {
		out[i] = strategy{re: regexp.MustCompile(jsCI(r[0])), label: r[1]}
	}
	return out
}()

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
	for _, s := range strategies {
		if s.re.MatchString(text) {
			out = append(out, s.label)
		}
	}
	return out
}
