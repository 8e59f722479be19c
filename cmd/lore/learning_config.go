package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/projector/learning"
)

// lore learning config: the learning configuration as events
// (endpoints learning.config and learning.configure).

func newCmdLearningConfig(f *Factory) *cobra.Command {
	var (
		file string
		sets []string
	)
	cmd := &cobra.Command{
		Use:   "config [--set KEY=VALUE]... [--file CONFIG.json]",
		Short: "Show the learning configuration, or set it for every replica (--set, --file)",
		Long: `Show the learning configuration in force (with --as-of, the one in force then),
or set it: --file reads a JSON document of keys over the defaults (lore's keys,
or the reference's learningConfig / antiPatternConfig / maturityConfig
sections); --set KEY=VALUE (repeatable) changes keys of the configuration in
force (or of --file). An unknown key or a value out of range is refused,
naming it (exit code 2). The change is an event: every replica and replay
folds with it, and the transitions it causes are announced once.`,
		Example: `  lore learning config
  lore learning config --set maturity.minHelpful=3 --set anti_pattern.minObservations=5
  lore learning config --set criterion_half_life_days.type_safe=30
  lore learning config --set evidence.policy=evidence --set evidence.exploration_share=0.1
  lore learning config --file learning.json   # {"maturityConfig": {"minHelpful": 3}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" && len(sets) == 0 {
				return learnCall(cmd, f, "config", nil, func(c learning.Config) { _ = f.PrintJSON(c) })
			}
			var doc []byte
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("%w: --file: %v", errBadInput, err)
				}
				doc = b
			} else {
				var cur json.RawMessage
				if err := f.Call(cmd.Context(), "learning", "config", nil, &cur); err != nil {
					return err
				}
				doc = cur
			}
			doc, err := applyConfigSets(doc, sets)
			if err != nil {
				return err
			}
			// The rule the endpoint applies, before anything is sent.
			if _, err := learning.ParseConfig(doc); err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			return learnCall(cmd, f, "configure", map[string]json.RawMessage{"config": doc}, func(c learning.Config) {
				fmt.Fprintln(f.Out, "learning configuration set")
				_ = f.PrintJSON(c)
			})
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "JSON file of learning configuration keys")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE (dotted key, e.g. maturity.minHelpful=3); repeatable")
	freeText(cmd.Flags(), "file", "set")
	return cmd
}
