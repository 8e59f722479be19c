package crossloop

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/loredev/lore/projector/promptline"
)

// Pct is a rate as a whole percentage, halves up ("94" for 0.9444).
func Pct(rate float64) int { return int(math.Floor(rate*100 + 0.5)) }

func uses(n int) string {
	if n == 1 {
		return "1 use"
	}
	return fmt.Sprintf("%d uses", n)
}

// FormatInjection renders the seed's "Cross-Loop Learning Context": the
// ranked patterns grouped by type (error, success, anti-patterns, code
// templates), each group in rank order. Empty when nothing is injected.
func FormatInjection(rs []Ranked) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Cross-Loop Learning Context\n\nPatterns from previous loops that may help with this task:\n")
	groups := []struct{ typ, head string }{
		{TypeError, "Error Patterns"}, {TypeSuccess, "Success Patterns"},
		{TypeAnti, "Anti-Patterns to Avoid"}, {TypeTemplate, "Code Templates"}}
	for _, g := range groups {
		n := 0
		for _, r := range rs {
			p := r.Pattern
			if p.Type != g.typ {
				continue
			}
			if n == 0 {
				fmt.Fprintf(&b, "\n### %s\n\n", g.head)
			}
			n++
			writeItem(&b, n, p)
		}
	}
	return b.String()
}

// writeItem writes one pattern. Every stored text is one safe line
// (promptline.Line) after the format's own prefix; a code template is
// quoted line by line ("| "), so it can close no fence and open nothing.
func writeItem(b *strings.Builder, n int, p *Pattern) {
	q := promptline.Line
	switch p.Type {
	case TypeError:
		fmt.Fprintf(b, "%d. **%s** (%d%% success, %s)\n", n, q(p.Title), Pct(p.SuccessRate), uses(p.UsageCount))
		fmt.Fprintf(b, "   - Error: %q\n", q(p.ErrorPattern))
		fmt.Fprintf(b, "   - Fix: %s\n", q(p.FixDescription))
		writeTemplate(b, p)
		fmt.Fprintf(b, "   - Source: %s\n", q(sourceLine(p, "previous loops")))
	case TypeSuccess:
		fmt.Fprintf(b, "%d. **%s** (%d%% success, avg %.1f iterations)\n", n, q(p.Title), Pct(p.SuccessRate), p.AverageIterations())
		b.WriteString("   - Steps:\n")
		for i, s := range p.Steps {
			fmt.Fprintf(b, "     %d. %s\n", i+1, q(s))
		}
		fmt.Fprintf(b, "   - Source: %s\n", q(sourceLine(p, "successful loops")))
	case TypeAnti:
		fmt.Fprintf(b, "%d. **%s** (%d%% failure rate)\n", n, q(p.Title), Pct(p.FailureRate()))
		fmt.Fprintf(b, "   - %s\n", q(p.Approach))
		if p.WhyItFails != "" {
			fmt.Fprintf(b, "   - Why it fails: %s\n", q(p.WhyItFails))
		}
		switch {
		case p.BetterPatternID != "":
			fmt.Fprintf(b, "   - Better alternative: %s\n", q(p.BetterPatternID))
		case p.BetterAlternative != "":
			fmt.Fprintf(b, "   - Better alternative: %s\n", q(p.BetterAlternative))
		}
	case TypeTemplate:
		fmt.Fprintf(b, "%d. **%s** (%d%% success, %s)\n", n, q(p.Title), Pct(p.SuccessRate), uses(p.UsageCount))
		if p.UseCase != "" {
			fmt.Fprintf(b, "   - Use: %s\n", q(p.UseCase))
		}
		writeTemplate(b, p)
	}
	b.WriteString("\n")
}

