package knowledge

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/loredev/lore/safety"
)

// Validation: three layers (SPEC §5). The first error rejects; warnings are
// collected and stored on the entry. A warning never ends validation early
// (K2): the later checks still run and an error among them wins.

// Layer numbers and severities. NB: must not change: stored and exported.
const (
	LayerStructural = 1
	LayerSafety     = 2
	LayerSemantic   = 3

	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Reasons, exactly as the reference writes them. NB: must not change.
const (
	ReasonTooShort      = "lesson too short (min 15 chars)"
	ReasonTooLong       = "lesson too long (max 280 chars)"
	reasonCategory      = "invalid category: "
	ReasonScope         = "invalid scope: must be 'global' or 'stack:<name>'"
	ReasonConfidence    = "confidence out of range [0.0, 1.0]"
	ReasonDangerous     = "dangerous command pattern detected"
	ReasonDangerousWarn = "potentially dangerous command pattern queued for review"
	ReasonSecurity      = "security-degrading instruction detected"
	ReasonInjection     = "injection pattern detected"
	ReasonSecret        = "secret or credential detected"
	ReasonContradiction = "possible contradiction with an existing lesson with shared tags"
	ReasonVague         = "lesson may be too vague (no tech reference or action verb)"
)

// MinLessonLen and MaxLessonLen bound a lesson, in UTF-16 code units.
const (
	MinLessonLen = 15
	MaxLessonLen = 280
)

// Categories of the reference and SeedCategories, the seed's own (its
// example entry and its migration use them): one rule for every door,
// whether a lesson is added, imported, migrated or promoted.
var (
	Categories     = []string{"process", "architecture", "tooling", "security", "testing", "debugging", "performance", "integration", "todo", "other"}
	SeedCategories = []string{"lesson", "pattern", "domain", "decision"}
)

// ValidCategory reports whether c is a category (the reference's or the
// seed's).
func ValidCategory(c string) bool {
	return slices.Contains(Categories, c) || slices.Contains(SeedCategories, c)
}

var scopeRe = regexp.MustCompile(`^stack:[a-zA-Z0-9_-]{1,64}$`)

// ValidScope reports whether s is "global" or "stack:<name>" (case-sensitive).
func ValidScope(s string) bool { return s == "global" || scopeRe.MatchString(s) }

// Meta is what the validator knows about a candidate besides its text.
type Meta struct {
	Category   string
	Scope      string
	Confidence float64
	// Tags are the candidate's own tags; they join the inferred tags when
	// looking for contradictions.
	Tags []string
	// feat, when set, holds featuresOf(candidate, Tags, ...) (the fold
	// has them already); nil computes what is needed.
	feat *features
}

// Existing is an active lesson the candidate is compared with.
type Existing struct {
	Text string
	Tags []string
	// feat, when set, holds the stored features of Text and Tags (the
	// fold passes them from entry summaries); nil computes them.
	feat *features
}

// Issue is one finding of the validator.
type Issue struct {
	Layer    int    `json:"layer"`
	Reason   string `json:"reason"`
	Severity string `json:"severity"`
}

// Result is the validator's verdict. Layer 0 means none (clean).
//
// INVARIANT: Valid == (Severity != "error"); when valid, Layer/Reason are
// the first warning's (or zero when clean) and Warnings lists them all.
type Result struct {
	Valid    bool
	Layer    int
	Reason   string
	Severity string
	Warnings []Issue
	// Conflicts are the indexes in existing of the lessons the candidate
	// possibly contradicts.
	Conflicts []int
}

func reject(layer int, reason string) Result {
	return Result{Valid: false, Layer: layer, Reason: reason, Severity: SeverityError}
}

// A rule is a safety regex with a prefilter: lits are literals of which
// every match contains at least one (compared with the text, or with its
// lower case when fold), so when none occurs the regex cannot match and is
// not run. ctl marks the control-character class, checked byte-wise.
//
// INVARIANT: rule.match(s) == rule.re.MatchString(s) for every s
// (TestSafetyPrefilterIsExact). A case-insensitive regex ((?i)) also
// matches non-ASCII folds ("ſ" for s, the Kelvin sign for k), so fold
// literals are only trusted on ASCII text; other text runs the regex.
type rule struct {
	re   *regexp.Regexp
	lits []string
	fold bool
	ctl  bool
}

// r is a rule needing one of lits; ri is a case-insensitive one.
func r(pat string, lits ...string) rule { return rule{re: regexp.MustCompile(pat), lits: lits} }
func ri(pat string, lits ...string) rule {
	return rule{re: regexp.MustCompile(pat), lits: lits, fold: true}
}

func (x rule) match(t *safetyInput) bool {
	switch {
	case x.ctl:
		if !t.hasControl() {
			return false
		}
	case x.fold && t.ascii():
		if !containsAny(t.lowerASCII(), x.lits) {
			return false
		}
	case !x.fold && len(x.lits) > 0:
		if !containsAny(t.s, x.lits) {
			return false
		}
	}
	return x.re.MatchString(t.s)
}

func containsAny(s string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// safetyInput is one text the rules check, with lazily derived views.
type safetyInput struct {
	s              string
	isASCII, known bool
	lower          string
	lowered        bool
}

func (t *safetyInput) ascii() bool {
	if !t.known {
		t.known, t.isASCII = true, true
		for i := 0; i < len(t.s); i++ {
			if t.s[i] >= 0x80 {
				t.isASCII = false
				break
			}
		}
	}
	return t.isASCII
}

func (t *safetyInput) lowerASCII() string {
	if !t.lowered {
		t.lowered, t.lower = true, strings.ToLower(t.s)
	}
	return t.lower
}

// hasControl reports a byte of [\x00-\x08\x0b-\x1f\x7f] (controls but TAB
// and LF), the only bytes the control class matches (all are ASCII, so
// never inside a multi-byte character).
func (t *safetyInput) hasControl() bool {
	for i := 0; i < len(t.s); i++ {
		if c := t.s[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return true
		}
	}
	return false
}

var (
	// Dangerous commands are safety.Command's (fork bombs, deletes of a
	// system or home, device overwrites, pipe-to-shell, chmod 777 in any
	// form, deltree, rmdir /s; negated or scoped mentions pass).
	dangerousWarnings = []rule{
		r(`\bformat\b`, "format"), r(`\bkill\s+-9\b`, "kill"), r(`\bpkill\b`, "pkill"), r(`\bkillall\b`, "killall"),
		r("`[^`]*`", "`"), r(`\$\([^)]*\)`, "$(")}
	securityDegrading = []rule{
		r(`disable\s+.{0,50}firewall`, "firewall"), r(`turn\s+off\s+.{0,50}security`, "security"),
		r(`skip\s+.{0,50}auth`, "skip"), r(`bypass\s+.{0,50}auth`, "bypass"),
		r(`ignore\s+.{0,50}certificate`, "certificate"), r(`disable\s+.{0,50}tls`, "disable"),
		r(`disable\s+.{0,50}ssl`, "disable"), r(`no\s+.{0,50}validation`, "validation"),
		r(`disable\s+.{0,50}2fa`, "2fa"), r(`remove\s+.{0,50}password`, "password")}
	injection = []rule{
		{re: regexp.MustCompile(`[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x0d]`), ctl: true},
		// Invisible characters are all non-ASCII: some byte is >= 0x80.
		r(`[\x{00AD}\x{200B}-\x{200F}\x{202A}-\x{202E}\x{2060}-\x{2064}\x{2066}-\x{2069}\x{FEFF}]`,
			"\xc2\xad", "\xe2\x80", "\xe2\x81", "\xef\xbb\xbf"),
		ri(`(?im)^\s*system\s*:`, "system"), ri(`(?i)<script`, "<script"), ri(`(?i)javascript:`, "javascript:"),
		ri(`(?i)\beval\(`, "eval("),
		r(`\b__proto__\b`, "__proto__"), r(`\bconstructor\[`, "constructor["), r(`\.prototype\[`, ".prototype[")}
)

// SecretKind is the kind of the first credential in text, or of the first
// redaction marker (the appender redacts lessons before they reach the log,
// so a lesson that held a secret arrives with a marker); "" when none.
func SecretKind(text string) string {
	if k := safety.RedactedKinds(text); len(k) > 0 {
		return k[0]
	}
	if f := safety.Secrets(text); len(f) > 0 {
		return f[0].Kind
	}
	return ""
}

func anyMatch(rules []rule, t *safetyInput) bool {
	for _, x := range rules {
		if x.match(t) {
			return true
		}
	}
	return false
}

// Validate runs the three layers on candidate against existing active
// lessons. It is pure and deterministic.
func Validate(candidate string, existing []Existing, m Meta) Result {
	// Layer 1 — structural, in the reference's order.
	n := UTF16Len(candidate)
	switch {
	case n < MinLessonLen:
		return reject(LayerStructural, ReasonTooShort)
	case n > MaxLessonLen:
		return reject(LayerStructural, ReasonTooLong)
	case !ValidCategory(m.Category):
		return reject(LayerStructural, reasonCategory+m.Category)
	case !ValidScope(m.Scope):
		return reject(LayerStructural, ReasonScope)
	case math.IsNaN(m.Confidence) || !(m.Confidence >= 0 && m.Confidence <= 1):
		return reject(LayerStructural, ReasonConfidence)
	}

	// Layer 2 — content safety.
	sv := cachedSafety(candidate)
	if sv.reason != "" {
		return reject(LayerSafety, sv.reason)
	}
	var warnings []Issue
	if sv.warn {
		warnings = append(warnings, Issue{LayerSafety, ReasonDangerousWarn, SeverityWarning})
	}

	// Layer 3 — semantic: warnings only.
	var ctags []string
	var cnorm string
	if m.feat != nil {
		ctags, cnorm = m.feat.ctags, m.feat.cnorm
	} else {
		ctags, cnorm = contradictionTagList(candidate, m.Tags), normalizeText(candidate)
	}
	conflicts := contradictions(ctags, cnorm, existing)
	if len(conflicts) > 0 {
		warnings = append(warnings, Issue{LayerSemantic, ReasonContradiction, SeverityWarning})
	}
	if isVagueNormalized(cnorm) {
		warnings = append(warnings, Issue{LayerSemantic, ReasonVague, SeverityWarning})
	}
	r := Result{Valid: true, Warnings: warnings, Conflicts: conflicts}
	if len(warnings) > 0 {
		r.Layer, r.Reason, r.Severity = warnings[0].Layer, warnings[0].Reason, SeverityWarning
	}
	return r
}

// safetyVerdict is layer 2's verdict on a text: the reason it is
// rejected ("" when it passes) and whether it carries the dangerous-command
// warning.
type safetyVerdict struct {
	reason string
	warn   bool
}

// safetyOf runs layer 2 on candidate: commands and security on the
// normalised, lower-cased text; injection and secrets on the original
// text. A warning never skips the later checks.
func safetyOf(candidate string) safetyVerdict {
	var v safetyVerdict
	st := &safetyInput{s: safetyText(candidate)}
	if _, bad := safety.Command(candidate); bad {
		return safetyVerdict{reason: ReasonDangerous}
	}
	v.warn = anyMatch(dangerousWarnings, st)
	if anyMatch(securityDegrading, st) {
		return safetyVerdict{reason: ReasonSecurity}
	}
	ct := &safetyInput{s: candidate}
	if anyMatch(injection, ct) {
		return safetyVerdict{reason: ReasonInjection}
	}
	if kind, bad := safety.Instruction(candidate); bad {
		return safetyVerdict{reason: ReasonInjection + ": " + kind}
	}
	if kind := SecretKind(candidate); kind != "" {
		return safetyVerdict{reason: ReasonSecret + ": " + kind}
	}
	return v
}

// The safety verdict is a pure function of the text, so a memo keyed by
// the exact text is always right; it saves running the rules again on a
// lesson validated once already (its hive promotion, a restore, a
// rescan). Bounded: cleared when full.
var safetyMemo = struct {
	sync.Mutex
	m map[string]safetyVerdict
}{m: map[string]safetyVerdict{}}

const safetyMemoMax = 16384

func cachedSafety(candidate string) safetyVerdict {
	safetyMemo.Lock()
	v, ok := safetyMemo.m[candidate]
	safetyMemo.Unlock()
	if ok {
		return v
	}
	v = safetyOf(candidate)
	safetyMemo.Lock()
	if len(safetyMemo.m) >= safetyMemoMax {
		clear(safetyMemo.m)
	}
	safetyMemo.m[candidate] = v
	safetyMemo.Unlock()
	return v
}

var techWords = setOf("git", "docker", "typescript", "bun", "vitest", "node", "python", "react", "sql",
	"api", "hook", "test", "schema", "config", "file", "function", "class", "module", "import", "export")

var actionVerbs = setOf("use", "avoid", "prefer", "run", "check", "always", "never", "ensure", "call",
	"write", "add", "remove", "update", "set", "enable", "disable")

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// IsVague reports a lesson with no technical word and no action verb (exact
// words of the normalised text: "tests" is not "test").
func IsVague(lesson string) bool { return isVagueNormalized(normalizeText(lesson)) }

// isVagueNormalized is IsVague of normalizeText(lesson).
func isVagueNormalized(normalized string) bool {
	for _, w := range words(normalized) {
		if techWords[w] || actionVerbs[w] {
			return false
		}
	}
	return true
}

// negationPairs are the contradiction pairs; "don't use" can never match
// after normalisation (the apostrophe becomes a space), as in the reference.
var negationPairs = [][2]string{
	{"always", "never"}, {"must", "must not"}, {"must", "should not"}, {"enable", "disable"},
	{"use", "avoid"}, {"use", "don't use"}, {"recommended", "not recommended"},
}

// contradictionTags are the tags compared for contradictions: the inferred
// tags plus the entry's own, without lore's lifecycle tags.
func contradictionTags(text string, own []string) map[string]bool {
	set := map[string]bool{}
	for _, t := range InferTags(text) {
		set[t] = true
	}
	for _, t := range own {
		if t == FastTrackTag || strings.HasPrefix(t, "migration:") || t == "" {
			continue
		}
		set[t] = true
	}
	return set
}

// Contradictions returns the indexes of existing lessons that share a tag
// with candidate and hold the other side of a negation pair whose context
// (3 words either side, the term itself excluded) shares a word.
func Contradictions(candidate string, tags []string, existing []Existing) []int {
	return contradictions(contradictionTagList(candidate, tags), normalizeText(candidate), existing)
}

// candidateContexts are a candidate's contexts of both sides of every
// negation pair, and the terms an existing entry must hold (as a
// substring of its normalised text) for one of them to matter: the other
// side of each pair the candidate has a context for. An existing entry
// holding none of them contradicts nothing (contradictions).
func candidateContexts(cnorm string) ([][2]map[string]bool, []string) {
	cw := words(cnorm)
	cctx := make([][2]map[string]bool, len(negationPairs))
	var needed []string
	for k, p := range negationPairs {
		cctx[k] = [2]map[string]bool{contextWords(cw, p[0]), contextWords(cw, p[1])}
		if len(cctx[k][0]) > 0 {
			needed = append(needed, p[1])
		}
		if len(cctx[k][1]) > 0 {
			needed = append(needed, p[0])
		}
	}
	return cctx, needed
}

// negationTerms are the distinct sides of negationPairs.
var negationTerms = func() []string {
	var out []string
	for _, p := range negationPairs {
		for _, t := range p {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}()

// contradictions is Contradictions given the candidate's contradiction tags
// (sorted) and normalizeText(candidate).
func contradictions(ct []string, cnorm string, existing []Existing) []int {
	if len(ct) == 0 {
		return nil
	}
	cctx, needed := candidateContexts(cnorm)
	if len(needed) == 0 {
		return nil // no context overlaps anything
	}
	var out []int
	for i, ex := range existing {
		var etags []string
		var enorm string
		if ex.feat != nil {
			etags, enorm = ex.feat.ctags, ex.feat.cnorm
		} else {
			etags, enorm = contradictionTagList(ex.Text, ex.Tags), normalizeText(ex.Text)
		}
		if !sharesSorted(ct, etags) || !containsAny(enorm, needed) {
			// A term's words occur in a row in words(enorm) only if the
			// term is a substring of enorm (words joined by one space):
			// without one, every context of the entry is empty.
			continue
		}
		ew := words(enorm)
		for k, p := range negationPairs {
			// An empty candidate context overlaps nothing: the existing
			// side is only computed when it can matter.
			if len(cctx[k][0]) > 0 && overlap(cctx[k][0], contextWords(ew, p[1])) ||
				len(cctx[k][1]) > 0 && overlap(cctx[k][1], contextWords(ew, p[0])) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// negationTermWords are the negation terms split into words, once.
var negationTermWords = func() map[string][]string {
	m := map[string][]string{}
	for _, p := range negationPairs {
		for _, t := range p {
			m[t] = strings.Split(t, " ")
		}
	}
	return m
}()

// contextWords collects the words within 3 tokens of every occurrence of
// term (a contiguous word slice), the term's own words excluded.
func contextWords(ws []string, term string) map[string]bool {
	tw, ok := negationTermWords[term]
	if !ok {
		tw = strings.Split(term, " ")
	}
	var ctx map[string]bool // allocated at the first occurrence
	for i := 0; i+len(tw) <= len(ws); {
		match := true
		for k := range tw {
			if ws[i+k] != tw[k] {
				match = false
				break
			}
		}
		if !match {
			i++
			continue
		}
		for j := max(0, i-3); j < min(len(ws), i+len(tw)+3); j++ {
			if (j < i || j >= i+len(tw)) && ws[j] != "" {
				if ctx == nil {
					ctx = map[string]bool{}
				}
				ctx[ws[j]] = true
			}
		}
		i += len(tw)
	}
	return ctx
}

func overlap(a, b map[string]bool) bool {
	for w := range a {
		if b[w] {
			return true
		}
	}
	return false
}
