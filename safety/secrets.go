package safety

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// The credential rules are gitleaks' default rule set (MIT), embedded as
// rules/gitleaks.toml and compiled with Go's regexp (gitleaks' own engine)
// behind the loader below, plus lore's rules (secrets_lore.go) for shapes
// that matter in free text: shortened provider keys, credentials in URLs,
// assignments of secret-looking values and private key headers.
//
// Refresh: `go generate ./safety` copies the config of the gitleaks module
// version pinned in gen.go into rules/gitleaks.toml; TestSecretRulesLoad
// then checks every rule still compiles.
//
//go:embed rules/gitleaks.toml
var gitleaksTOML []byte

// A Finding is one credential in a text: the byte range of the secret
// itself (what redaction replaces) and the kind of rule that found it.
type Finding struct {
	Kind       string
	Start, End int
}

// secretRule is one compiled rule.
//
// INVARIANT: a rule with keywords can only match a text whose lower case
// contains one of them (gitleaks' prefilter contract), so the regex runs
// only then.
type secretRule struct {
	id          string
	re          *regexp.Regexp
	keywords    []string // lower case
	entropy     float64  // the secret must have more Shannon entropy than this
	secretGroup int
	allow       []allowlist
	// check, when set, is an extra test of the secret (lore's rules).
	check func(secret string) bool
	// need is what every match of re holds (see chain), tested after the
	// keywords and before re.
	need chain
}

type allowlist struct {
	and       bool
	target    string // "", "match" or "line"
	regexes   []*regexp.Regexp
	stopwords []string
}

type tomlConfig struct {
	Allowlist tomlAllow `toml:"allowlist"`
	Rules     []struct {
		ID          string      `toml:"id"`
		Regex       string      `toml:"regex"`
		Path        string      `toml:"path"`
		Entropy     float64     `toml:"entropy"`
		Keywords    []string    `toml:"keywords"`
		SecretGroup int         `toml:"secretGroup"`
		Allowlists  []tomlAllow `toml:"allowlists"`
	} `toml:"rules"`
}

type tomlAllow struct {
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	Stopwords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
}

// skippedRules are gitleaks rules lore replaces with its own: the generic
// API key rule, tuned for code files, costs a hundred times any other rule
// on prose (lazy quantifiers under (?i)); lore's password-assignment and
// secret-assignment rules cover its shapes.
var skippedRules = map[string]bool{"generic-api-key": true}

var loaded struct {
	once   sync.Once
	err    error
	rules  []secretRule
	global allowlist
	kw     keywordIndex
}

// keywordIndex finds, in one pass over a lower-cased text, the rules one
// of whose keywords it contains (the role of gitleaks' Aho-Corasick
// prefilter): keywords are indexed by their first two bytes.
type keywordIndex struct {
	// pair[p] is 1 + the index in lists of the keywords starting with the
	// byte pair p (0: none), a dense table: one load per position.
	pair   [1 << 16]uint16
	lists  [][]kwEntry
	always []int // rules without keywords
}

type kwEntry struct {
	kw    string
	rules []int
}

func (x *keywordIndex) build(rules []secretRule) {
	byPair := map[uint16][]kwEntry{}
	idx := map[string]int{} // keyword → position in its pair's list
	for i, r := range rules {
		if len(r.keywords) == 0 {
			x.always = append(x.always, i)
			continue
		}
		for _, k := range r.keywords {
			if len(k) < 2 {
				x.always = append(x.always, i)
				break
			}
			p := uint16(k[0])<<8 | uint16(k[1])
			if j, ok := idx[k]; ok {
				byPair[p][j].rules = append(byPair[p][j].rules, i)
				continue
			}
			idx[k] = len(byPair[p])
			byPair[p] = append(byPair[p], kwEntry{kw: k, rules: []int{i}})
		}
	}
	for p, l := range byPair {
		x.lists = append(x.lists, l)
		x.pair[p] = uint16(len(x.lists))
	}
}

// candidates marks in out the rules whose prefilter lower passes.
func (x *keywordIndex) candidates(lower string, out []bool) {
	for _, i := range x.always {
		out[i] = true
	}
	for i := 0; i+1 < len(lower); i++ {
		l := x.pair[uint16(lower[i])<<8|uint16(lower[i+1])]
		if l == 0 {
			continue
		}
		for _, e := range x.lists[l-1] {
			if strings.HasPrefix(lower[i:], e.kw) {
				for _, r := range e.rules {
					out[r] = true
				}
			}
		}
	}
}

