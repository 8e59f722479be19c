package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func init() { addCommand(newCmdInject) }

// newCmdInject: with --loop or --category, the cross-loop registry
// (patterns.inject, which records the injection on the loop); otherwise
// the knowledge store's budgeted block (knowledge.inject with --headroom).
func newCmdInject(f *Factory) *cobra.Command {
	var loop, task, category string
	var headroom, minRate float64
	var topK int
	cmd := &cobra.Command{
		Use:   "inject [--loop ID | --task TEXT --category C | --task TEXT --headroom F]",
		Short: "What to tell an agent at the start of a task",
		Example: `  lore inject --loop ralph-fix-validation-b2c3d4e5
  lore inject --task "Fix TypeScript type errors" --category debugging
  lore inject --task "Add OAuth login" --headroom 0.7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			if loop != "" || category != "" {
				a := map[string]any{"loop_id": loop, "task": task, "category": category, "top_k": topK}
				if cmd.Flags().Changed("min-success-rate") {
					a["min_success_rate"] = minRate
				}
				if err := f.Call(cmd.Context(), "patterns", "inject", a, &raw); err != nil {
					return err
				}
			} else {
				if task == "" {
					return fmt.Errorf("%w: give --loop, --category or --task", errBadInput)
				}
				if err := f.Call(cmd.Context(), "knowledge", "inject", map[string]any{"task": task, "headroom": headroom}, &raw); err != nil {
					return err
				}
			}
			if f.JSON {
				return f.PrintJSON(raw)
			}
			var out struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			if out.Text == "" {
				// An empty block is an answer (no room, nothing relevant):
				// say so on stderr, keep stdout what an agent would paste.
				fmt.Fprintln(f.Err, "lore: nothing to inject for this task and budget")
				return nil
			}
			fmt.Fprint(f.Out, out.Text)
			if !strings.HasSuffix(out.Text, "\n") {
				fmt.Fprintln(f.Out)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&loop, "loop", "", "loop id (its task and category; the injection is recorded on it)")
	fl.StringVar(&task, "task", "", "task text")
	fl.StringVar(&category, "category", "", "task category")
	fl.Float64Var(&headroom, "headroom", 1, "fraction of the context window free (knowledge injection budget)")
	fl.Float64Var(&minRate, "min-success-rate", 0.6, "lowest success rate injected")
	fl.IntVar(&topK, "top-k", 0, "patterns injected (default 5, at most 10)")
	declare(fl, rules{"headroom": between(0, 1), "min-success-rate": between(0, 1), "top-k": between(0, 10)})
	freeText(fl, "loop", "task", "category")
	return cmd
}
