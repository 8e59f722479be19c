package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
)

func init() { addCommand(newCmdDeadLetters) }

// newCmdDeadLetters prints audit.dead_letters: the projector's lag and the
// events no projector could fold, with their reasons.
func newCmdDeadLetters(f *Factory) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "dead-letters",
		Short: "Events no projector could fold, with their reasons, and the projector's lag",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out app.ProjectorStatus
			if err := f.Call(cmd.Context(), "audit", "dead_letters", app.DeadLettersArgs{Limit: limit}, &out); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(out)
			}
			fmt.Fprintf(f.Out, "log at seq %d, read models at seq %d (%d behind); %d dead letters\n",
				out.LogLastSeq, out.FoldedSeq, out.LagEvents, out.DeadLetterTotal)
			for _, d := range out.DeadLetters {
				fmt.Fprintf(f.Out, "seq %d\t%s\t%s\t%s\n", d.Seq, d.Time.Format("2006-01-02T15:04:05Z07:00"), d.Subject, d.Reason)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "newest dead letters to list")
	declare(cmd.Flags(), rules{"limit": atLeast(1)})
	return cmd
}
