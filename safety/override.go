package safety

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// The instruction-override grammar (see Instruction): its vocabulary and
// the walk over the words of a text.

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
		"nullify", "supersede", "disobey", "unlearn", "ditch", "scrap", "drop", "wipe", "erase", "reset",
		// Other languages: French, Spanish, Portuguese, Italian, German,
		// Dutch, Russian.
		"ignorez", "ignorer", "oublie", "oubliez", "ignora", "ignorar", "ignore", "olvida", "olvide", "olvidar",
		"esquece", "esqueça", "dimentica", "ignoriere", "ignoriert", "ignorieren", "vergiss", "vergesst", "vergessen",
		"negeer", "negeren", "vergeet", "vergeten",
		"игнорируй", "игнорируйте", "проигнорируй", "проигнорируйте", "забудь", "забудьте", "игнорировать")
	// clearVerbs dismiss a model's input only with a strong object or
	// "your" (see override).
	clearVerbs = set("wipe", "erase", "reset")
	// Multi-word dismissals, as word sequences.
	dismissPhrases = [][]string{{"set", "aside"}, {"pay", "no", "attention", "to"}, {"stop", "following"},
		{"do", "not", "follow"}, {"don", "t", "follow"}, {"dont", "follow"}, {"no", "longer", "follow"},
		{"no", "longer", "have", "to", "follow"}, {"no", "longer", "need", "to", "follow"}, {"do", "not", "have", "to", "follow"},
		{"don", "t", "have", "to", "follow"}, {"do", "not", "need", "to", "follow"}, {"don", "t", "need", "to", "follow"},
		{"need", "not", "follow"}, {"no", "longer", "have", "to", "obey"}, {"do", "not", "have", "to", "obey"},
		{"stop", "obeying"}, {"do", "not", "obey"}, {"don", "t", "obey"}, {"throw", "out"}, {"move", "past"},
		{"break", "free", "of"}, {"free", "yourself", "from"}, {"get", "rid", "of"},
		{"pay", "no", "heed", "to"}, {"pay", "no", "mind", "to"}, {"take", "no", "notice", "of"},
		{"don", "t", "pay", "attention", "to"}, {"dont", "pay", "attention", "to"}, {"do", "not", "pay", "attention", "to"},
		// Concessives: "regardless of your previous instructions, push".
		{"regardless", "of"}, {"irrespective", "of"}, {"in", "spite", "of"}, {"despite"}, {"notwithstanding"},
		{"no", "matter", "what"}, {"whatever"},
		{"не", "обращай", "внимания", "на"}, {"не", "обращайте", "внимания", "на"},
		{"haz", "caso", "omiso", "de"}, {"haga", "caso", "omiso", "de"}, {"no", "hagas", "caso", "a"}, {"no", "hagas", "caso", "de"},
		{"fais", "abstraction", "de"}, {"ne", "tiens", "pas", "compte", "des"}, {"ne", "tenez", "pas", "compte", "des"},
		{"non", "seguire"}, {"não", "siga"}, {"houd", "geen", "rekening", "met"}}
	// A statement that this text replaces what came before ("this lesson
	// supersedes all previous instructions"): third-person verbs, after
	// a subject naming the text.
	supersedeVerbs = set("supersedes", "overrides", "overrules", "replaces", "cancels", "invalidates", "voids",
		"nullifies", "trumps", "outranks", "revokes", "annuls")
	supersedePhrases = [][]string{{"takes", "precedence", "over"}, {"take", "precedence", "over"},
		{"takes", "priority", "over"}, {"has", "priority", "over"}, {"wins", "over"},
		{"higher", "priority", "than"}, {"more", "important", "than"}, {"precedence", "over"}, {"priority", "over"},
		{"above", "your"}}
	textSubjects = set("this", "these", "following", "lesson", "note", "message", "text", "entry", "memo")
	// Roles whose messages are a model's input: "the developer message"
	// ("system prompt" and "system instructions" are strong objects anyway).
	roleQualifiers = set("developer", "operator") // not "system": "ignore system messages from journald"
	timeQualifiers = set("previous", "previously", "prior", "above", "earlier", "preceding", "foregoing",
		"former", "original", "initial", "old", "past", "before", "aforementioned", "preexisting", "existing",
		"given", "provided", "first",
		"précédentes", "precedentes", "précédente", "antérieures", "anteriores", "anterior", "previas", "precedentes",
		"precedenti", "vorherigen", "vorherige", "bisherigen", "obigen", "toutes", "todas", "todos", "tutte", "alle",
		"vorige", "eerdere", "voorgaande", "bovenstaande",
		"предыдущие", "предыдущих", "прежние", "прошлые", "все", "вышеуказанные", "вышеизложенные")
	anyQualifiers = set("all", "any", "every", "each", "your", "these", "those", "the", "system", "developer",
		"hidden", "safety", "other", "my", "its", "their", "current", "operator")
	strongObjects = set("instruction", "instructions", "prompt", "prompts", "directive", "directives",
		"programming", "guardrail", "guardrails",
		"consignes", "instrucciones", "instruções", "instrucoes", "istruzioni", "anweisungen", "anweisung", "vorgaben",
		"instructies", "aanwijzingen", "инструкции", "инструкций", "указания", "указаний")
	weakObjects = set("rule", "rules", "guideline", "guidelines", "guidance", "constraint", "constraints",
		"command", "commands", "order", "orders", "context", "message", "messages", "policy", "policies",
		"restriction", "restrictions", "safeguard", "safeguards", "conversation", "text", "input", "inputs",
		"training", "task", "tasks", "directions", "direction", "requests", "request", "limitation", "limitations", "boundaries",
		"content", "lines", "says", "said", "told", "stated", "mentioned", "written",
		"regels", "reglas", "règles", "regeln", "regole", "правила")
	// A weak object is the object only when it heads its phrase: at a
	// clause end or before one of these ("the earlier rules and merge",
	// "the rules you were given"), not before a noun or a preposition
	// ("the old rules engine", "the first lines of the CSV").
	headFollowers = set("and", "then", "or", "but", "so", "now", "instead", "you", "that", "which", "i", "we",
		"given", "above", "before", "earlier", "here", "from", "completely", "entirely", "altogether", "please",
		"just", "no", "are", "is", "were", "was", "have", "has")
	// everything above / anything you were told.
	everything = set("everything", "anything", "all", "whatever", "alles", "tout", "todo", "tutto", "всё", "все")
	after      = set("above", "before", "prior", "previously", "earlier", "preceding", "so", "until", "you",
		"that", "this", "said", "told", "here", "up", "i",
		"was", "vorher", "zuvor", "bisher", "wat", "ce", "lo", "quello", "ciò", "что")
	// positional words of after that take an object of their own.
	positional  = set("above", "before", "prior", "preceding", "until", "up")
	pointsHere  = set("this", "that", "here", "it", "is", "are", "was", "were", "has", "have", "no", "now")
	standAlone  = set("above", "before", "previous", "previously", "prior", "earlier", "preceding", "foregoing", "aforementioned")
	filler      = set("the", "all", "of", "everything", "anything", "that", "what", "is", "was", "written", "said", "stated", "mentioned", "text", "you", "were", "told", "said")
	conjunction = set("and", "then", "instead", "now", "but", "just", "only", "completely", "entirely", "please", "you", "i", "from", "so", "to", "we")
	given       = set("given", "told", "provided", "received", "taught", "shown", "fed", "got", "gave", "trained", "programmed", "started", "began", "initialized", "loaded")
	voidWords   = set("void", "obsolete", "cancelled", "canceled", "revoked", "invalid", "null", "overridden",
		"superseded", "irrelevant", "outdated", "deprecated", "lifted", "suspended", "disabled", "removed",
		"rescinded", "withdrawn", "retracted", "annulled", "repealed", "voided", "nullified", "moot", "expired",
		"inapplicable", "invalidated", "cleared", "reset", "replaced", "wrong", "false", "incorrect", "fake", "untrue", "bogus", "lies")
)

