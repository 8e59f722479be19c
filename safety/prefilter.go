package safety

import (
	"math/bits"
	"regexp/syntax"
	"strings"
)

// A chain is a necessary condition of a rule's regex, derived from its
// syntax tree: a simpler pattern of literals, runs of a character class,
// alternations and gaps (any text) whose language holds every match of
// the regex, checked on a text's byte positions before the regex runs.
// Go's regexp tries every start position against its whole program, so a
// keyword that prose is full of ("token", "key", "sk") costs tens of
// microseconds per text; the chain turns most of those away first.
//
// INVARIANT (exactness): on an ASCII text, if the regex matches anywhere
// then the chain matches; the chain is only ever weaker than the regex.
// Non-ASCII texts skip the chain (case folding maps ſ to s and K to k, and
// a class may hold runes beyond ASCII), so every answer equals the
// unfiltered scan's (TestPrefilterIsExact, FuzzPrefilterIsExact).
type chain []link

// link is one part of a chain, in sequence with the next (adjacent): a
// gap (any text, possibly empty), an alternation of sub-chains (alts), a
// run of at least min bytes of an ASCII class, or a literal (fold:
// compared with the lower-cased text).
type link struct {
	gap   bool
	alts  []chain
	class *[256]bool
	min   int
	lit   string
	fold  bool
}

var gapChain = chain{{gap: true}}

// maxAlts bounds the alternatives kept in one link: beyond that the link
// costs more than it saves and becomes a gap (weaker, still necessary).
const maxAlts = 64

// deriveChain returns the chain of a regex in Go's Perl syntax (the
// flags regexp.Compile uses), or nil when nothing useful is required.
func deriveChain(expr string) chain {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	c := chainOf(re)
	for _, l := range c {
		if !l.gap {
			return c
		}
	}
	return nil
}

// chainOf is a chain whose language holds the language of re: each node
// maps to a pattern matching at least the spans re matches.
func chainOf(re *syntax.Regexp) chain {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return chain{} // consumes nothing
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			if r >= 0x80 {
				return gapChain // cannot be compared on ASCII bytes
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
	case syntax.OpCapture:
		return chainOf(re.Sub[0])
	case syntax.OpPlus:
		return repeatChain(re.Sub[0], 1)
	case syntax.OpRepeat:
		if re.Min < 1 {
			return gapChain
		}
		return repeatChain(re.Sub[0], re.Min)
	case syntax.OpConcat:
		var out chain
		for _, s := range re.Sub {
			out = appendChain(out, chainOf(s))
		}
		return out
	case syntax.OpAlternate:
		if len(re.Sub) > maxAlts {
			return gapChain
		}
		alts := make([]chain, 0, len(re.Sub))
		for _, s := range re.Sub {
			c := chainOf(s)
			if len(c) == 1 && c[0].gap {
				return gapChain // one alternative requires nothing: neither does the whole
			}
			alts = append(alts, c)
		}
		return chain{{alts: alts}}
	}
	// Optional parts, any character, anything else: any text.
	return gapChain
}

// repeatChain is sub repeated at least min times (any number above).
func repeatChain(sub *syntax.Regexp, min int) chain {
	if sub.Op == syntax.OpCharClass {
		return chain{{class: asciiClass(sub.Rune), min: min}}
	}
	return appendChain(chainOf(sub), gapChain)
}

