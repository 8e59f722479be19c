package learning

import (
	"strings"

	"github.com/loredev/lore/projector/promptline"
)

// Stored pattern contents enter every block below through promptline.Line:
// one line each, never starting a heading, fence or role.

// FormatAntiPatternsForPrompt is formatAntiPatternsForPrompt: the contents
// of kind anti_pattern (is_negative ignored), one safe line each.
func FormatAntiPatternsForPrompt(patterns []Pattern) string {
	var lines []string
	for _, p := range patterns {
		if p.Kind == KindAntiPattern {
			lines = append(lines, "- "+promptline.Line(p.Content))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "## Anti-Patterns to Avoid\n\nBased on past failures, avoid these decomposition strategies:\n\n" +
		strings.Join(lines, "\n") + "\n"
}

// FormatSuccessfulPatternsForPrompt is formatSuccessfulPatternsForPrompt:
// patterns (not anti-patterns) with at least 2 observations and a success
// rate ≥ minSuccessRate.
func FormatSuccessfulPatternsForPrompt(patterns []Pattern, minSuccessRate float64) string {
	var lines []string
	for _, p := range patterns {
		if p.Kind == KindAntiPattern {
			continue
		}
		total := p.SuccessCount + p.FailureCount
		if total < 2 {
			continue
		}
		rate := float64(p.SuccessCount) / float64(total)
		if rate < minSuccessRate {
			continue
		}
		lines = append(lines, "- "+promptline.Line(p.Content)+" ("+jsNum(jsRound(rate*100))+"% success rate)")
	}
	if len(lines) == 0 {
		return ""
	}
	return "## Successful Patterns\n\nThese decomposition strategies have worked well in the past:\n\n" +
		strings.Join(lines, "\n") + "\n"
}

// FormatMaturityForPrompt is formatMaturityForPrompt, on raw counts.
func FormatMaturityForPrompt(m Maturity) string {
	total := m.HelpfulCount + m.HarmfulCount
	n := jsNum(float64(total))
	pct := func(c int) string { return jsNum(jsRound(float64(c) / float64(total) * 100)) }
	if total < 3 {
		if total == 1 {
			return "[LIMITED DATA - 1 observation]"
		}
		return "[LIMITED DATA - " + n + " observations]"
	}
	switch m.State {
	case Candidate:
		return "[CANDIDATE - " + n + " observations, needs more data]"
	case Established:
		return "[ESTABLISHED - " + pct(m.HelpfulCount) + "% helpful, " + pct(m.HarmfulCount) + "% harmful from " + n + " observations]"
	case Proven:
		return "[PROVEN - " + pct(m.HelpfulCount) + "% helpful from " + n + " observations]"
	case Deprecated:
		return "[DEPRECATED - " + pct(m.HarmfulCount) + "% harmful, avoid using]"
	}
	return ""
}

// ContentMaturity pairs a pattern's content with its maturity (an entry of
// the reference's Map<content, maturity>, in insertion order).
type ContentMaturity struct {
	Content  string
	Maturity Maturity
	// Note follows the label when set (the evidence policy's evidence).
	Note string
}

// FormatPatternsWithMaturityForPrompt is formatPatternsWithMaturityForPrompt:
// sections Proven, Established, Candidate, Deprecated (empty ones left
// out), joined by a blank line, no trailing newline; empty input → "".
func FormatPatternsWithMaturityForPrompt(patterns []ContentMaturity) string {
	sections := []struct {
		state  MaturityState
		header string
	}{
		{Proven, "## Proven Patterns\n\nThese patterns consistently work well:\n\n"},
		{Established, "## Established Patterns\n\nThese patterns have track records:\n\n"},
		{Candidate, "## Candidate Patterns\n\nThese patterns need more validation:\n\n"},
		{Deprecated, "## Deprecated Patterns\n\nAVOID these patterns - they have poor track records:\n\n"},
	}
	var out []string
	for _, s := range sections {
		var lines []string
		for _, p := range patterns {
			if p.Maturity.State == s.state {
				line := "- " + promptline.Line(p.Content) + " " + FormatMaturityForPrompt(p.Maturity)
				if p.Note != "" {
					line += " (" + promptline.Line(p.Note) + ")"
				}
				lines = append(lines, line)
			}
		}
		if len(lines) > 0 {
			out = append(out, s.header+strings.Join(lines, "\n"))
		}
	}
	return strings.Join(out, "\n\n")
}