// writeTemplate writes a code template as quoted lines under a header
// naming its language.
func writeTemplate(b *strings.Builder, p *Pattern) {
	lines := promptline.Lines(p.CodeTemplate, "     | ")
	if len(lines) == 0 {
		return
	}
	b.WriteString("   - Template")
	if lang := promptline.Line(p.Language); lang != "" {
		b.WriteString(" (" + lang + ")")
	}
	b.WriteString(":\n")
	for _, ln := range lines {
		b.WriteString(ln + "\n")
	}
}

func sourceLine(p *Pattern, plural string) string {
	if len(p.SourceLoops) == 1 {
		return p.SourceLoops[0].LoopID
	}
	return fmt.Sprintf("%d %s", len(p.SourceLoops), plural)
}

// TypeName is the display name of a type.
func TypeName(t string) string {
	switch t {
	case TypeError:
		return "Error Pattern"
	case TypeSuccess:
		return "Success Pattern"
	case TypeAnti:
		return "Anti-Pattern"
	case TypeTemplate:
		return "Code Template"
	}
	return t
}

// FormatShow renders `patterns show` in the seed's layout. impact is the
// average iteration difference of the loops that applied it against their
// baselines (nil: unknown).
func FormatShow(p *Pattern, impact *float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pattern: %s\nType: %s\n", p.ID, TypeName(p.Type))
	fmt.Fprintf(&b, "Created: %s\nLast Used: %s\n", rfcOrUnknown(p.FirstDiscovered), rfcOrUnknown(p.LastUsed))
	if p.Archived {
		fmt.Fprintf(&b, "Archived: %s (%s)\n", p.ArchiveMonth, p.ArchiveReason)
	}
	b.WriteString("\nEffectiveness:\n")
	if p.Type == TypeAnti {
		fmt.Fprintf(&b, "  Failure Rate: %d%% (%d/%d occurrences)\n", Pct(p.FailureRate()), p.Failed, p.Successful+p.Failed)
	} else {
		fmt.Fprintf(&b, "  Success Rate: %d%% (%d/%d applications)\n", Pct(p.SuccessRate), p.Successful, p.Successful+p.Failed)
	}
	fmt.Fprintf(&b, "  Usage Count: %d\n", p.UsageCount)
	if impact != nil {
		fmt.Fprintf(&b, "  Average Impact: %+.1f iterations\n", *impact)
	}
	state, _ := Maturity(p)
	fmt.Fprintf(&b, "  Maturity: %s\n", state)
	b.WriteString("\nSource Loops:\n")
	for _, s := range p.SourceLoops {
		fmt.Fprintf(&b, "  - %s (%s)\n", s.LoopID, lineageNote(p, s))
	}
	switch p.Type {
	case TypeError:
		fmt.Fprintf(&b, "\nError Signature:\n  Type: %s\n  Pattern: %q\n", p.ErrorType, p.ErrorPattern)
		fmt.Fprintf(&b, "\nFix Approach:\n  Category: %s\n  Description: %s\n", p.FixCategory, p.FixDescription)
		writeShowTemplate(&b, p)
	case TypeSuccess:
		fmt.Fprintf(&b, "\nApproach:\n  Category: %s\n  Average Iterations: %.1f\n  Steps:\n", p.Category, p.AverageIterations())
		for i, s := range p.Steps {
			fmt.Fprintf(&b, "    %d. %s\n", i+1, s)
		}
	case TypeAnti:
		fmt.Fprintf(&b, "\nAnti-Pattern:\n  Failure Mode: %s\n  Approach: %s\n", p.FailureMode, p.Approach)
		if p.BetterAlternative != "" {
			fmt.Fprintf(&b, "  Better Alternative: %s\n", p.BetterAlternative)
		}
	case TypeTemplate:
		b.WriteString("\nCode Template:\n")
		fmt.Fprintf(&b, "  Language: %s\n", p.Language)
		writeShowTemplate(&b, p)
	}
	if len(p.Tags) > 0 {
		fmt.Fprintf(&b, "\nTags: %s\n", strings.Join(p.Tags, ", "))
	}
	return b.String()
}

