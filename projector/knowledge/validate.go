package knowledge

import (
	"math"
	"regexp"
	"strings"
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

// Categories of the reference; SeedCategories are the seed's migration
// categories, accepted on import only.
var (
	Categories     = []string{"process", "architecture", "tooling", "security", "testing", "debugging", "performance", "integration", "todo", "other"}
	SeedCategories = []string{"lesson", "pattern", "domain", "decision"}
)

// ValidCategory reports whether c is a category; seed categories count only
// when allowSeed (imports and migrations).
func ValidCategory(c string, allowSeed bool) bool {
	for _, x := range Categories {
		if c == x {
			return true
		}
	}
	if allowSeed {
		for _, x := range SeedCategories {
			if c == x {
				return true
			}
		}
	}
	return false
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
	// AllowSeedCategories accepts lesson, pattern, domain, decision.
	AllowSeedCategories bool
}

// Existing is an active lesson the candidate is compared with.
type Existing struct {
	Text string
	Tags []string
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

var (
	dangerousErrors = compileAll(
		`\brm\s+-rf\b`, `\bsudo\s+rm\b`, `\bmkfs\b`, `\bdd\s+if=`, `:\(\)\s*\{`,
		// K1: chmod 777 in any form (with or without -R, 0777).
		`\bchmod\s+(?:-[a-z]+\s+)*0?777\b`,
		`\bdeltree\b`, `\brmdir\s+/s\b`)
	dangerousWarnings = compileAll(
		`\bformat\b`, `\bkill\s+-9\b`, `\bpkill\b`, `\bkillall\b`, "`[^`]*`", `\$\([^)]*\)`)
	securityDegrading = compileAll(
		`disable\s+.{0,50}firewall`, `turn\s+off\s+.{0,50}security`, `skip\s+.{0,50}auth`,
		`bypass\s+.{0,50}auth`, `ignore\s+.{0,50}certificate`, `disable\s+.{0,50}tls`,
		`disable\s+.{0,50}ssl`, `no\s+.{0,50}validation`, `disable\s+.{0,50}2fa`,
		`remove\s+.{0,50}password`)
	injection = compileAll(
		`[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x0d]`,
		`[\x{00AD}\x{200B}-\x{200F}\x{202A}-\x{202E}\x{2060}-\x{2064}\x{2066}-\x{2069}\x{FEFF}]`,
		`(?im)^\s*system\s*:`, `(?i)<script`, `(?i)javascript:`, `(?i)\beval\(`,
		`\b__proto__\b`, `\bconstructor\[`, `\.prototype\[`)
	secrets = compileAll(
		`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----`,
		`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
		`\bgh[pousr]_[A-Za-z0-9]{36,}`, `\bgithub_pat_[A-Za-z0-9_]{22,}`,
		`\bxox[abposr]-[A-Za-z0-9-]{10,}`,
		`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
		`(?i)\b(?:password|passwd|api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token)\s*(?:=\s*["']?[^\s"']{4,}|:\s*["'][^"']{4,}["'])`)
)

func compileAll(pats ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(pats))
	for i, p := range pats {
		out[i] = regexp.MustCompile(p)
	}
	return out
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
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
	case !ValidCategory(m.Category, m.AllowSeedCategories):
		return reject(LayerStructural, reasonCategory+m.Category)
	case !ValidScope(m.Scope):
		return reject(LayerStructural, ReasonScope)
	case math.IsNaN(m.Confidence) || !(m.Confidence >= 0 && m.Confidence <= 1):
		return reject(LayerStructural, ReasonConfidence)
	}

	// Layer 2 — content safety. Commands and security on the normalised,
	// lower-cased text; injection and secrets on the original text.
	var warnings []Issue
	st := safetyText(candidate)
	if anyMatch(dangerousErrors, st) {
		return reject(LayerSafety, ReasonDangerous)
	}
	if anyMatch(dangerousWarnings, st) {
		warnings = append(warnings, Issue{LayerSafety, ReasonDangerousWarn, SeverityWarning})
	}
	if anyMatch(securityDegrading, st) {
		return reject(LayerSafety, ReasonSecurity)
	}
	if anyMatch(injection, candidate) {
		return reject(LayerSafety, ReasonInjection)
	}
	if anyMatch(secrets, candidate) {
		return reject(LayerSafety, ReasonSecret)
	}

	// Layer 3 — semantic: warnings only.
	conflicts := Contradictions(candidate, m.Tags, existing)
	if len(conflicts) > 0 {
		warnings = append(warnings, Issue{LayerSemantic, ReasonContradiction, SeverityWarning})
	}
	if IsVague(candidate) {
		warnings = append(warnings, Issue{LayerSemantic, ReasonVague, SeverityWarning})
	}
	r := Result{Valid: true, Warnings: warnings, Conflicts: conflicts}
	if len(warnings) > 0 {
		r.Layer, r.Reason, r.Severity = warnings[0].Layer, warnings[0].Reason, SeverityWarning
	}
	return r
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
func IsVague(lesson string) bool {
	for _, w := range words(normalizeText(lesson)) {
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
	ct := contradictionTags(candidate, tags)
	if len(ct) == 0 {
		return nil
	}
	cw := words(normalizeText(candidate))
	var out []int
	for i, ex := range existing {
		et := contradictionTags(ex.Text, ex.Tags)
		shared := false
		for t := range et {
			if ct[t] {
				shared = true
				break
			}
		}
		if !shared {
			continue
		}
		ew := words(normalizeText(ex.Text))
		for _, p := range negationPairs {
			if overlap(contextWords(cw, p[0]), contextWords(ew, p[1])) ||
				overlap(contextWords(cw, p[1]), contextWords(ew, p[0])) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// contextWords collects the words within 3 tokens of every occurrence of
// term (a contiguous word slice), the term's own words excluded.
func contextWords(ws []string, term string) map[string]bool {
	tw := strings.Split(term, " ")
	ctx := map[string]bool{}
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
