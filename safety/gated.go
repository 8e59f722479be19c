package safety

import (
	"regexp"
	"strings"
)

// A gated regex runs only on texts that contain one of its literals.
//
// INVARIANT: every match of re contains one of lits (in the normalised,
// lower-case text the rules read), so the gate never changes a verdict
// (TestGatesAreExact). Go's regexp has no literal prefix to skip ahead
// with when a pattern starts with an alternation or \b; the gate is what
// keeps a clean text cheap.
type gated struct {
	re   *regexp.Regexp
	lits []string
	// mention, when set, tells a match that only mentions what the rule
	// looks for (its submatch indexes in s): MatchString passes over it.
	mention func(s string, m []int) bool
}

func gate(pat string, lits ...string) *gated { return &gated{re: regexp.MustCompile(pat), lits: lits} }

// gateUnless is gate with the matches mention tells passed over.
func gateUnless(pat string, mention func(s string, m []int) bool, lits ...string) *gated {
	g := gate(pat, lits...)
	g.mention = mention
	return g
}

func (g *gated) open(s string) bool {
	for _, l := range g.lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

func (g *gated) MatchString(s string) bool { return g.open(s) && g.matches(s) }

// matches is MatchString without the gate: a match of re that is not a
// mention.
func (g *gated) matches(s string) bool {
	if g.mention == nil {
		return g.re.MatchString(s)
	}
	for _, m := range g.re.FindAllStringSubmatchIndex(s, -1) {
		if !g.mention(s, m) {
			return true
		}
	}
	return false
}

func (g *gated) FindAllStringIndex(s string, n int) [][]int {
	if !g.open(s) {
		return nil
	}
	return g.re.FindAllStringIndex(s, n)
}

func (g *gated) FindAllStringSubmatchIndex(s string, n int) [][]int {
	if !g.open(s) {
		return nil
	}
	return g.re.FindAllStringSubmatchIndex(s, n)
}

func (g *gated) FindAllStringSubmatch(s string, n int) [][]string {
	if !g.open(s) {
		return nil
	}
	return g.re.FindAllStringSubmatch(s, n)
}

// anyMatch reports whether one of gs matches s.
func anyMatch(gs []*gated, s string) bool {
	for _, g := range gs {
		if g.MatchString(s) {
			return true
		}
	}
	return false
}

// allGates lists every gated regex, for TestGatesAreExact.
func allGates() []*gated {
	out := []*gated{pipeShellRe, deviceRe, worldWritableRe, rmRe, findDeleteRe, removeItemRe, delRe, winDeleteRe, fnDefRe, forkLoopRe}
	out = append(out, exfilRes...)
	out = append(out, leakRes...)
	out = append(out, concealRes...)
	out = append(out, tokenMarkers...)
	out = append(out, roleMarkers...)
	return append(out, roles...)
}
