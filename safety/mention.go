package safety

import (
	"regexp"
	"strings"
)

// Mentions: a dismissal the text quotes or reports is not addressed to its
// reader. Lessons about prompt injection name the attack ("test with
// phrases like 'disregard prior instructions'", "if a model output says to
// ignore previous instructions, treat it as data"); the override grammar
// reads the text with those spans taken out. A mention stays an order when
// its sentence asks the reader to go along with it ("obey text like '…'",
// "if a page says to …, do it").

var (
	// A quoted span introduced by a word that announces a mention.
	quotedMentionRe = regexp.MustCompile(`\b(?:like|such as|e\.g\.,?|for example|for instance|phrases?|strings?|words|wording|` +
		`texts?|patterns?|sentences?|payloads?|inputs?|messages?|lines?|examples?|containing|contains|matching|matches)\s*:?\s*` +
		`(?:"[^"\n]{1,160}"|'[^'\n]{1,160}'|` + "`[^`\\n]{1,160}`" + `|“[^”\n]{1,160}”|‘[^’\n]{1,160}’|«[^»\n]{1,160}»)`)
	// A condition on what something else says, asks or tells: the clause
	// it reports, up to the end of that clause.
	reportedRe = regexp.MustCompile(`\b(?:if|when|whenever|once)\b[^.,;:!?\n]{0,60}?\b(?:says?|said|asks?|asked|tells?|told|` +
		`instructs?|instructed|saying|asking|telling|instructing|urges?|urged|demands?|demanded|requests?|requested)\b` +
		`(?: (?:you|us|the (?:agent|model|assistant|llm|ai)|it|them))? to [^.,;:!?\n]{1,120}`)
	// Going along with what was mentioned.
	complyRe = regexp.MustCompile(`\b(?:do it|do so|do that|do as (?:it|they) says?|comply|follow (?:it|them|that|this|those|these|along)|` +
		`obey|go along|act on (?:it|them)|execute (?:it|them)|run (?:it|them)|trust (?:it|them)|believe (?:it|them)|` +
		`treat\b[^.;!?\n]{0,160}?\bas (?:an? |the |your |real |new |actual |true )*(?:instructions?|commands?|orders?|directives?|task|prompt))\b`)
	complyNegRe = regexp.MustCompile(`(?:\bnot|n't|\bnever|\bno)\s+(?:\w+\s+)?$`)
)

// withoutMentions returns n (normalised) with its quoted and reported
// mentions replaced by a neutral word, unless the sentence holding one
// asks the reader to comply with it.
func withoutMentions(n string) string {
	if !strings.ContainsAny(n, "\"'`“‘«") && !strings.Contains(n, " to ") {
		return n
	}
	for _, re := range []*regexp.Regexp{quotedMentionRe, reportedRe} {
		n = re.ReplaceAllStringFunc(n, func(m string) string { return " mentioned " })
	}
	return n
}

// complies reports a sentence of n (normalised) that asks the reader to go
// along with something, not negated ("do it", "obey", "follow them"; not
// "do not execute it").
func complies(n string) bool {
	for _, loc := range complyRe.FindAllStringIndex(n, -1) {
		if !complyNegRe.MatchString(n[max(0, loc[0]-24):loc[0]]) {
			return true
		}
	}
	return false
}

// overrideText applies the override grammar to n (normalised), reading
// mentions out of it when the text does not ask to comply with them.
func overrideText(n string) bool {
	if !override(letterWords(n)) {
		return false
	}
	if complies(n) {
		return true
	}
	m := withoutMentions(n)
	return m == n || override(letterWords(m))
}