// appendChain appends b to a, merging adjacent gaps.
func appendChain(a, b chain) chain {
	for _, l := range b {
		if l.gap && len(a) > 0 && a[len(a)-1].gap {
			continue
		}
		a = append(a, l)
	}
	return a
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

// posSet is a set of byte positions 0..len(text) of one text.
type posSet []uint64

func (p posSet) has(i int) bool { return p[i>>6]&(1<<(i&63)) != 0 }
func (p posSet) add(i int)      { p[i>>6] |= 1 << (i & 63) }

// first is the smallest position in p, -1 when p is empty.
func (p posSet) first() int {
	for w, x := range p {
		if x != 0 {
			return w<<6 + bits.TrailingZeros64(x)
		}
	}
	return -1
}

// next is the smallest position >= i in p, -1 when there is none.
func (p posSet) next(i int) int {
	w := i >> 6
	if w >= len(p) {
		return -1
	}
	x := p[w] &^ (1<<(i&63) - 1)
	for {
		if x != 0 {
			return w<<6 + bits.TrailingZeros64(x)
		}
		if w++; w == len(p) {
			return -1
		}
		x = p[w]
	}
}

// fill adds the positions from..to (both included).
func (p posSet) fill(from, to int) {
	fw, tw := from>>6, to>>6
	lo, hi := ^uint64(0)<<(from&63), ^uint64(0)>>(63-to&63)
	if fw == tw {
		p[fw] |= lo & hi
		return
	}
	p[fw] |= lo
	for w := fw + 1; w < tw; w++ {
		p[w] = ^uint64(0)
	}
	p[tw] |= hi
}

func (p posSet) empty() bool {
	for _, w := range p {
		if w != 0 {
			return false
		}
	}
	return true
}

// scan holds one text and the arena its position sets are cut from
// (reset, not freed, between rules: no allocation once it is big enough).
type scan struct {
	text, lower string
	words       int
	arena       []uint64
	used        int
}

func (s *scan) newSet() posSet {
	if s.used+s.words > len(s.arena) {
		// Sets already cut keep the old arena alive until they are dropped.
		s.arena, s.used = make([]uint64, max(2*len(s.arena), 64*s.words, 1024)), 0
	}
	p := posSet(s.arena[s.used : s.used+s.words : s.used+s.words])
	s.used += s.words
	clear(p)
	return p
}

// run maps the positions where the chain may start to those where it may
// end.
func (s *scan) run(c chain, in posSet) posSet {
	for i := range c {
		if in.empty() {
			return in
		}
		in = s.step(&c[i], in)
	}
	return in
}

func (s *scan) step(l *link, in posSet) posSet {
	n := len(s.text)
	out := s.newSet()
	switch {
	case l.gap:
		if i := in.first(); i >= 0 {
			out.fill(i, n)
		}
	case l.alts != nil:
		for _, a := range l.alts {
			r := s.run(a, in)
			for w := range out {
				out[w] |= r[w]
			}
		}
	case l.class != nil:
		// e is an end when some start in in, at least min bytes before
		// it, begins a run of class bytes reaching e. Outside a run, the
		// walk jumps to the next start.
		earliest := -1
		for e := in.next(0); e >= 0 && e <= n; {
			if earliest < 0 {
				earliest = e // e is in in
			}
			if e-earliest >= l.min {
				out.add(e)
			}
			if e < n && !l.class[s.text[e]] {
				earliest = -1
				e = in.next(e + 1)
				continue
			}
			e++
		}
	default:
		t := s.text
		if l.fold {
			t = s.lower
		}
		// An occurrence before the first start cannot follow one.
		for i := max(in.first(), 0); i+len(l.lit) <= n; i++ {
			j := strings.Index(t[i:], l.lit) // the next occurrence, found fast
			if j < 0 {
				break
			}
			if i += j; in.has(i) {
				out.add(i + len(l.lit))
			}
		}
	}
	return out
}

// passes reports whether the chain lets the regex run on text (lower is
// its lower case, sc scratch space); an empty chain, or a non-ASCII text,
// always passes.
func (c chain) passes(text, lower string, ascii bool, sc *scan) bool {
	if len(c) == 0 || !ascii {
		return true
	}
	sc.text, sc.lower, sc.words, sc.used = text, lower, len(text)/64+1, 0
	defer func() { sc.text, sc.lower = "", "" }()
	start := sc.newSet() // a match may start anywhere
	start.fill(0, len(text))
	return !sc.run(c, start).empty()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