// grammarVocab is every word of the grammar, for segment.
var grammarVocab = sync.OnceValue(func() map[string]bool {
	v := map[string]bool{}
	for _, m := range []map[string]bool{dismissVerbs, timeQualifiers, anyQualifiers, strongObjects, weakObjects,
		everything, after, standAlone, filler, conjunction, given, voidWords, supersedeVerbs, textSubjects, headFollowers} {
		for w := range m {
			v[w] = true
		}
	}
	for _, ps := range [][][]string{dismissPhrases, supersedePhrases} {
		for _, p := range ps {
			for _, w := range p {
				v[w] = true
			}
		}
	}
	for _, w := range []string{"no", "longer", "apply", "applies", "valid", "be", "are", "is", "a", "an", "me", "us"} {
		v[w] = true
	}
	return v
})

// maxVocabLen bounds the words segment tries (bytes).
const maxVocabLen = 32

// isObject reports that ws[o] is what a dismissal aims at: a strong
// object, or a weak one heading its phrase when the qualifier allows it.
func isObject(ws []string, stop []bool, o int, weakOK bool) bool {
	if strongObjects[ws[o]] {
		// not the first word of a thing's name: "reset the previous
		// instructions cache", "the prompt template"
		return stop[o] || o+1 == len(ws) || !thingNouns[ws[o+1]]
	}
	if !weakObjects[ws[o]] || !weakOK {
		return false
	}
	return stop[o] || o+1 == len(ws) || headFollowers[ws[o+1]]
}