// loadRules compiles lore's rules, then gitleaks' (lore's win an overlap:
// they come first). Rules that only match file paths are skipped.
func loadRules() {
	var cfg tomlConfig
	if _, err := toml.Decode(string(gitleaksTOML), &cfg); err != nil {
		loaded.err = fmt.Errorf("safety: gitleaks rules: %w", err)
		return
	}
	g, err := compileAllow(cfg.Allowlist)
	if err != nil {
		loaded.err = fmt.Errorf("safety: gitleaks global allowlist: %w", err)
		return
	}
	// gitleaks' global stop words (the alphabet, one UUID) excuse fixtures
	// of test files in a source tree; in a lesson or an error message a
	// key-shaped value spelled with them is still one a reader copies
	// ("ghp_abcdefghijklmnopqrstuvwxyz0123456789"): not applied.
	g.stopwords = nil
	loaded.global = g
	loaded.rules = append(loaded.rules, loreRules()...)
	for _, r := range cfg.Rules {
		if r.Regex == "" || skippedRules[r.ID] {
			continue // a path-only rule, or one lore replaces
		}
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			loaded.err = fmt.Errorf("safety: gitleaks rule %s: %w", r.ID, err)
			return
		}
		sr := secretRule{id: r.ID, re: re, entropy: r.Entropy, secretGroup: r.SecretGroup, need: deriveChain(r.Regex)}
		for _, k := range r.Keywords {
			sr.keywords = append(sr.keywords, strings.ToLower(k))
		}
		for _, a := range r.Allowlists {
			al, err := compileAllow(a)
			if err != nil {
				loaded.err = fmt.Errorf("safety: gitleaks rule %s allowlist: %w", r.ID, err)
				return
			}
			sr.allow = append(sr.allow, al)
		}
		loaded.rules = append(loaded.rules, sr)
	}
	loaded.kw.build(loaded.rules)
}

func compileAllow(a tomlAllow) (allowlist, error) {
	al := allowlist{and: strings.EqualFold(a.Condition, "AND"), target: a.RegexTarget}
	for _, s := range a.Regexes {
		re, err := regexp.Compile(s)
		if err != nil {
			return al, err
		}
		al.regexes = append(al.regexes, re)
	}
	for _, s := range a.Stopwords {
		al.stopwords = append(al.stopwords, strings.ToLower(s))
	}
	return al, nil
}

// RulesError reports whether the embedded rules failed to load (nil when
// they compile); detection then finds lore's rules only.
func RulesError() error {
	loaded.once.Do(loadRules)
	return loaded.err
}

// allowed reports whether the allowlist excuses a finding. As in gitleaks,
// the conditions present must all hold under AND, one suffices under OR.
func (a *allowlist) allowed(secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	var checks []bool
	if len(a.regexes) > 0 {
		hit := false
		for _, re := range a.regexes {
			if re.MatchString(target) {
				hit = true
				break
			}
		}
		checks = append(checks, hit)
	}
	if len(a.stopwords) > 0 {
		ls, hit := strings.ToLower(secret), false
		for _, w := range a.stopwords {
			if strings.Contains(ls, w) {
				hit = true
				break
			}
		}
		checks = append(checks, hit)
	}
	if len(checks) == 0 {
		return false
	}
	for _, c := range checks {
		if c && !a.and {
			return true
		}
		if !c && a.and {
			return false
		}
	}
	return a.and
}

// Secrets returns the credentials in text, in order, without overlaps (at
// an overlap the earlier rule wins, lore's rules before gitleaks').
// Redaction markers are never findings.
func Secrets(text string) []Finding { return secrets(text, true) }

