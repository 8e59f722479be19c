package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/learning"
)

// Commands of the learning systems (endpoints in group "learning"):
// lore weights, lore maturity ..., lore why ..., lore learning ...,
// lore errors ..., lore outcome.

func init() {
	addCommand(newCmdWeights)
	addCommand(newCmdMaturity)
	addCommand(newCmdWhy)
	addCommand(newCmdLearning)
	addCommand(newCmdErrors)
	addCommand(newCmdOutcome)
}

// learnCall calls a learning endpoint and prints JSON or the human form.
func learnCall[T any](cmd *cobra.Command, f *Factory, name string, args any, human func(T)) error {
	var out T
	if err := f.Call(cmd.Context(), "learning", name, args, &out); err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(out)
	}
	human(out)
	return nil
}

func learnTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newCmdWeights(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "weights [CRITERION]",
		Short: "Criterion weights at now: decayed helpful vs harmful feedback",
		Example: `  lore weights
  lore weights type_safe --json
  lore weights --as-of 2026-03-01T00:00:00Z`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := app.LearningWeightsArgs{}
			if len(args) == 1 {
				a.Criterion = args[0]
			}
			return learnCall(cmd, f, "weights", a, func(ws []learning.CriterionView) {
				tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CRITERION\tWEIGHT\tEFFECTIVE\tHELPFUL\tHARMFUL\tDECAYED H/X\tLAST VALIDATED\tDEPRECATED")
				for _, w := range ws {
					// WEIGHT is the decayed ratio; EFFECTIVE is what scoring uses (0 once deprecated).
					fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%d\t%d\t%.3f/%.3f\t%s\t%v\n", w.Criterion, w.Weight, w.EffectiveWeight, w.HelpfulCount,
						w.HarmfulCount, w.DecayedHelpful, w.DecayedHarmful, learnTime(w.LastValidated), w.Deprecated)
				}
				tw.Flush()
			})
		},
	}
}

func printPatterns(f *Factory, ps []learning.PatternView) {
	tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tx\tDECAYED H/X\tOK/FAIL\tCONTENT")
	for _, p := range ps {
		st := string(p.State)
		if p.Manual != nil {
			st += " (manual)"
		}
		if p.Inverted {
			st += " [anti]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.3f/%.3f\t%d/%d\t%s\n", p.ID, st, p.Multiplier, p.DecayedHelpful,
			p.DecayedHarmful, p.SuccessCount, p.FailureCount, p.Content)
	}
	tw.Flush()
}

func printPattern(f *Factory, p learning.PatternView) {
	fmt.Fprintf(f.Out, "%s  %s\n", p.ID, p.Content)
	fmt.Fprintf(f.Out, "state: %s (computed %s, multiplier %.1f) %s\n", p.State, p.ComputedState, p.Multiplier, p.Label)
	fmt.Fprintf(f.Out, "decayed helpful %.4f, harmful %.4f (ratio %.3f); raw %d helpful, %d harmful, %d neutral\n",
		p.DecayedHelpful, p.DecayedHarmful, p.HarmfulRatio, p.HelpfulCount, p.HarmfulCount, p.NeutralCount)
	fmt.Fprintf(f.Out, "observations: %d succeeded, %d failed\n", p.SuccessCount, p.FailureCount)
	if p.Inverted {
		fmt.Fprintf(f.Out, "anti-pattern %s: %s\n", p.AntiPatternID, p.AntiPattern)
	}
	fmt.Fprintln(f.Out, "why:")
	for _, w := range p.Why {
		fmt.Fprintln(f.Out, "  - "+w)
	}
}

// learnPatternArgs takes an id, or --content.
func learnPatternArgs(args []string, content string) (app.LearningPatternArgs, error) {
	a := app.LearningPatternArgs{Content: content}
	if len(args) == 1 {
		a.PatternID = args[0]
	}
	if a.PatternID == "" && strings.TrimSpace(a.Content) == "" {
		return a, fmt.Errorf("%w: give a pattern ID or --content", errBadInput)
	}
	return a, nil
}

