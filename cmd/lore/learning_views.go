package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/learning"
)

// Views of the learning systems in the seed's storage terms: lore learning
// feedback-list (getByCriterion, getByBead), lore errors list (getByBead,
// getUnresolvedByBead), lore learning extract (extractPatternsFromDescription).

func newCmdLearningFeedbackList(f *Factory) *cobra.Command {
	var criterion, bead string
	var pg app.FeedbackPage
	cmd := &cobra.Command{
		Use:   "feedback-list (--criterion NAME | --bead ID)",
		Short: "Feedback events on a criterion or of a bead, in log order (implicit from outcomes, and explicit)",
		Example: `  lore learning feedback-list --criterion type_safe
  lore learning feedback-list --bead bd-123.1 --json
  lore learning feedback-list --criterion type_safe --limit 100 --offset 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (criterion == "") == (bead == "") {
				return fmt.Errorf("%w: give exactly one of --criterion and --bead", errBadInput)
			}
			print := func(es []app.FeedbackEvent) {
				if len(es) == 0 {
					fmt.Fprintln(f.Err, "lore: no feedback events")
					return
				}
				tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tCRITERION\tTYPE\tRAW\tBEAD\tFROM\tID")
				for _, e := range es {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%.4f\t%s\t%s\t%s\n", learnTime(&e.Timestamp), e.Criterion, e.Type, e.RawValue,
						orDash(e.BeadID), e.From, e.ID)
				}
				tw.Flush()
			}
			name := "feedback_by_bead"
			if criterion != "" {
				name = "feedback_by_criterion"
			}
			args := func(p app.FeedbackPage) any {
				if criterion != "" {
					return app.LearningCriterionFeedbackArgs{Criterion: criterion, FeedbackPage: p}
				}
				return app.LearningBeadFeedbackArgs{BeadID: bead, FeedbackPage: p}
			}
			es, err := callList[app.FeedbackEvent](cmd, f, "learning", name, args(pg), func(offset, limit int) any {
				return args(app.FeedbackPage{Offset: offset, Limit: limit})
			})
			if err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(es)
			}
			print(es)
			return nil
		},
	}
	cmd.Flags().StringVar(&criterion, "criterion", "", "the criterion's feedback events (getByCriterion)")
	cmd.Flags().StringVar(&bead, "bead", "", "the bead's feedback events (getByBead)")
	cmd.Flags().IntVar(&pg.Offset, "offset", 0, "skip this many feedback events (log order)")
	cmd.Flags().IntVar(&pg.Limit, "limit", 0, "at most this many (0: all; a long log is listed page by page with --offset)")
	declare(cmd.Flags(), rules{"offset": atLeast(0), "limit": atLeast(0)})
	freeText(cmd.Flags(), "criterion", "bead")
	return cmd
}

func newCmdLearningExtract(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "extract TEXT",
		Short: "The strategies detected in a decomposition text (extractPatternsFromDescription); records nothing",
		Example: `  lore learning extract "We'll split by file type, one file per subtask"
  lore learning extract "$(cat plan.md)" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "extract", app.LearningExtractArgs{Text: args[0]}, func(r app.LearningExtracted) {
				if len(r.Patterns) == 0 {
					fmt.Fprintln(f.Err, "lore: no strategy detected")
					return
				}
				tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "STRATEGY\tPATTERN ID")
				for i, p := range r.Patterns {
					fmt.Fprintf(tw, "%s\t%s\n", p, r.PatternIDs[i])
				}
				tw.Flush()
			})
		},
	}
}

func newCmdErrorsList(f *Factory) *cobra.Command {
	var unresolved bool
	cmd := &cobra.Command{
		Use:   "list BEAD",
		Short: "A bead's raw error entries with their ids (--unresolved: only those not resolved)",
		Example: `  lore errors list bd-123.1
  lore errors list bd-123.1 --unresolved --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return learnCall(cmd, f, "errors", app.LearningErrorsArgs{BeadID: args[0], Unresolved: unresolved}, func(es []learning.ErrorEntry) {
				if len(es) == 0 {
					fmt.Fprintln(f.Err, "lore: no errors")
					return
				}
				tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTIME\tTYPE\tRESOLVED\tTOOL\tMESSAGE")
				for _, e := range es {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", e.ID, learnTime(&e.Time), e.ErrorType, e.Resolved, orDash(e.ToolName),
						strings.ReplaceAll(e.Message, "\n", " "))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&unresolved, "unresolved", false, "only errors not resolved (getUnresolvedByBead)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