func writeShowTemplate(b *strings.Builder, p *Pattern) {
	if p.CodeTemplate == "" {
		return
	}
	b.WriteString("  Template: |\n")
	for _, ln := range strings.Split(strings.TrimRight(p.CodeTemplate, "\n"), "\n") {
		b.WriteString("    " + ln + "\n")
	}
}

func lineageNote(p *Pattern, s SourceLoop) string {
	switch s.Role {
	case RoleDiscovered:
		return "discovered"
	case RoleMerged:
		return "seen again"
	case RoleImported:
		return "imported"
	}
	if s.Success == (p.Type != TypeAnti) {
		if p.Type == TypeAnti {
			return "applied, failed again"
		}
		return "applied successfully"
	}
	if p.Type == TypeAnti {
		return "applied, worked"
	}
	return "applied, failed"
}

// FormatListLine is one line of `patterns list`.
func FormatListLine(p *Pattern) string {
	switch p.Type {
	case TypeSuccess:
		return fmt.Sprintf("%s (%d%% success, avg %.1f iter)", p.ID, Pct(p.SuccessRate), p.AverageIterations())
	case TypeAnti:
		return fmt.Sprintf("%s (%d%% failure)", p.ID, Pct(p.FailureRate()))
	}
	return fmt.Sprintf("%s (%d%% success, %s)", p.ID, Pct(p.SuccessRate), uses(p.UsageCount))
}

func rfc(t interface{ Format(string) string }) string { return t.Format("2006-01-02T15:04:05Z07:00") }

// rfcOrUnknown is rfc, or "unknown" for a time nobody stated (an imported
// file without any).
func rfcOrUnknown(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return rfc(t)
}

// FormatLoopState renders a loop's state in the seed's loop_state layout
// (YAML-like; texts as one line of quoted data).
func FormatLoopState(s *LoopState) string {
	var b strings.Builder
	state := s.Outcome
	if state == "" {
		state = "running"
	}
	fmt.Fprintf(&b, "loop_state:\n  loop_id: %s\n  task: %s\n  category: %s\n  state: %s\n  iterations: %d\n  started_at: %s\n",
		s.ID, promptline.Line(s.Task), promptline.Line(s.Category), state, s.Iterations, rfcOrUnknown(s.Started))
	if !s.Completed.IsZero() {
		fmt.Fprintf(&b, "  completed_at: %s\n", rfc(s.Completed))
	}
	b.WriteString("  cross_loop_learning:\n    injected_patterns:")
	if len(s.Injected) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, p := range s.Injected {
		fmt.Fprintf(&b, "      - pattern_id: %s\n        injected: %t\n        applied: %t\n", p.PatternID, p.Injected, p.Applied)
		if p.Applied {
			fmt.Fprintf(&b, "        successful: %t\n        iteration_used: %d\n", p.Successful, p.IterationUsed)
		}
	}
	b.WriteString("    extracted_patterns:")
	if len(s.Extracted) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, p := range s.Extracted {
		fmt.Fprintf(&b, "      - pattern_id: %s\n        new: %t\n        success_rate: %s\n", p.PatternID, p.New, strconv.FormatFloat(p.SuccessRate, 'f', -1, 64))
		if p.Archived {
			b.WriteString("        archived: true\n")
		}
		if p.Restored {
			b.WriteString("        restored: true\n")
		}
	}
	if e := s.Estimate; e != nil {
		b.WriteString("    improvement_estimate:\n")
		if e.BaselineIterations != nil {
			fmt.Fprintf(&b, "      baseline_iterations: %s\n", strconv.FormatFloat(*e.BaselineIterations, 'f', -1, 64))
		} else {
			b.WriteString("      baseline_iterations: none  # no completed loop of the category without injection\n")
		}
		fmt.Fprintf(&b, "      actual_iterations: %d\n", e.ActualIterations)
		if e.Improvement != nil {
			fmt.Fprintf(&b, "      improvement: %.1f%%\n", *e.Improvement)
		}
	}
	return b.String()
}