func newCmdMaturity(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "maturity", Short: "Decomposition pattern maturity: list, show, observe, promote, deprecate, reset"}
	var la app.LearningPatternsArgs
	list := &cobra.Command{
		Use: "list", Short: "Patterns with their maturity at now (decayed counts)", Args: cobra.NoArgs,
		Example: "  lore maturity list --state proven\n  lore maturity list --tag auth\n  lore maturity list --limit 100 --offset 100",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := callList[learning.PatternView](cmd, f, "learning", "patterns", la, func(offset, limit int) any {
				a := la
				a.Offset, a.Limit = offset, limit
				return a
			})
			if err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(ps)
			}
			printPatterns(f, ps)
			return nil
		},
	}
	list.Flags().StringVar(&la.State, "state", "", "candidate, established, proven or deprecated")
	list.Flags().StringVar(&la.Tag, "tag", "", "only patterns carrying this tag (getByTag)")
	list.Flags().IntVar(&la.Offset, "offset", 0, "skip this many patterns (the order: state, then content)")
	list.Flags().IntVar(&la.Limit, "limit", 0, "list at most this many (0: all; many patterns are listed page by page with --offset)")
	freeText(list.Flags(), "tag")
	declare(list.Flags(), rules{"state": schemaEnum("pattern.maturity_changed/v1", "to"), "offset": atLeast(0), "limit": atLeast(0)})
	var content string
	show := &cobra.Command{
		Use: "show [ID]", Short: "One pattern: maturity, decayed counts, observations and why", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := learnPatternArgs(args, content)
			if err != nil {
				return err
			}
			return learnCall(cmd, f, "pattern", a, func(p learning.PatternView) { printPattern(f, p) })
		},
	}
	show.Flags().StringVar(&content, "content", "", "name the pattern by its content")
	freeText(show.Flags(), "content")
	cmd.AddCommand(list, show, newCmdMaturityObserve(f), newCmdMaturityObserveBatch(f),
		newCmdMaturityManual(f, "promote", "Promote a pattern to proven by hand (refused when deprecated)", false),
		newCmdMaturityManual(f, "deprecate", "Deprecate a pattern by hand, with a reason", true),
		newCmdMaturityManual(f, "reset", "Start a pattern over as a candidate", false))
	return cmd
}

func printRecorded(f *Factory) func(app.LearningRecorded) {
	return func(r app.LearningRecorded) {
		fmt.Fprintf(f.Out, "%s %s %s\n", r.Type, r.Subject, r.EventID)
		if r.Scored != nil {
			fmt.Fprintf(f.Out, "scored %s (%.4f): %s\n", r.Scored.Type, r.Scored.Raw, r.Scored.Reasoning)
		}
		if r.Maturity != "" {
			fmt.Fprintf(f.Out, "maturity %s\n", r.Maturity)
		}
	}
}

