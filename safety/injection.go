package safety

import (
	"regexp"
	"strings"
)

// Kinds of instruction findings.
const (
	KindOverride      = "instruction-override"
	KindRole          = "role-reassignment"
	KindRoleMarker    = "role-marker"
	KindExfiltration  = "prompt-exfiltration"
	KindHiddenUnicode = "hidden-unicode"
	KindHiddenMarkup  = "hidden-markup"
)

// Instruction reports text that addresses its reader as a model instead of
// stating a fact: an order to drop earlier instructions, a new role, chat
// role markers, a request for the reader's prompt, characters that hide
// text, or markup that hides text. It returns the kind found.
//
// The override rule is a small grammar over the normalised, de-leeted
// words, not a list of sentences: a verb of dismissal (ignore, disregard,
// forget, override, ...), then within a few words a qualifier naming what
// came before (previous, prior, above, earlier, all, your, ...), then
// within a few words an object that is a model's input (instructions,
// prompt, directives, and — after a qualifier of time — rules, context,
// guidelines, ...). The passive form ("the above instructions are void")
// and "forget everything above" are the same rule seen from the object.
func Instruction(text string) (string, bool) {
	for _, r := range text {
		if r >= 0xE0000 && r <= 0xE007F || r >= 0xE0100 && r <= 0xE01EF || (r != 0xFE0F && IsHidden(r)) {
			return KindHiddenUnicode, true
		}
	}
	n := foldConfusables(Normalize(text))
	if hiddenMarkup(n) {
		return KindHiddenMarkup, true
	}
	if anyMatch(roleMarkers, n) {
		return KindRoleMarker, true
	}
	d := n
	if strings.ContainsAny(n, "013457@$") {
		d = deleetText(n)
	}
	if anyMatch(roles, d) {
		return KindRole, true
	}
	if exfilRe.MatchString(d) {
		return KindExfiltration, true
	}
	if override(letterWords(n)) {
		return KindOverride, true
	}
	return "", false
}