// secrets is Secrets; without prefilter the rules' chains are not
// consulted (the reference the prefilter is tested against).
func secrets(text string, prefilter bool) []Finding {
	loaded.once.Do(loadRules)
	if len(text) < 8 {
		return nil
	}
	lower := strings.ToLower(text)
	var buf [512]bool // no allocation for up to 512 rules
	cand := buf[:0]
	if len(loaded.rules) <= len(buf) {
		cand = buf[:len(loaded.rules)]
	} else {
		cand = make([]bool, len(loaded.rules))
	}
	loaded.kw.candidates(lower, cand)
	ascii := isASCII(text)
	sc := scanPool.Get().(*scan)
	defer scanPool.Put(sc)
	var out []Finding
	for i := range loaded.rules {
		r := &loaded.rules[i]
		if !cand[i] {
			continue
		}
		if prefilter && !r.need.passes(text, lower, ascii, sc) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := secretSpan(r, m)
			if s < 0 || e <= s {
				continue
			}
			secret := text[s:e]
			if r.entropy > 0 && ShannonEntropy(secret) <= r.entropy {
				continue
			}
			if r.check != nil && !r.check(secret) {
				continue
			}
			if isMarkerAt(text, s) {
				continue
			}
			match, line := text[m[0]:m[1]], lineAround(text, m[0], m[1])
			if loaded.global.allowed(secret, match, line) {
				continue
			}
			excused := false
			for j := range r.allow {
				if r.allow[j].allowed(secret, match, line) {
					excused = true
					break
				}
			}
			if excused || overlaps(out, s, e) {
				continue
			}
			out = append(out, Finding{Kind: r.id, Start: s, End: e})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

var scanPool = sync.Pool{New: func() any { return new(scan) }}

// secretSpan is the secret's range in a match: the rule's secret group,
// else the first non-empty group, else the whole match (gitleaks' choice).
func secretSpan(r *secretRule, m []int) (int, int) {
	if r.secretGroup > 0 && 2*r.secretGroup+1 < len(m) {
		return m[2*r.secretGroup], m[2*r.secretGroup+1]
	}
	for g := 1; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
			return m[2*g], m[2*g+1]
		}
	}
	return m[0], m[1]
}

func lineAround(text string, s, e int) string {
	ls := strings.LastIndexByte(text[:s], '\n') + 1
	le := strings.IndexByte(text[e:], '\n')
	if le < 0 {
		return text[ls:]
	}
	return text[ls : e+le]
}

func overlaps(fs []Finding, s, e int) bool {
	for _, f := range fs {
		if s < f.End && f.Start < e {
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// ShannonEntropy is the entropy in bits per character of s.
func ShannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n, h := float64(len(s)), 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// MarkerPrefix starts every redaction marker: [REDACTED:<kind>].
const MarkerPrefix = "[REDACTED:"

// Marker is the text a secret of kind is replaced with.
func Marker(kind string) string { return MarkerPrefix + kind + "]" }

var markerRe = regexp.MustCompile(`\[REDACTED:([a-z0-9-]+)\]`)

// isMarkerAt reports a redaction marker starting at or just before s (a
// rule whose value class admits brackets would otherwise see one).
func isMarkerAt(text string, s int) bool {
	from := max(0, s-len(MarkerPrefix))
	return strings.Contains(text[from:min(len(text), s+len(MarkerPrefix))], MarkerPrefix)
}

// Redact replaces every credential in text with its marker and returns the
// new text and the kinds replaced (in order, each once). Text without
// credentials is returned unchanged.
//
// INVARIANT: Secrets(Redact(t)) is empty (TestRedactIsComplete).
func Redact(text string) (string, []string) {
	fs := Secrets(text)
	if len(fs) == 0 {
		return text, nil
	}
	var b strings.Builder
	var kinds []string
	last := 0
	for _, f := range fs {
		b.WriteString(text[last:f.Start])
		b.WriteString(Marker(f.Kind))
		last = f.End
		if !contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	b.WriteString(text[last:])
	out := b.String()
	// A rule may see a secret only once its neighbour is gone (two keys
	// glued together): redact until nothing is left.
	if more, k := Redact(out); len(k) > 0 {
		for _, x := range k {
			if !contains(kinds, x) {
				kinds = append(kinds, x)
			}
		}
		out = more
	}
	return out, kinds
}

// RedactedKinds returns the kinds of the redaction markers in text.
func RedactedKinds(text string) []string {
	if !strings.Contains(text, MarkerPrefix) {
		return nil
	}
	var kinds []string
	for _, m := range markerRe.FindAllStringSubmatch(text, -1) {
		if !contains(kinds, m[1]) {
			kinds = append(kinds, m[1])
		}
	}
	return kinds
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