// override applies the dismissal grammar to the words of a text (stop:
// the clause boundaries after each word).
func override(ws []string, stop []bool) bool {
	for i := range ws {
		// wipe, erase, reset: technical verbs first ("wipe the previous
		// context before each test"): a weak object needs "your", as after
		// a third-person verb.
		vlen, third := dismissAt(ws, i), clearVerbs[ws[i]]
		if vlen == 0 {
			if vlen = supersedeAt(ws, i); vlen == 0 {
				continue
			}
			third = true
		}
		j := i + vlen
		if !third {
			// forget everything above / ignore all that came before. A
			// position word must point at this text: "everything before
			// this", "everything above." — not "everything before the
			// first blank line".
			for k := j; k < min(len(ws), j+2); k++ {
				if everything[ws[k]] && k+1 < len(ws) && after[ws[k+1]] && (!positional[ws[k+1]] || pointsAtText(ws, stop, k+1)) &&
					(!relatives[ws[k+1]] || clauseFollows(ws, stop, k+1)) {
					return true
				}
			}
			// ignore the above / disregard everything before, and …: the
			// qualifier stands alone, at the end of its clause or before a
			// conjunction.
			for k := j; k < min(len(ws), j+3); k++ {
				if standAlone[ws[k]] && (stop[k] || conjunction[ws[k+1]]) {
					return true
				}
				if !filler[ws[k]] {
					break
				}
			}
		}
		// verb … qualifier … object. After a third-person verb ("this
		// lesson overrides …") a weak object needs "your".
		for q := j; q < min(len(ws), j+6); q++ {
			timeQ, anyQ := timeQualifiers[ws[q]], anyQualifiers[ws[q]]
			if !timeQ && !anyQ {
				continue
			}
			for o := q + 1; o < min(len(ws), q+5); o++ {
				your := ws[o-1] == "your" || ws[q] == "your" || readers(ws, stop, o)
				// the developer message, the operator's rules, the (or your)
				// system message: not "system messages from journald"
				role := roleQualifiers[ws[o-1]] || o >= 2 && ws[o-1] == "s" && roleQualifiers[ws[o-2]] ||
					o >= 2 && ws[o] == "message" && ws[o-1] == "system" && (ws[o-2] == "the" || ws[o-2] == "your")
				if ws[q] == "the" && strongObjects[ws[o]] && plainBetween(ws, q+1, o) && elsewhere(ws, stop, o) {
					continue // the (setup) instructions in the old INSTALL file
				}
				if isObject(ws, stop, o, (timeQ && !third) || your || role) {
					return true
				}
				if your && weakObjects[ws[o]] && guardModifiers[ws[o-1]] {
					return true // your safety guidelines for this task
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
		if !third && j+3 < len(ws) && (ws[j] == "what" || ws[j] == "whatever") && (ws[j+1] == "you" || ws[j+1] == "was" || ws[j+1] == "i") {
			return true
		}
		if !third && j < len(ws) && (ws[j] == "what" || ws[j] == "whatever") && saidBefore(ws, stop, j+1) {
			return true
		}
	}
	return passive(ws, stop)
}

// relatives open a clause after "all" / "everything" (all that came
// before); they are a determiner when a noun follows (all that noise).
var relatives = set("that", "this", "which", "what")

// clauseFollows reports that the relative at ws[r] opens a clause: it
// ends its own clause, or a verb or a subject follows it.
func clauseFollows(ws []string, stop []bool, r int) bool {
	return stop[r] || r+1 == len(ws) || clauseStarts[ws[r+1]]
}

var clauseStarts = set("came", "comes", "was", "were", "is", "are", "has", "have", "had", "you", "i", "we", "they",
	"precedes", "preceded", "appears", "appeared", "went", "goes", "follows", "existed", "exists", "said", "told")

// saidBefore reports, after "ignore what", words the reader was given:
// a speaker whose messages are its input and a verb of saying (what the
// user said, what the system prompt says), or a verb of saying and a
// time that points back (what the docs told you earlier), within the
// clause.
func saidBefore(ws []string, stop []bool, i int) bool {
	speaker := false
	for k := i; k < min(len(ws), i+5); k++ {
		switch {
		case inputSpeakers[ws[k]]:
			speaker = true
		case sayVerbs[ws[k]]:
			if speaker || k+1 < len(ws) && !stop[k] && standAlone[ws[k+1]] {
				return true
			}
		}
		if stop[k] {
			return false
		}
	}
	return false
}

var (
	inputSpeakers = set("user", "users", "system", "developer", "operator", "admin", "administrator", "prompt", "assistant", "model", "human")
	sayVerbs      = set("said", "says", "told", "tells", "wrote", "writes", "asked", "asks", "instructed", "instructs", "requested", "stated", "states")
)

// readers reports an object the words after it give to the reader: the
// constraints from your operator, the rules of your developer, the rules
// given by your developer.
func readers(ws []string, stop []bool, o int) bool {
	k := o + 1
	if !stop[o] && k < len(ws) && (given[ws[k]] || ws[k] == "set" || ws[k] == "written" || ws[k] == "laid") {
		if stop[k] {
			return false
		}
		k++
	}
	return !stop[o] && k+1 < len(ws) && (ws[k] == "from" || ws[k] == "of" || ws[k] == "by") && ws[k+1] == "your"
}

// documentPreps and readerInput tell where an object lies: "the
// instructions in the legacy INSTALL file" are a document's, "the
// instructions in your system prompt" the reader's.
var (
	documentPreps = set("in", "inside", "of", "for", "from", "on", "under", "within")
	readerInput   = set("your", "you", "this", "these", "above", "previous", "prior", "earlier", "system", "prompt", "prompts",
		"conversation", "chat", "context", "message", "messages", "lesson", "here", "session", "memory", "developer", "developers",
		"operator", "operators", "user", "users", "assistant", "model", "agent", "ai", "top", "beginning", "start", "first",
		"before", "window", "thread", "turn", "turns", "history")
)

// plainBetween reports that ws[i:j] holds no qualifier (the setup
// instructions; not the previous instructions, the developer prompt).
func plainBetween(ws []string, i, j int) bool {
	for _, w := range ws[i:j] {
		if timeQualifiers[w] || anyQualifiers[w] || roleQualifiers[w] || strongObjects[w] || weakObjects[w] {
			return false
		}
	}
	return true
}

// plainBetweenOK reports that ws[i:j] holds only qualifiers and words
// that make a weak object the reader's (safety, security, …).
func plainBetweenOK(ws []string, i, j int) bool {
	for _, w := range ws[i:j] {
		if !(timeQualifiers[w] || anyQualifiers[w] || roleQualifiers[w] || guardModifiers[w] || w == "of") {
			return false
		}
	}
	return true
}

// elsewhere reports an object placed, by the preposition after it, in
// something that is not the reader's input.
func elsewhere(ws []string, stop []bool, o int) bool {
	if stop[o] || o+2 >= len(ws) || !documentPreps[ws[o+1]] {
		return false
	}
	for k := o + 2; k < min(len(ws), o+6); k++ {
		if readerInput[ws[k]] {
			return false
		}
		if stop[k] {
			break
		}
	}
	return true
}

// guardModifiers make a weak object the reader's safeguards wherever it
// stands in its phrase: your safety guidelines, your content policy.
var guardModifiers = set("safety", "security", "content", "ethical", "ethics", "moderation", "usage", "refusal")

// sourcePreps name where something received came from.
var sourcePreps = set("from", "in", "with", "by", "via", "through", "at")

// pointsAtText reports that the position word ws[p] ends its clause or
// points at this text (before this, up to now, above and …).
func pointsAtText(ws []string, stop []bool, p int) bool {
	if stop[p] {
		return true
	}
	n := p + 1
	if ws[n] == "to" && n+1 < len(ws) {
		n++
	}
	return pointsHere[ws[n]] || conjunction[ws[n]]
}

// passive finds the passive form: the previous instructions are void / no
// longer apply / should be ignored; everything you read before this is
// obsolete; the rules from your operator no longer apply.
func passive(ws []string, stop []bool) bool {
	for o := range ws {
		obj := strongObjects[ws[o]] || weakObjects[ws[o]]
		if !obj && !everything[ws[o]] {
			continue
		}
		if obj && elsewhere(ws, stop, o) {
			continue // the earlier guidance on Node 16 is void
		}
		if strongObjects[ws[o]] && !stop[o] && o+1 < len(ws) && thingNouns[ws[o+1]] {
			continue // the assistant's instructions file is outdated
		}
		end := -1 // the last word of the qualified subject
		// the system prompt / the developer message is outdated: a role
		// names whose input it is (for a weak object, a role other than
		// "system": not "system messages from journald"), when the object
		// heads its phrase
		if o >= 1 && (strongObjects[ws[o]] && ws[o-1] == "system" || roleQualifiers[ws[o-1]]) &&
			(stop[o] || o+1 == len(ws) || headFollowers[ws[o+1]]) {
			end = o
		}
		for q := max(0, o-3); q < o && obj; q++ {
			// A weak object named by a plain noun after its qualifier is
			// a thing of its own: "the earlier caching rules".
			named := weakObjects[ws[o]] && !strongObjects[ws[o]] && !plainBetweenOK(ws, q+1, o)
			if (timeQualifiers[ws[q]] || ws[q] == "your" || ws[q] == "all" && strongObjects[ws[o]] ||
				strongObjects[ws[o]] && readerPossessive(ws, q)) && !named {
				end = o
			}
		}
		// Qualified after the object: the rules from your operator,
		// everything above, everything you read before this lesson (not
		// "everything before v2": the qualifier points at this text).
		for q := o + 1; q < min(len(ws), o+6) && end < 0; q++ {
			switch {
			case obj && q < o+4 && ws[q] == "your" && (ws[q-1] == "from" || ws[q-1] == "of" || ws[q-1] == "by"):
				end = q + 1
			case obj && q == o+2 && ws[q] == "the" && q+1 < len(ws) && roleSources[ws[q+1]] && (ws[q-1] == "from" || ws[q-1] == "of" || ws[q-1] == "by"):
				// the instructions from the system are cancelled
				end = q + 2
			case obj && q == o+1 && standAlone[ws[q]] && (stop[q] || q+1 == len(ws) || pointsHere[ws[q+1]]):
				// the instructions above are no longer valid; not "the
				// rules before v2 are void" (a position of its own)
				end = q + 1
			case obj && q == o+2 && (ws[o+1] == "you" || ws[o+1] == "i" || ws[o+1] == "we") && given[ws[q]] && !stop[q] &&
				q+1 < len(ws) && !sourcePreps[ws[q+1]]:
				// the instructions you received (before) are …; not "the
				// instructions you got from the vendor"
				end = q + 1
			case !obj && ws[o] != "all" && standAlone[ws[q]] && (q == o+1 || ws[o+1] == "you" || ws[o+1] == "i" || ws[o+1] == "we") &&
				(q+1 == len(ws) || pointsHere[ws[q+1]]):
				end = q + 1
				if q+1 < len(ws) && (ws[q+1] == "this" || ws[q+1] == "that") {
					end = q + 3 // before this lesson
				}
			}
		}
		if end < 0 {
			continue
		}
		// none of your prior instructions matter (any more)
		if negatedSubject(ws, o) {
			for k := end; k < min(len(ws), end+3); k++ {
				if holdVerbs[ws[k]] {
					return true
				}
			}
		}
		for k := end; k < min(len(ws), end+6); k++ {
			// … were (just) a test / a joke
			if (ws[k] == "a" || ws[k] == "an") && k > 0 && k+1 < len(ws) && fakeNouns[ws[k+1]] &&
				(ws[k-1] == "was" || ws[k-1] == "were" || ws[k-1] == "is" || ws[k-1] == "are" || ws[k-1] == "just" || ws[k-1] == "only") {
				return true
			}
			// … do not apply / never existed
			if (ws[k] == "not" || ws[k] == "t" || ws[k] == "never") && k+1 < len(ws) && (holdVerbs[ws[k+1]] || existVerbs[ws[k+1]]) {
				return true
			}
			if voidWords[ws[k]] || ws[k] == "longer" && k+1 < len(ws) && (ws[k+1] == "apply" || ws[k+1] == "applies" || ws[k+1] == "valid" || ws[k+1] == "matter") ||
				(ws[k] == "be" || ws[k] == "are" || ws[k] == "is") && k+1 < len(ws) && dismissVerbs[ws[k+1]] {
				return true
			}
		}
	}
	return false
}

// readerPossessive reports a possessive at ws[q] whose owner is a model
// named just before it: "tell the agent that its instructions were
// revoked", "the assistant's prompt is void" (not "the library's
// instructions are outdated").
func readerPossessive(ws []string, q int) bool {
	switch {
	case ws[q] == "its" || ws[q] == "their":
		for k := max(0, q-6); k < q; k++ {
			if readerNouns[ws[k]] {
				return true
			}
		}
	case ws[q] == "s" && q >= 1:
		return readerNouns[ws[q-1]]
	}
	return false
}

var readerNouns = set("agent", "agents", "assistant", "assistants", "model", "models", "ai", "llm", "llms", "bot", "bots",
	"chatbot", "copilot", "claude", "gpt", "chatgpt", "gemini")

// thingNouns name a thing of their own after an object's word: the
// instructions cache, the prompt template, the directive parser.
var thingNouns = func() map[string]bool {
	m := set("file", "files", "page", "pages", "doc", "docs", "folder", "directory", "repo", "builder", "parser",
		"loader", "library", "package", "module", "field", "column", "schema", "type", "struct", "class", "function",
		"length", "size", "count", "id", "ids", "version", "versions", "editor", "linter", "test", "tests")
	for _, s := range []map[string]bool{componentNouns, configNouns, tokenNouns} {
		for w := range s {
			m[w] = true
		}
	}
	return m
}()

// negatedSubject reports a subject the words before it deny: "none of
// your prior instructions", "no previous rules".
func negatedSubject(ws []string, o int) bool {
	for k := max(0, o-4); k < o; k++ {
		if ws[k] == "none" || ws[k] == "no" {
			return true
		}
	}
	return false
}

var (
	// holdVerbs: what a denied subject no longer does (none of them apply).
	holdVerbs = set("matter", "matters", "apply", "applies", "count", "counts", "stand", "stands", "hold", "holds", "remain", "remains", "bind", "binds")
	// fakeNouns: what a void subject was (the rules above were a test).
	fakeNouns = set("test", "joke", "drill", "trick", "prank", "decoy")
	// existVerbs: what a denied subject never did (never existed).
	existVerbs = set("existed", "exist", "happened", "mattered", "applied", "counted")
	// roleSources whose messages are a model's input: the instructions
	// from the system, of the developer.
	roleSources = set("system", "developer", "developers", "operator", "operators")
)

// dismissAt is the length of the dismissal at ws[i] (0: none).
func dismissAt(ws []string, i int) int {
	if dismissVerbs[ws[i]] {
		return 1
	}
	return phraseAt(ws, i, &dismissPhrases)
}

// supersedeAt is the length of a third-person dismissal at ws[i] whose
// subject, within the 3 words before, names the text itself (0: none).
func supersedeAt(ws []string, i int) int {
	n := 0
	if supersedeVerbs[ws[i]] {
		n = 1
	} else if n = phraseAt(ws, i, &supersedePhrases); n == 0 {
		return 0
	}
	for k := max(0, i-3); k < i; k++ {
		if textSubjects[ws[k]] {
			return n
		}
	}
	return 0
}

// phrasesByFirst indexes each phrase list by its first word.
var phrasesByFirst = sync.OnceValue(func() map[*[][]string]map[string][][]string {
	out := map[*[][]string]map[string][][]string{}
	for _, ps := range []*[][]string{&dismissPhrases, &supersedePhrases} {
		m := map[string][][]string{}
		for _, p := range *ps {
			m[p[0]] = append(m[p[0]], p)
		}
		out[ps] = m
	}
	return out
})

func phraseAt(ws []string, i int, phrases *[][]string) int {
	for _, p := range phrasesByFirst()[phrases][ws[i]] {
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

// CJK scripts do not separate words: the same grammar, on substrings. A
// dismissal, a qualifier and an object within a short span.
var (
	cjkDismiss = []string{"忽略", "无视", "無視", "忽視", "忘记", "忘記", "忘掉", "不要理会", "不要理會", "不要遵守", "不必遵守",
		"無視して", "忘れて", "무시", "잊어"}
	cjkQualifier = []string{"之前", "以前", "先前", "上面", "上述", "前面", "所有", "全部", "以上", "これまで", "前の", "すべて", "全て",
		"이전", "모든", "위의", "앞의"}
	cjkObject = []string{"指令", "指示", "提示词", "提示詞", "说明", "說明", "规则", "規則", "命令", "プロンプト", "ルール",
		"지시", "지침", "명령", "규칙", "프롬프트"}
)

// cjkOverride reports a dismissal, a qualifier and an object, in any
// order, within 24 characters of one another.
func cjkOverride(n string) bool {
	if isASCII(n) {
		return false
	}
	for _, d := range cjkDismiss {
		for off := 0; ; {
			i := strings.Index(n[off:], d)
			if i < 0 {
				break
			}
			i += off
			lo, hi := runeBack(n, i, 24), runeFwd(n, i+len(d), 24)
			w := n[lo:hi]
			if containsAny(w, cjkQualifier) && containsAny(w, cjkObject) {
				return true
			}
			off = i + len(d)
		}
	}
	return false
}

func runeBack(s string, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return i
}

func runeFwd(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
