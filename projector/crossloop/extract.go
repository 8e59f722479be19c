package crossloop

import (
	"path"
	"regexp"
	"sort"
	"strings"
)

// Candidate is a pattern extracted from a loop, before merge and id
// allocation. Slug names it in its id.
type Candidate struct {
	Pattern Pattern
	Slug    string
	// Success: the loop's contribution counts as a success (error, success,
	// template) or a failure (anti).
}

// ExtractOptions selects which types to extract.
type ExtractOptions struct {
	Types     map[string]bool // nil: all
	Templates bool            // extract code templates
}

func (o ExtractOptions) want(t string) bool {
	if t == TypeTemplate && !o.Templates {
		return false
	}
	return o.Types == nil || o.Types[t]
}

// RepeatedErrorThreshold: an error signature seen in this many iterations
// of one loop is an anti-pattern (repeated_same_error).
const RepeatedErrorThreshold = 3

// Extract returns the patterns a completed loop teaches, in a fixed order
// (error→fix pairs, code templates, success approach, anti-patterns):
//   - an error followed (same or later iteration) by green tests gives an
//     error→fix pair, the fix being the last fix described up to the green
//     iteration; one pair per distinct error signature;
//   - a fix diff with at least one placeholder after generalisation gives a
//     code template;
//   - a successful loop gives its approach (the steps it took);
//   - an error signature seen in ≥ 3 iterations, scope creep (the files
//     changed grow to ≥ 8 and 3× the first iteration's without success) and
//     a failed loop give anti-patterns.
//
// Any outcome extracts (SPEC §6: extraction runs on every completion); only
// a success gives a success approach.
func Extract(l *Loop, o ExtractOptions) []Candidate {
	var out []Candidate
	its := l.Iterations
	seen := map[string]bool{}
	for i := range its {
		if !its[i].HasError() {
			continue
		}
		sig := errorSig(&its[i])
		if seen[sig] {
			continue
		}
		green, fix := -1, -1
		for j := i; j < len(its); j++ {
			if its[j].FixDescription != "" || its[j].FixDiff != "" {
				fix = j
			}
			if j > i && its[j].HasError() && errorSig(&its[j]) != sig {
				break // another error came first: this one's fix is unknown
			}
			if its[j].TestsGreen() && fix >= 0 {
				green = j
				break
			}
		}
		if green < 0 {
			continue
		}
		seen[sig] = true
		p := errorPattern(l, &its[i], &its[fix])
		if o.want(TypeError) {
			out = append(out, Candidate{Pattern: p, Slug: errorSlug(&p)})
		}
		if o.want(TypeTemplate) && p.CodeTemplate != "" && len(p.Placeholders) > 0 {
			out = append(out, Candidate{Pattern: templatePattern(l, &p), Slug: templateSlug(&p)})
		}
	}
	if l.Outcome == OutcomeSuccess && o.want(TypeSuccess) {
		if c, ok := successPattern(l); ok {
			out = append(out, c)
		}
	}
	if o.want(TypeAnti) {
		out = append(out, antiPatterns(l)...)
	}
	return out
}

func errorSig(it *Iteration) string {
	return it.ErrorType + " " + GeneralizeMessage(it.ErrorMessage)
}

var quotedRe = regexp.MustCompile(`'[^']*'|"[^"]*"|` + "`[^`]*`")
var numberRe = regexp.MustCompile(`\b\d+\b`)

// GeneralizeMessage turns an error message into a pattern: quoted parts
// become '.*' (their quotes kept), numbers \d+, the rest is regex-quoted.
// "Cannot read property 'email' of null" → "Cannot read property '.*' of null".
func GeneralizeMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if !strings.ContainsAny(msg, "'\"`") { // no quoted part (quotedRe needs a quote)
		return quoteLiteral(msg)
	}
	var b strings.Builder
	last := 0
	for _, m := range quotedRe.FindAllStringIndex(msg, -1) {
		b.WriteString(quoteLiteral(msg[last:m[0]]))
		q := msg[m[0] : m[0]+1]
		b.WriteString(q + ".*" + q)
		last = m[1]
	}
	b.WriteString(quoteLiteral(msg[last:]))
	return b.String()
}

func quoteLiteral(s string) string {
	if !strings.ContainsAny(s, "0123456789") { // no number (numberRe's \d is ASCII)
		return regexp.QuoteMeta(s)
	}
	var b strings.Builder
	last := 0
	for _, m := range numberRe.FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:m[0]]))
		b.WriteString(`\d+`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	return b.String()
}

