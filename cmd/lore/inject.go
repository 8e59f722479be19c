package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func init() { addCommand(newCmdInject) }

// newCmdInject: with --loop, --category or --types, the cross-loop
// registry (patterns.inject, which records the injection on the loop);
// otherwise the knowledge store's budgeted block (knowledge.inject with
// --headroom and --scope).
func newCmdInject(f *Factory) *cobra.Command {
	var loop, task, category string
	var headroom, minRate float64
	var topK int
	var types, scopes []string
	cmd := &cobra.Command{
		Use:   "inject [--loop ID | --task TEXT --category C [--types T,...] | --task TEXT --headroom F [--scope S]...]",
		Short: "What to tell an agent at the start of a task",
		Example: `  lore inject --loop ralph-fix-validation-b2c3d4e5
  lore inject --task "Fix TypeScript type errors" --category debugging
  lore inject --task "Fix the flaky retry" --types error,anti
  lore inject --task "Add OAuth login" --headroom 0.7
  lore inject --task "Add OAuth login" --scope global --scope stack:go`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			crossLoop := loop != "" || category != "" || len(types) > 0
			switch {
			case crossLoop && len(scopes) > 0:
				return fmt.Errorf("%w: --scope selects knowledge (with --task and --headroom); --loop, --category and --types select cross-loop patterns", errBadInput)
			case !crossLoop && cmd.Flags().Changed("min-success-rate"), !crossLoop && cmd.Flags().Changed("top-k"):
				return fmt.Errorf("%w: --min-success-rate and --top-k apply to cross-loop patterns (--loop, --category or --types)", errBadInput)
			}
			if crossLoop {
				a := map[string]any{"loop_id": loop, "task": task, "category": category, "top_k": topK}
				if cmd.Flags().Changed("min-success-rate") {
					a["min_success_rate"] = minRate
				}
				if len(types) > 0 {
					a["types"] = types
				}
				if err := f.Call(cmd.Context(), "patterns", "inject", a, &raw); err != nil {
					return err
				}
			} else {
				if task == "" {
					return fmt.Errorf("%w: give --loop, --category or --task", errBadInput)
				}
				a := map[string]any{"task": task, "headroom": headroom}
				if len(scopes) > 0 {
					a["scopes"] = scopes
				}
				if err := f.Call(cmd.Context(), "knowledge", "inject", a, &raw); err != nil {
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
	fl.IntVar(&topK, "top-k", 0, "patterns injected (default injection.top_k_patterns, capped at injection.max_patterns_injected: lore patterns config)")
	fl.StringSliceVar(&types, "types", nil, "only these cross-loop pattern types: error, success, anti, template (comma-separated or repeated)")
	fl.StringSliceVar(&scopes, "scope", nil, "knowledge scopes to inject from: global or stack:<name> (repeat for several)")
	declare(fl, rules{"headroom": between(0, 1), "min-success-rate": between(0, 1), "top-k": atLeast(0),
		"types": domain("pattern-type"), "scope": domain("knowledge-scope")})
	freeText(fl, "loop", "task", "category")
	return cmd
}