// deleetText undoes leetspeak inside the tokens that mix letters and
// symbols, leaving numbers and other tokens as they are.
func deleetText(n string) string {
	toks := strings.Split(n, " ")
	for i, t := range toks {
		if mixesLeet(t) {
			toks[i] = deleet.Replace(t)
		}
	}
	return strings.Join(toks, " ")
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

var (
	// Imperatives and gerunds only: "the model ignored the context" reports.
	dismissVerbs = set("ignore", "ignoring", "disregard", "disregarding", "forget", "forgetting",
		"override", "overriding", "overrule", "bypass", "skip", "dismiss", "neglect", "abandon", "discard",
		"nullify", "supersede", "disobey", "unlearn", "ditch", "scrap", "drop",
		// Other languages: French, Spanish, Portuguese, Italian, German.
		"ignorez", "ignorer", "oublie", "oubliez", "ignora", "ignorar", "ignore", "olvida", "olvide", "olvidar",
		"esquece", "esqueça", "dimentica", "ignoriere", "ignoriert", "ignorieren", "vergiss", "vergesst", "vergessen")
	// Multi-word dismissals, as word sequences.
	dismissPhrases = [][]string{{"set", "aside"}, {"pay", "no", "attention", "to"}, {"stop", "following"},
		{"do", "not", "follow"}, {"don", "t", "follow"}, {"dont", "follow"}, {"no", "longer", "follow"},
		{"stop", "obeying"}, {"do", "not", "obey"}, {"don", "t", "obey"}, {"throw", "out"}, {"move", "past"},
		{"break", "free", "of"}, {"free", "yourself", "from"}, {"get", "rid", "of"}}
	timeQualifiers = set("previous", "previously", "prior", "above", "earlier", "preceding", "foregoing",
		"former", "original", "initial", "old", "past", "before", "aforementioned", "preexisting", "existing",
		"given", "provided", "first",
		"précédentes", "precedentes", "précédente", "antérieures", "anteriores", "anterior", "previas", "precedentes",
		"precedenti", "vorherigen", "vorherige", "bisherigen", "obigen", "toutes", "todas", "todos", "tutte", "alle")
	anyQualifiers = set("all", "any", "every", "each", "your", "these", "those", "the", "system", "developer",
		"hidden", "safety", "other", "my", "its", "their", "current")
	strongObjects = set("instruction", "instructions", "prompt", "prompts", "directive", "directives",
		"programming", "guardrail", "guardrails",
		"consignes", "instrucciones", "instruções", "instrucoes", "istruzioni", "anweisungen", "anweisung", "vorgaben")
	weakObjects = set("rule", "rules", "guideline", "guidelines", "guidance", "constraint", "constraints",
		"command", "commands", "order", "orders", "context", "message", "messages", "policy", "policies",
		"restriction", "restrictions", "safeguard", "safeguards", "conversation", "text", "input", "inputs",
		"training", "task", "tasks", "directions", "direction", "requests", "request", "limitation", "limitations", "boundaries",
		"content", "lines", "says", "said", "told", "stated", "mentioned", "written")
	// everything above / anything you were told.
	everything = set("everything", "anything", "all", "whatever")
	after      = set("above", "before", "prior", "previously", "earlier", "preceding", "so", "until", "you",
		"that", "this", "said", "told", "here", "up", "i")
	standAlone  = set("above", "before", "previous", "previously", "prior", "earlier", "preceding", "foregoing", "aforementioned")
	filler      = set("the", "all", "of", "everything", "anything", "that", "what", "is", "was", "written", "said", "stated", "mentioned", "text", "you", "were", "told", "said")
	conjunction = set("and", "then", "instead", "now", "but", "just", "only", "completely", "entirely", "please", "you", "i", "from", "so", "to", "we")
	given       = set("given", "told", "provided", "received", "taught", "shown", "fed")
	voidWords   = set("void", "obsolete", "cancelled", "canceled", "revoked", "invalid", "null", "overridden",
		"superseded", "irrelevant", "outdated", "deprecated", "lifted", "suspended", "disabled", "removed")
)

// override applies the dismissal grammar to the words of a text.
func override(ws []string) bool {
	for i := range ws {
		vlen := dismissAt(ws, i)
		if vlen == 0 {
			continue
		}
		j := i + vlen
		// forget everything above / ignore all that came before.
		for k := j; k < min(len(ws), j+2); k++ {
			if everything[ws[k]] && k+1 < len(ws) && after[ws[k+1]] {
				return true
			}
		}
		// ignore the above / disregard everything before, and …: the
		// qualifier stands alone, at the end or before a conjunction.
		for k := j; k < min(len(ws), j+3); k++ {
			if standAlone[ws[k]] && (k+1 == len(ws) || conjunction[ws[k+1]]) {
				return true
			}
			if !filler[ws[k]] {
				break
			}
		}
		// verb … qualifier … object.
		for q := j; q < min(len(ws), j+6); q++ {
			timeQ, anyQ := timeQualifiers[ws[q]], anyQualifiers[ws[q]]
			if !timeQ && !anyQ {
				continue
			}
			for o := q + 1; o < min(len(ws), q+5); o++ {
				if strongObjects[ws[o]] || (timeQ || ws[o-1] == "your" || ws[q] == "your") && weakObjects[ws[o]] {
					return true
				}
			}
		}
		// ignore instructions above / disregard what you were told.
		for o := j; o < min(len(ws), j+3); o++ {
			if strongObjects[ws[o]] && o+1 < len(ws) && (timeQualifiers[ws[o+1]] || after[ws[o+1]]) {
				return true
			}
		}
		// override the rules you were given / the instructions I got.
		for o := j; o < min(len(ws), j+3); o++ {
			if !strongObjects[ws[o]] && !weakObjects[ws[o]] || o+3 >= len(ws) {
				continue
			}
			if rel := ws[o+1]; rel == "you" || rel == "that" || rel == "which" || rel == "i" || rel == "we" {
				for k := o + 2; k < min(len(ws), o+5); k++ {
					if given[ws[k]] {
						return true
					}
				}
			}
		}
		if j+3 < len(ws) && (ws[j] == "what" || ws[j] == "whatever") && (ws[j+1] == "you" || ws[j+1] == "was" || ws[j+1] == "i") {
			return true
		}
	}
	// Passive: the previous instructions are void / no longer apply /
	// should be ignored.
	for o := range ws {
		if !strongObjects[ws[o]] && !weakObjects[ws[o]] {
			continue
		}
		qualified := false
		for q := max(0, o-3); q < o; q++ {
			if timeQualifiers[ws[q]] || ws[q] == "your" || ws[q] == "all" && strongObjects[ws[o]] {
				qualified = true
			}
		}
		if !qualified {
			continue
		}
		for k := o + 1; k < min(len(ws), o+6); k++ {
			if voidWords[ws[k]] || ws[k] == "longer" && k+1 < len(ws) && (ws[k+1] == "apply" || ws[k+1] == "applies" || ws[k+1] == "valid" || ws[k+1] == "matter") ||
				(ws[k] == "be" || ws[k] == "are" || ws[k] == "is") && k+1 < len(ws) && dismissVerbs[ws[k+1]] {
				return true
			}
		}
	}
	return false
}

// dismissAt is the length of the dismissal at ws[i] (0: none).
func dismissAt(ws []string, i int) int {
	if dismissVerbs[ws[i]] {
		return 1
	}
	for _, p := range dismissPhrases {
		if i+len(p) <= len(ws) {
			ok := true
			for k, w := range p {
				if ws[i+k] != w {
					ok = false
					break
				}
			}
			if ok {
				return len(p)
			}
		}
	}
	return 0
}

var (
	// Chat-template role markers, anywhere; a role name with a colon at
	// the start of a line or sentence.
	roleMarkers = []*gated{
		gate(`<\|[a-z_ ]{2,30}\|>`, "<|"),
		gate(`\[/?inst\]|<</?sys>>`, "inst]", "sys>>"),
		gate(`</?(?:system|assistant|im_start|im_end|developer|sys)>`, "system>", "assistant>", "im_start>", "im_end>", "developer>", "sys>"),
		gate(`(?:^|[\n.!?;>]\s*)(?:#{1,4}\s*)?(?:system|assistant|developer|human|chatgpt|claude|gpt|system prompt|system message)(?:\s*[(\[][a-z ]{0,20}[)\]])?\s*:`,
			"system", "assistant", "developer", "human", "chatgpt", "claude", "gpt"),
		gate(`(?:^|[\n.!?;>]\s*)#{1,4}\s*(?:instruction|instructions|response|input|user|prompt)\s*:`, "#"),
		gate(`(?:^|[\n.!?;>\[(]\s*)(?:system|admin|administrator|developer|priority|security|root|urgent|important)\s+(?:override|instructions?|directive|command|prompt)s?\s*[:\])]`,
			"override", "instruction", "directive", "command", "prompt"),
	}
	// A new identity or mode for the reader.
	roles = []*gated{
		gate(`\byou(?: are|'re| r) now (?:an? |the |my |dan\b|free\b|unrestricted|jailbroken|called|named|known as|acting|going to|allowed|permitted|in (?:developer|dan|god|unrestricted)|no longer)`, " now "),
		gate(`\byou(?: are|'re) no longer (?:bound|restricted|limited|an? (?:ai|assistant|language model)|required to follow|subject to)`, "no longer"),
		gate(`\bfrom (?:now|this point|here) on,? (?:you (?:are|will be|must ignore|will ignore|answer|respond|act)|act|behave|respond|answer|ignore)\b`, " on"),
		gate(`\bhenceforth,? you (?:are|will|must)\b`, "henceforth"),
		gate(`\byour (?:new|real|true|actual|only|updated) (?:role|task|instructions?|goal|objective|purpose|identity|persona|directive|orders?|prompt)\b`, "your "),
		gate(`\b(?:new|updated|revised|real|actual|secret|hidden|override) (?:system )?(?:instructions?|prompt|directives?|orders)\s*:`, "instruction", "prompt", "directive", "orders"),
		gate(`(?:^|[.!?:;]\s*|\b(?:you|please|now)\s+)(?:act|behave|respond|answer) (?:as|like) (?:an? |the |if you )`, " as ", " like "),
		gate(`(?:^|[.!?:;]\s*|\b(?:you|please|now|must)\s+)(?:pretend|imagine) (?:to be|you are|you're|that you are)\b`, "pretend", "imagine"),
		gate(`\brole-?play as\b|\bplay the role of\b`, "play"),
		gate(`\b(?:developer|dan|god|jailbreak|unrestricted|unfiltered) mode\b|\bdo anything now\b`, " mode", "anything now"),
		gate(`\bi am your (?:developer|creator|admin|administrator|owner|operator|master)\b`, "i am your"),
		gate(`\byour (?:instructions|rules|prompt|directives|guidelines|orders|task) (?:have|has) (?:changed|been (?:changed|updated|replaced|revoked|overridden|lifted))`, "your "),
	}
	// A request for the reader's own prompt or instructions.
	exfilRe = gate(`\b(?:reveal|print|show|output|repeat|display|leak|dump|disclose|share|echo|tell (?:me|us)|send|post|exfiltrate)\b(?: [a-z]+){0,3} (?:your|the) (?:system|initial|hidden|original|full|secret|internal|developer) (?:prompt|instructions|message|rules)\b|`+
		`\b(?:reveal|print|show|output|repeat|display|leak|dump|disclose|tell (?:me|us)|send|post|exfiltrate)\b(?: [a-z]+){0,2} your (?:prompt|instructions|rules|guidelines|configuration)\b`, "prompt", "instructions", "message", "rules", "guidelines", "configuration")
)

var (
	htmlCommentRe = regexp.MustCompile(`<!--\s*([^-]|-[^-])*?(?:-->|$)`)
	hideStyleRe   = regexp.MustCompile(`display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0*\.?0+(?:px|pt|em|rem|%|vw|vh)?\s*(?:[;"'}!]|$)|` +
		`opacity\s*:\s*0*\.?0+\s*(?:[;"'}!]|$)|(?:^|[;"'{\s])(?:max-)?(?:height|width)\s*:\s*0(?:px)?\s*(?:[;"'}!]|$)|text-indent\s*:\s*-\d{3,}|` +
		`(?:left|top)\s*:\s*-\d{4,}|color\s*:\s*(?:transparent|white|#fff(?:fff)?\b|rgba\([^)]*,\s*0\s*\))|clip\s*:\s*rect\(\s*0|font-size\s*:\s*1px`)
	hiddenAttrRe = regexp.MustCompile(`<[a-z][a-z0-9-]*\b[^>]*\s(?:hidden|aria-hidden\s*=\s*["']?true)\b|<(?:noscript|template)\b`)
	// Tool directives written as HTML comments: not hidden prose.
	commentDirectiveRe = regexp.MustCompile(`^(?:prettier-ignore(?:-start|-end)?|eslint-[a-z-]+|markdownlint-[a-z-]+|textlint-[a-z-]+|cspell:|vale |toc|/?toc|more|truncate|omit|#?(?:end)?region|(?:begin|end|start|stop)[ _:-]?[a-z0-9_-]*|include|snippet|lint-|alex |remark-|doctoc|all-contributors|section|split|break|pagebreak|nolint|todo\b|fixme\b)`)
	mdCommentRe        = regexp.MustCompile(`\[(?://|comment|hidden|_)\]:\s*[#<]`)
)

// hiddenMarkup reports markup that hides text from a human reader: an HTML
// comment holding prose (3 words or more; tool directives such as
// "prettier-ignore" pass), CSS that hides an element inside markup, hidden
// attributes, markdown comments.
func hiddenMarkup(n string) bool {
	if strings.Contains(n, "<!--") {
		for _, m := range htmlCommentRe.FindAllString(n, -1) {
			body := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(m, "<!--"), "-->"))
			if body == "" {
				continue
			}
			if len(strings.Fields(body)) >= 3 || !commentDirectiveRe.MatchString(body) {
				return true
			}
		}
	}
	if strings.Contains(n, "<") && (strings.Contains(n, "style") || strings.Contains(n, "{")) && hideStyleRe.MatchString(n) {
		return true
	}
	if strings.Contains(n, "<") && hiddenAttrRe.MatchString(n) {
		return true
	}
	return strings.Contains(n, "]:") && mdCommentRe.MatchString(n)
}
