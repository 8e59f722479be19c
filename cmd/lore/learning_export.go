package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
)

func newCmdLearningExport(f *Factory) *cobra.Command {
	var format, kind string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the learning state as JSONL in swarm-tools' record shapes",
		Long: "One record per line: FeedbackEvent (feedback), DecompositionPattern (decompositions: patterns\n" +
			"and their anti-patterns), PatternMaturity (maturity) and ErrorEntry (errors), with swarm-tools'\n" +
			"field names. Without --kind every kind is written, in that order. Neutral feedback is kept by\n" +
			"lore as a count only (it weighs in neither sum), so feedback lines are helpful or harmful.",
		Example: "  lore learning export --format swarm-tools --kind maturity > maturity.jsonl\n  lore learning export --project web",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var r app.LearningExport
			if err := f.Call(cmd.Context(), "learning", "export", app.LearningExportArgs{Format: format, Kind: kind}, &r); err != nil {
				return err
			}
			enc := json.NewEncoder(f.Out)
			write := func(n int, rec func(i int) any) error {
				for i := 0; i < n; i++ {
					if err := enc.Encode(rec(i)); err != nil {
						return fmt.Errorf("write export: %w", err)
					}
				}
				return nil
			}
			if err := write(len(r.Feedback), func(i int) any { return r.Feedback[i] }); err != nil {
				return err
			}
			if err := write(len(r.Decompositions), func(i int) any { return r.Decompositions[i] }); err != nil {
				return err
			}
			if err := write(len(r.Maturity), func(i int) any { return r.Maturity[i] }); err != nil {
				return err
			}
			return write(len(r.Errors), func(i int) any { return r.Errors[i] })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", app.ExportFormatSwarmTools, "record shapes: swarm-tools")
	fl.StringVar(&kind, "kind", "", "feedback, decompositions, maturity or errors (default: all)")
	declare(fl, rules{"format": oneOf(app.ExportFormatSwarmTools), "kind": oneOf(app.ExportKinds...)})
	return cmd
}