func newCmdMaturityObserve(f *Factory) *cobra.Command {
	var a app.LearningObserveArgs
	var failed bool
	cmd := &cobra.Command{
		Use: "observe [ID]", Short: "Record that a pattern worked (--success) or not (--failed)", Args: cobra.MaximumNArgs(1),
		Example: `  lore maturity observe --content "Split by file type" --failed --bead bd-123.1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				a.PatternID = args[0]
			}
			if cmd.Flags().Changed("success") == cmd.Flags().Changed("failed") {
				return fmt.Errorf("%w: give exactly one of --success and --failed", errBadInput)
			}
			a.Success = !failed
			sent, err := onlySet(cmd, a, map[string][]string{"content": {"content"}, "bead_id": {"bead"}, "tags": {"tag"}, "time": {"time"}})
			if err != nil {
				return err
			}
			return learnCall(cmd, f, "observe_pattern", sent, printRecorded(f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&a.Content, "content", "", "the pattern's content (its id is derived)")
	fl.Bool("success", false, "the pattern worked")
	fl.BoolVar(&failed, "failed", false, "the pattern did not work")
	fl.StringVar(&a.BeadID, "bead", "", "bead id")
	fl.StringSliceVar(&a.Tags, "tag", nil, "tags")
	fl.StringVar(&a.Time, "time", "", "when it happened (RFC 3339; default now)")
	declare(fl, rules{"time": domain("learning-time")})
	freeText(fl, "content", "bead", "tag")
	return cmd
}

func newCmdMaturityManual(f *Factory, name, short string, needReason bool) *cobra.Command {
	var content, reason, at string
	cmd := &cobra.Command{
		Use: name + " [ID]", Short: short, Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pa, err := learnPatternArgs(args, content)
			if err != nil {
				return err
			}
			if needReason && strings.TrimSpace(reason) == "" {
				return fmt.Errorf("%w: --reason is required", errBadInput)
			}
			a := app.LearningManualArgs{LearningPatternArgs: pa, Reason: reason, LearningTime: app.LearningTime{Time: at}}
			return learnCall(cmd, f, name, a, printRecorded(f))
		},
	}
	cmd.Flags().StringVar(&content, "content", "", "name the pattern by its content")
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the manual state)")
	cmd.Flags().StringVar(&at, "time", "", "when (RFC 3339; default now)")
	declare(cmd.Flags(), rules{"time": domain("learning-time")})
	freeText(cmd.Flags(), "content", "reason")
	return cmd
}

func newCmdWhy(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "why", Short: "Explain a pattern's maturity or a criterion's weight"}
	cmd.AddCommand(&cobra.Command{
		Use: "pattern ID|CONTENT", Short: "Why a pattern is (not) proven, deprecated or inverted", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "pattern", app.LearningPatternArgs{PatternID: args[0]}, func(p learning.PatternView) { printPattern(f, p) })
		},
	}, &cobra.Command{
		Use: "criterion NAME", Short: "Why a criterion's weight is what it is", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "criterion", app.LearningCriterionArgs{Criterion: args[0]}, func(c learning.CriterionView) {
				fmt.Fprintf(f.Out, "%s: weight %.4f (effective %.4f)\n", c.Criterion, c.Weight, c.EffectiveWeight)
				for _, w := range c.Why {
					fmt.Fprintln(f.Out, "  - "+w)
				}
			})
		},
	})
	return cmd
}

func newCmdLearning(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "learning", Short: "Prompt blocks and explicit feedback of the learning systems"}
	cmd.AddCommand(&cobra.Command{
		Use: "anti-patterns", Short: "Anti-patterns formatted for a prompt", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return learnCall(cmd, f, "anti_patterns", nil, func(r app.LearningAntiPatterns) { fmt.Fprint(f.Out, r.Text) })
		},
	}, &cobra.Command{
		Use: "prompt", Short: "Decomposition prompt block: patterns by maturity and anti-patterns", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return learnCall(cmd, f, "decomposition_prompt", nil, func(r learning.DecompositionPrompt) { fmt.Fprint(f.Out, r.Text) })
		},
	}, &cobra.Command{
		Use: "strategies", Short: "The twelve strategies extracted from decomposition text", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.JSON {
				return f.PrintJSON(learning.StrategyLabels())
			}
			for _, s := range learning.StrategyLabels() {
				fmt.Fprintln(f.Out, s)
			}
			return nil
		},
	}, newCmdLearningFeedback(f), newCmdLearningExport(f), newCmdLearningFeedbackList(f), newCmdLearningExtract(f), newCmdLearningConfig(f))
	return cmd
}

func newCmdLearningFeedback(f *Factory) *cobra.Command {
	var a app.LearningFeedbackArgs
	cmd := &cobra.Command{
		Use: "feedback CRITERION", Short: "Record explicit feedback on a criterion", Args: cobra.ExactArgs(1),
		Example: "  lore learning feedback type_safe --type helpful --value 0.9 --bead bd-123.1",
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Criterion = args[0]
			if _, err := learning.ParseFeedbackType("--type", a.Type); err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			sent, err := onlySet(cmd, a, map[string][]string{"type": {"type"}, "raw_value": {"value"}, "bead_id": {"bead"},
				"context": {"context"}, "time": {"time"}})
			if err != nil {
				return err
			}
			return learnCall(cmd, f, "record_feedback", sent, printRecorded(f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&a.Type, "type", "", "helpful, harmful or neutral")
	fl.Float64Var(&a.RawValue, "value", 0, "raw value in [0,1] (required)")
	fl.StringVar(&a.BeadID, "bead", "", "bead id")
	fl.StringVar(&a.Context, "context", "", "context text")
	fl.StringVar(&a.Time, "time", "", "when (RFC 3339; default now)")
	declare(fl, rules{"type": schemaEnum("feedback.recorded/v1", "type"), "value": between(0, 1), "time": domain("learning-time")})
	freeText(fl, "bead", "context")
	return cmd
}

func newCmdErrors(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "errors", Short: "The error accumulator: context, stats, record, resolve"}
	var incl bool
	ctxCmd := &cobra.Command{
		Use: "context BEAD", Short: "A bead's previous errors as markdown for a retry prompt", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "error_context", app.LearningBeadArgs{LearningBeadIDArgs: app.LearningBeadIDArgs{BeadID: args[0]}, IncludeResolved: incl},
				func(r app.LearningErrorContext) { fmt.Fprint(f.Out, r.Text) })
		},
	}
	ctxCmd.Flags().BoolVar(&incl, "include-resolved", false, "also show resolved errors")
	stats := &cobra.Command{
		Use: "stats BEAD", Short: "A bead's error counts", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "error_stats", app.LearningBeadIDArgs{BeadID: args[0]}, func(s learning.ErrorStats) {
				fmt.Fprintf(f.Out, "total %d, unresolved %d\n", s.Total, s.Unresolved)
				for _, t := range s.ByType {
					fmt.Fprintf(f.Out, "  %s\t%d\n", t.Type, t.Count)
				}
			})
		},
	}
	var ea app.LearningErrorArgs
	rec := &cobra.Command{
		Use: "record BEAD", Short: "Record an error met while executing a bead", Args: cobra.ExactArgs(1),
		Example: `  lore errors record bd-123.1 --type validation --message "Type error in src/auth.ts" --tool typecheck`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ea.BeadID = args[0]
			if !learning.ValidErrorType(ea.ErrorType) {
				return fmt.Errorf("%w: --type: %q is not one of validation, timeout, conflict, tool_failure, unknown", errBadInput, ea.ErrorType)
			}
			sent, err := onlySet(cmd, ea, map[string][]string{"error_type": {"type"}, "message": {"message"}, "stack_trace": {"stack"},
				"tool_name": {"tool"}, "context": {"context"}, "time": {"time"}})
			if err != nil {
				return err
			}
			return learnCall(cmd, f, "record_error", sent, printRecorded(f))
		},
	}
	fl := rec.Flags()
	fl.StringVar(&ea.ErrorType, "type", "", "validation, timeout, conflict, tool_failure or unknown")
	fl.StringVar(&ea.Message, "message", "", "error message")
	fl.StringVar(&ea.StackTrace, "stack", "", "stack trace")
	fl.StringVar(&ea.ToolName, "tool", "", "tool name")
	fl.StringVar(&ea.Context, "context", "", "context")
	fl.StringVar(&ea.Time, "time", "", "when (RFC 3339; default now)")
	declare(fl, rules{"type": schemaEnum("error.recorded/v1", "error_type"), "time": domain("learning-time")})
	freeText(fl, "message", "stack", "tool", "context")
	resolve := &cobra.Command{
		Use: "resolve ERROR_ID", Short: "Mark an error resolved (its id is the event id)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "resolve_error", app.LearningResolveArgs{ErrorID: args[0]}, printRecorded(f))
		},
	}
	cmd.AddCommand(ctxCmd, stats, rec, resolve, newCmdErrorsList(f))
	return cmd
}

func newCmdOutcome(f *Factory) *cobra.Command {
	var a app.LearningOutcomeArgs
	var dur time.Duration
	var errs int
	var failed bool
	cmd := &cobra.Command{
		Use: "outcome BEAD", Short: "Record how a subtask ended; it is scored by implicit feedback", Args: cobra.ExactArgs(1),
		Example: `  lore outcome bd-123.1 --success --duration 3m --retries 0 --strategy file-based --criteria type_safe,no_bugs
  lore outcome bd-123.2 --failed --duration 40m --retries 2 --failure-details "timeout waiting for tests"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.BeadID = args[0]
			if cmd.Flags().Changed("success") && cmd.Flags().Changed("failed") {
				return fmt.Errorf("%w: give one of --success and --failed", errBadInput)
			}
			// lore checks the values (the outcome's schema): a flag left
			// out is sent as missing, never as its default.
			a.DurationMs = dur.Milliseconds()
			a.ErrorCount = &errs
			a.Success = !failed
			if cmd.Flags().Changed("success") {
				a.Success, _ = cmd.Flags().GetBool("success")
			}
			sent, err := onlySet(cmd, a, map[string][]string{"duration_ms": {"duration"}, "error_count": {"errors"},
				"retry_count": {"retries"}, "success": {"success", "failed"}, "files_touched": {"files"}, "strategy": {"strategy"},
				"criteria": {"criteria"}, "decomposition": {"decomposition"}, "failure_mode": {"failure-mode"},
				"failure_details": {"failure-details"}, "time": {"time"}})
			if err != nil {
				return err
			}
			return learnCall(cmd, f, "record_outcome", sent, printRecorded(f))
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&dur, "duration", 0, "time from start to completion (e.g. 3m20s; required)")
	fl.IntVar(&errs, "errors", 0, "errors met (default: the bead's recorded errors)")
	fl.IntVar(&a.RetryCount, "retries", 0, "retry attempts (required)")
	fl.Bool("success", false, "the subtask succeeded (this or --failed is required)")
	fl.BoolVar(&failed, "failed", false, "the subtask failed")
	fl.StringSliceVar(&a.FilesTouched, "files", nil, "files touched")
	fl.StringVar(&a.Strategy, "strategy", "", "decomposition strategy used")
	fl.StringSliceVar(&a.Criteria, "criteria", nil, "criteria this outcome scores")
	fl.StringVar(&a.Decomposition, "decomposition", "", "decomposition text (strategies are extracted from it)")
	fl.StringVar(&a.FailureMode, "failure-mode", "", "failure mode (default: classified from --failure-details)")
	fl.StringVar(&a.FailureDetails, "failure-details", "", "error context of a failure")
	fl.StringVar(&a.Time, "time", "", "when it ended (RFC 3339; default now)")
	declare(fl, rules{"duration": atLeast(0), "errors": atLeast(0), "retries": atLeast(0), "time": domain("learning-time")})
	freeText(fl, "files", "strategy", "criteria", "decomposition", "failure-mode", "failure-details")
	return cmd
}
