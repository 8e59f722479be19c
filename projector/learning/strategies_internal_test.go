package learning

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The fast strategy extraction (lower-case regexes with literal prefixes on
// asciiLower(text), behind a literal prefilter) matches exactly what the
// reference's regexes compiled by jsCI match on the original text.

// referenceStrategies are the twelve regexes compiled as format 1 did
// (jsCI on the original text), the definition the fast path must equal.
var referenceStrategies = func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(strategyRows))
	for i, r := range strategyRows {
		out[i] = regexp.MustCompile(jsCI(r.src))
	}
	return out
}()

// checkExtraction compares the extraction of text with the reference
// regexes and returns how many strategies matched.
func checkExtraction(t *testing.T, text string) int {
	t.Helper()
	var want []string
	for i, re := range referenceStrategies {
		if re.MatchString(text) {
			want = append(want, strategyRows[i].label)
		}
	}
	got := ExtractPatternsFromDescription(text)
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%q: extracted %q, want %q", text, got, want)
	}
	return len(want)
}

// strategyPieces mix the strategies' words in every case with JavaScript
// whitespace, non-ASCII letters that RE2's (?i) would fold to ASCII (ſ, K),
// and invalid UTF-8.
var strategyPieces = []string{"split", "SPLIT", "Splitting", "by", "By", "file", "FILE", "type", "types", "component",
	"layer", "feature", "one", "per", "subtask", "task", "sub", "shared", "first", "api", "API", "route", "routes",
	"separate", "tests", "Test", "with", "alongside", "code", "implementation", "in", "parallel", "parallelize",
	"all", "everything", "sequential", "order", "execution", "dependency", "chain", " ", "  ", "\t", "\n",
	"\u00a0", "\u2028", "\u3000", "\ufeff", "\u200b", "ſplit", "\u212aey", "İ", "\xff", "\xc3", "x", "-", ".",
	"split by", "Splitting  by", "by file", "one file", "per subtask", "shared types", "types first", "api routes",
	"tests with", "with code", "in separate", "separate subtask", "parallelize all", "sequential order",
	"dependency chain", "test alongside implementation", "file\u00a0type", "split\u2029by"}

func TestExtractionMatchesReferenceRegexes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	matched := 0
	for range 20000 {
		var b strings.Builder
		for range r.IntN(14) {
			p := strategyPieces[r.IntN(len(strategyPieces))]
			if r.IntN(4) == 0 {
				p = strings.ToUpper(p)
			}
			b.WriteString(p)
			if r.IntN(3) != 0 {
				b.WriteString([]string{" ", "\u00a0", "\t", "  ", ""}[r.IntN(5)])
			}
		}
		matched += checkExtraction(t, b.String())
		checkLiterals(t, b.String())
	}
	t.Logf("%d matches", matched)
	if matched < 50 {
		t.Fatalf("only %d matches in the random texts: the comparison proves little", matched)
	}
	for _, s := range []string{"", "Split by file type", "SPLITTING\u00a0BY\u2028LAYER", "ſplit by feature",
		"api  separate", "API ROUTES separate", "tests in separate subtask", "Parallelize ALL", "one file per task"} {
		checkExtraction(t, s)
	}
}

func FuzzExtraction(f *testing.F) {
	for _, s := range []string{"Split by file type", "tests alongside code", "ſplit by feature", "API\u00a0 separate"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkExtraction(t, s)
		checkLiterals(t, s)
	})
}

// checkLiterals: literalsIn finds exactly the literals asciiLower(text) contains.
func checkLiterals(t *testing.T, text string) {
	t.Helper()
	var want uint32
	for n, lit := range literals {
		if strings.Contains(asciiLower(text), lit) {
			want |= 1 << n
		}
	}
	if got := literalsIn(text); got != want {
		t.Fatalf("%q: literals %b, want %b", text, got, want)
	}
}
