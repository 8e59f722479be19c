package safety

import (
	"regexp/syntax"
	"strings"
)

// A chain is a necessary condition of a rule's regex, derived from its
// syntax tree: the parts every match holds in order (literals, runs of a
// character class), checked in a few linear passes before the regex runs.
// Go's regexp tries every start position against the whole program, so a
// keyword that prose is full of ("token", "key", "sk") costs tens of
// microseconds per text; the chain turns most of those away first.
//
// INVARIANT (exactness): on an ASCII text, if the regex matches anywhere
// then the chain matches; the chain is only ever weaker than the regex.
// Non-ASCII texts skip the chain (case folding maps ſ to s and K to k, and
// a class may hold runes beyond ASCII), so every answer equals the
// unfiltered scan's (TestPrefilterIsExact, FuzzPrefilterIsExact).
type chain []link

// link is one required part: an alternation of sub-chains (alts), or a
// run of at least min bytes of an ASCII class, or one of a set of
// literals (fold: compared with the lower-cased text).
type link struct {
	alts  []chain
	class *[256]bool
	min   int
	lit   string
	fold  bool
}

// maxLinkLits bounds the alternatives kept in one link: beyond that the
// link costs more passes than it saves, and is dropped (weaker, still
// necessary).
const maxLinkLits = 64

// deriveChain returns the chain of a regex in Go's Perl syntax (the
// flags regexp.Compile uses), or nil when nothing useful is required.
func deriveChain(expr string) chain {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return chainOf(re)
}

func chainOf(re *syntax.Regexp) chain {
	switch re.Op {
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			if r >= 0x80 {
				return nil // cannot be compared on ASCII bytes; drop it
			}
			b.WriteRune(r)
		}
		fold := re.Flags&syntax.FoldCase != 0
		s := b.String()
		if fold {
			s = strings.ToLower(s)
		}
		return chain{{lit: s, fold: fold}}
	case syntax.OpCharClass:
		return chain{{class: asciiClass(re.Rune), min: 1}}
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return nil
	case syntax.OpCapture:
		return chainOf(re.Sub[0])
	case syntax.OpPlus:
		return chainOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil
		}
		if re.Sub[0].Op == syntax.OpCharClass {
			return chain{{class: asciiClass(re.Sub[0].Rune), min: re.Min}}
		}
		return chainOf(re.Sub[0])
	case syntax.OpConcat:
		var out chain
		for _, s := range re.Sub {
			out = append(out, chainOf(s)...)
		}
		return out
	case syntax.OpAlternate:
		alts := make([]chain, 0, len(re.Sub))
		for _, s := range re.Sub {
			c := chainOf(s)
			if len(c) == 0 {
				return nil // one alternative requires nothing: neither does the whole
			}
			alts = append(alts, c)
		}
		if len(alts) > maxLinkLits {
			return nil
		}
		return chain{{alts: alts}}
	}
	// Empty matches, anchors, word boundaries, optional parts: nothing
	// is required.
	return nil
}

// asciiClass is the ASCII part of a class given as rune ranges (pairs).
func asciiClass(ranges []rune) *[256]bool {
	var c [256]bool
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x80; r++ {
			c[r] = true
		}
	}
	return &c
}

// end returns the earliest position at which the whole chain can have
// matched, starting at or after from, or -1. Each link's earliest end is
// taken greedily: an earlier end never excludes a later link's match.
func (c chain) end(text, lower string, from int) int {
	for i := range c {
		from = c[i].end(text, lower, from)
		if from < 0 {
			return -1
		}
	}
	return from
}

func (l *link) end(text, lower string, from int) int {
	switch {
	case l.alts != nil:
		best := -1
		for _, a := range l.alts {
			if e := a.end(text, lower, from); e >= 0 && (best < 0 || e < best) {
				best = e
			}
		}
		return best
	case l.class != nil:
		run := 0
		for i := from; i < len(text); i++ {
			if !l.class[text[i]] {
				run = 0
				continue
			}
			if run++; run >= l.min {
				return i + 1
			}
		}
		return -1
	default:
		s := text
		if l.fold {
			s = lower
		}
		if j := strings.Index(s[from:], l.lit); j >= 0 {
			return from + j + len(l.lit)
		}
		return -1
	}
}

// passes reports whether the chain lets the regex run on text (lower is
// its lower case); an empty chain, or a non-ASCII text, always passes.
func (c chain) passes(text, lower string, ascii bool) bool {
	if len(c) == 0 || !ascii {
		return true
	}
	return c.end(text, lower, 0) >= 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