// LocationHint generalises "src/auth/validate.ts:42" to "*.ts:validate*".
func LocationHint(loc string) string {
	if loc == "" {
		return ""
	}
	file := loc
	if i := strings.IndexByte(file, ':'); i >= 0 {
		file = file[:i]
	}
	base := path.Base(strings.ReplaceAll(file, "\\", "/"))
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if ext == "" {
		return "*" + stem + "*"
	}
	return "*" + ext + ":" + stem + "*"
}

// LanguageOf a file location by its extension (the registry's languages).
func LanguageOf(loc string) string {
	if i := strings.IndexByte(loc, ':'); i >= 0 {
		loc = loc[:i]
	}
	switch path.Ext(loc) {
	case ".ts", ".tsx", ".mts", ".cts":
		return "typescript"
	case ".js", ".jsx", ".mjs", ".cjs":
		return "javascript"
	case ".py":
		return "python"
	case ".go":
		return "go"
	case ".rs":
		return "rust"
	case ".java":
		return "java"
	case "":
		return ""
	}
	return "other"
}

// FixCategory classifies a fix by its words (first rule that matches).
func FixCategory(desc, diff string) string {
	s := strings.ToLower(desc + " " + diff)
	has := func(ws ...string) bool {
		for _, w := range ws {
			if strings.Contains(s, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("null", "undefined", "nil check", "== nil", "!= nil", "optional chaining"):
		return "add_null_check"
	case has("import", "require("):
		return "add_import"
	case has("try", "catch", "error handling", "handle error", "if err"):
		return "add_error_handling"
	case has("type check", "typeof", "type guard", "type validation", "instanceof", "validate type"):
		return "add_type_validation"
	case has("dependency", "upgrade", "bump", "package.json", "go.mod"):
		return "update_dependency"
	case has("refactor", "extract", "restructure", "split"):
		return "refactor_code_structure"
	case has("logic", "condition", "off-by", "off by", "boundary", "wrong", "incorrect"):
		return "fix_logic_error"
	}
	return "other"
}

var stringLitRe = regexp.MustCompile(`"[^"\n]*"|'[^'\n]*'`)
var nullCmpRe = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_.]*)\s*(===?|!==?)\s*(null|undefined|nil|None)\b`)

// GeneralizeCode turns the added lines of a diff into a template: string
// literals become {{message}} ({{message_2}} ...), the operand of a null
// comparison {{variable}}. It returns the template and its placeholders.
func GeneralizeCode(diff string) (string, map[string]string) {
	var lines []string
	for _, ln := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(ln, "+++"), strings.HasPrefix(ln, "-"), strings.HasPrefix(ln, "@@"):
			continue
		case strings.HasPrefix(ln, "+ "):
			ln = ln[2:]
		case strings.HasPrefix(ln, "+"):
			ln = ln[1:]
		}
		lines = append(lines, ln)
	}
	lines = dedent(lines)
	code := strings.Join(lines, "\n")
	if strings.TrimSpace(code) == "" {
		return "", nil
	}
	ph := map[string]string{}
	vars := map[string]string{}
	code = nullCmpRe.ReplaceAllStringFunc(code, func(m string) string {
		sm := nullCmpRe.FindStringSubmatch(m)
		name, ok := vars[sm[1]]
		if !ok {
			name = "variable"
			if len(vars) > 0 {
				name = "variable_" + itoa(len(vars)+1)
			}
			vars[sm[1]] = name
			ph[name] = "the value checked (was " + sm[1] + ")"
		}
		return "{{" + name + "}}" + m[len(sm[1]):]
	})
	n := 0
	code = stringLitRe.ReplaceAllStringFunc(code, func(m string) string {
		n++
		name := "message"
		if n > 1 {
			name = "message_" + itoa(n)
		}
		ph[name] = "text (was " + m + ")"
		return m[:1] + "{{" + name + "}}" + m[:1]
	})
	return code + "\n", ph
}

func dedent(lines []string) []string {
	min := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if min < 0 || n < min {
			min = n
		}
	}
	if min <= 0 {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= min {
			out[i] = l[min:]
		}
	}
	return out
}

func itoa(n int) string {
	const d = "0123456789"
	if n < 10 {
		return d[n : n+1]
	}
	return itoa(n/10) + d[n%10:n%10+1]
}

func errorPattern(l *Loop, errIt, fixIt *Iteration) Pattern {
	p := Pattern{Type: TypeError, Category: l.Category, ErrorType: errIt.ErrorType,
		ErrorPattern: GeneralizeMessage(errIt.ErrorMessage), FixDescription: fixIt.FixDescription,
		FixCategory: FixCategory(fixIt.FixDescription, fixIt.FixDiff)}
	if p.ErrorType == "" {
		p.ErrorType = "Error"
	}
	if h := LocationHint(errIt.Location); h != "" {
		p.LocationHints = []string{h}
	}
	p.Language = LanguageOf(errIt.Location)
	if fixIt.FixDiff != "" {
		p.DiffPattern = fixIt.FixDiff
		p.CodeTemplate, p.Placeholders = GeneralizeCode(fixIt.FixDiff)
	}
	if p.FixDescription == "" {
		p.FixDescription = strings.ReplaceAll(p.FixCategory, "_", " ")
	}
	if len(p.FixDescription) < 20 { // the shared schema's minLength
		p.FixDescription = "Fix " + p.ErrorType + ": " + p.FixDescription
	}
	p.Title = p.ErrorType + ": " + humanCategory(p.FixCategory, errIt.ErrorMessage)
	p.Tags = tagsFor(l, p.Language, p.FixCategory)
	return p
}

func humanCategory(cat, msg string) string {
	if cat != "other" && cat != "" {
		return strings.ReplaceAll(strings.TrimPrefix(cat, "add_"), "_", " ")
	}
	w := Words(GeneralizeMessage(msg))
	if len(w) > 5 {
		w = w[:5]
	}
	return strings.Join(w, " ")
}

func errorSlug(p *Pattern) string {
	if p.FixCategory != "" && p.FixCategory != "other" {
		return strings.TrimPrefix(p.FixCategory, "add_")
	}
	return strings.Join(firstWords(Words(strings.ReplaceAll(p.ErrorPattern, ".*", " ")), 4), "-")
}

func templatePattern(l *Loop, ep *Pattern) Pattern {
	return Pattern{Type: TypeTemplate, Category: l.Category, Title: "Template: " + humanCategory(ep.FixCategory, ep.ErrorPattern),
		CodeTemplate: ep.CodeTemplate, Placeholders: ep.Placeholders, Language: ep.Language,
		UseCase: ep.FixDescription, Tags: ep.Tags}
}

func templateSlug(p *Pattern) string { return errorSlug(p) }

func successPattern(l *Loop) (Candidate, bool) {
	var steps, tools []string
	seenS, seenT := map[string]bool{}, map[string]bool{}
	for _, it := range l.Iterations {
		if d := strings.TrimSpace(it.FixDescription); d != "" && !seenS[d] {
			seenS[d] = true
			steps = append(steps, d)
		}
		for _, t := range it.Tools {
			if !seenT[t] {
				seenT[t] = true
				tools = append(tools, t)
			}
		}
	}
	if l.Approach != "" && len(steps) == 0 {
		steps = []string{l.Approach}
	}
	if len(steps) == 0 {
		return Candidate{}, false
	}
	n := l.IterationCount()
	p := Pattern{Type: TypeSuccess, Category: l.Category, Steps: steps, ToolsUsed: tools,
		TaskPattern: TaskPattern(l.Task), IterationsSum: float64(n), IterationsN: 1, IterationsMin: n, IterationsMax: n}
	p.Approach = l.Approach
	if p.Approach == "" {
		p.Approach = "Approach that completed: " + l.Task
	}
	p.Title = titleCase(firstN(l.Task, 60)) + " approach"
	p.Tags = tagsFor(l, "", "")
	slug := strings.Join(firstWords(contentWords(l.Task), 3), "-")
	return Candidate{Pattern: p, Slug: slug}, true
}

// TaskPattern is a case-insensitive regex of a task's first three content
// words, in order: "Fix TypeScript type errors" → "(?i)fix.*typescript.*type".
func TaskPattern(task string) string {
	w := firstWords(contentWords(task), 3)
	for i := range w {
		w[i] = regexp.QuoteMeta(w[i])
	}
	if len(w) == 0 {
		return ""
	}
	return "(?i)" + strings.Join(w, ".*")
}

func antiPatterns(l *Loop) []Candidate {
	var out []Candidate
	count := map[string]int{}
	first := map[string]int{}
	var order []string
	for i := range l.Iterations {
		it := &l.Iterations[i]
		if !it.HasError() {
			continue
		}
		s := errorSig(it)
		if count[s] == 0 {
			order = append(order, s)
			first[s] = i
		}
		count[s]++
	}
	for _, s := range order {
		if count[s] < RepeatedErrorThreshold {
			continue
		}
		it := &l.Iterations[first[s]]
		p := Pattern{Type: TypeAnti, Category: l.Category, FailureMode: "repeated_same_error",
			Approach:          "Retrying the same fix while " + it.ErrorType + " \"" + GeneralizeMessage(it.ErrorMessage) + "\" keeps recurring",
			Symptoms:          []string{"same error in " + itoa(count[s]) + " iterations"},
			WhyItFails:        "the fix does not address the root cause; the loop repeats without progress",
			BetterAlternative: "stop after two identical failures and analyse the root cause before the next change"}
		p.Title = "Repeated " + it.ErrorType + " without progress"
		p.Tags = tagsFor(l, LanguageOf(it.Location), "")
		out = append(out, Candidate{Pattern: p, Slug: "repeated-" + strings.Join(firstWords(Words(it.ErrorType+" "+it.ErrorMessage), 3), "-")})
	}
	if l.Outcome != OutcomeSuccess && scopeCreep(l) {
		p := Pattern{Type: TypeAnti, Category: l.Category, FailureMode: "scope_creep",
			Approach:          "Widening the change to more and more files during a " + orDefault(l.Category, "task") + " task",
			Symptoms:          []string{"files changed grew across iterations"},
			WhyItFails:        "the change outgrows the task; each iteration adds risk",
			BetterAlternative: "keep to the files the task names; finish the primary goal first"}
		p.Title = "Scope creep"
		p.Tags = tagsFor(l, "", "")
		out = append(out, Candidate{Pattern: p, Slug: "scope-creep"})
	}
	if l.Outcome == OutcomeFailure {
		mode := l.FailureMode
		if mode == "" {
			mode = "incorrect_fix"
		}
		approach := l.Approach
		if approach == "" {
			var steps []string
			for _, it := range l.Iterations {
				if it.FixDescription != "" {
					steps = append(steps, it.FixDescription)
				}
			}
			approach = strings.Join(uniq(steps), "; ")
		}
		if approach == "" {
			approach = "Approach that failed: " + l.Task
		}
		p := Pattern{Type: TypeAnti, Category: l.Category, FailureMode: mode, Approach: approach,
			Symptoms:   []string{"loop ended in failure after " + itoa(l.IterationCount()) + " iterations"},
			WhyItFails: "the loop failed with this approach"}
		p.Title = titleCase(firstN(approach, 60))
		p.Tags = tagsFor(l, "", "")
		out = append(out, Candidate{Pattern: p, Slug: strings.Join(firstWords(contentWords(approach), 3), "-")})
	}
	return out
}

func scopeCreep(l *Loop) bool {
	firstN, all := -1, map[string]bool{}
	for _, it := range l.Iterations {
		if len(it.FilesChanged) == 0 {
			continue
		}
		if firstN < 0 {
			firstN = len(it.FilesChanged)
		}
		for _, f := range it.FilesChanged {
			all[f] = true
		}
	}
	return firstN > 0 && len(all) >= 8 && len(all) >= 3*firstN
}

func tagsFor(l *Loop, lang, fixCat string) []string {
	var t []string
	if lang != "" && lang != "other" {
		t = append(t, lang)
	}
	if l.Category != "" {
		t = append(t, l.Category)
	}
	switch fixCat {
	case "add_null_check":
		t = append(t, "null-safety")
	case "add_error_handling":
		t = append(t, "error-handling")
	case "add_type_validation":
		t = append(t, "type-safety")
	}
	return uniq(t)
}

var stop = map[string]bool{"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true,
	"in": true, "on": true, "for": true, "with": true, "is": true, "it": true, "be": true, "by": true, "as": true,
	"at": true, "from": true, "this": true, "that": true, "into": true, "when": true, "all": true}

func contentWords(s string) []string {
	var out []string
	for _, w := range Words(s) {
		if !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

func firstWords(w []string, n int) []string {
	if len(w) > n {
		w = w[:n]
	}
	return append([]string(nil), w...)
}

func firstN(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > n {
		return strings.TrimSpace(string(r[:n]))
	}
	return string(r)
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	if r[0] >= 'a' && r[0] <= 'z' {
		r[0] -= 'a' - 'A'
	}
	return string(r)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// MergeTags is the sorted union of two tag lists.
func MergeTags(a, b []string) []string {
	out := uniq(append(append([]string(nil), a...), b...))
	sort.Strings(out)
	return out
}
