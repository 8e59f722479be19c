package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

func init() { addCommand(newCmdLoop) }

func newCmdLoop(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "loop", Short: "Report an agent loop: start, iterate, complete, apply a pattern; show one"}
	cmd.AddCommand(newCmdLoopStart(f), newCmdLoopIterate(f), newCmdLoopComplete(f), newCmdLoopApply(f), newCmdLoopShow(f))
	return cmd
}

// callLoop calls lore.api.loop.<name> and prints the result.
func callLoop(cmd *cobra.Command, f *Factory, name string, args map[string]any, human func(map[string]any) string) error {
	var res map[string]any
	if err := f.Call(cmd.Context(), "loop", name, args, &res); err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(res)
	}
	fmt.Fprintln(f.Out, human(res))
	return nil
}

func newCmdLoopStart(f *Factory) *cobra.Command {
	var task, category, agent, id string
	var inject bool
	cmd := &cobra.Command{
		Use:   "start --task TEXT [--category C] [--loop-id ID] [--inject]",
		Short: "Start a loop; prints its id (ralph-<slug>-<8 hex>), and with --inject the patterns for it",
		Long: `Start a loop; prints its id (ralph-<slug>-<8 hex>).

--inject also ranks the registry's patterns for the loop's task and category
and records the injection on the loop, in the same request (what
lore inject --loop ID does after it): the id is printed on the first line,
the Cross-Loop Learning Context after it.`,
		Example: `  lore loop start --task "Fix auth bug" --category debugging
  lore loop start --task "Fix auth bug" --category debugging --inject`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if task == "" {
				return fmt.Errorf("%w: --task is required", errBadInput)
			}
			a := map[string]any{"task": task}
			for k, v := range map[string]string{"category": category, "agent": agent, "loop_id": id} {
				if v != "" {
					a[k] = v
				}
			}
			if inject {
				a["inject"] = true
			}
			return callLoop(cmd, f, "start", a, func(r map[string]any) string {
				out := fmt.Sprint(r["loop_id"])
				if inj, ok := r["injection"].(map[string]any); ok {
					if text, _ := inj["text"].(string); text != "" {
						out += "\n" + text
					}
				}
				return out
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&task, "task", "", "task text")
	fl.StringVar(&category, "category", "", "task category (debugging, testing, refactoring, ...)")
	fl.StringVar(&agent, "agent", "", "agent running the loop (default: --source)")
	fl.StringVar(&id, "loop-id", "", "loop id (default: generated)")
	fl.BoolVar(&inject, "inject", false, "also rank the registry's patterns for the loop and record the injection (as lore inject --loop ID)")
	freeText(fl, "task", "category", "agent", "loop-id")
	return cmd
}

func newCmdLoopIterate(f *Factory) *cobra.Command {
	var loop, errType, errMsg, loc, fix, diff, agent string
	var n, passed, failed int
	var tools, files []string
	cmd := &cobra.Command{
		Use:   "iterate --loop ID --iteration N [--error-type T --error-message M --location L] [--fix D --diff P] [--tests-passed N --tests-failed N]",
		Short: "Record one loop iteration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := map[string]any{"loop_id": loop, "error_type": errType, "error_message": errMsg,
				"location": loc, "fix_description": fix, "fix_diff": diff, "tools_used": tools, "files_changed": files, "agent": agent}
			if cmd.Flags().Changed("iteration") {
				a["iteration"] = n
			}
			if cmd.Flags().Changed("tests-passed") {
				a["tests_passed"] = passed
			}
			if cmd.Flags().Changed("tests-failed") {
				a["tests_failed"] = failed
			}
			for k, v := range a {
				if s, ok := v.(string); ok && s == "" {
					delete(a, k)
				}
				if s, ok := v.([]string); ok && len(s) == 0 {
					delete(a, k)
				}
			}
			return callLoop(cmd, f, "iterate", a, func(map[string]any) string { return fmt.Sprintf("Recorded iteration %d of %s", n, loop) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&loop, "loop", "", "loop id")
	fl.IntVar(&n, "iteration", 0, "iteration number (from 1)")
	fl.StringVar(&errType, "error-type", "", "error type (TypeError, ...)")
	fl.StringVar(&errMsg, "error-message", "", "error message")
	fl.StringVar(&loc, "location", "", "where it happened (src/a.ts:42)")
	fl.StringVar(&fix, "fix", "", "fix description")
	fl.StringVar(&diff, "diff", "", "fix diff")
	fl.IntVar(&passed, "tests-passed", 0, "tests passed")
	fl.IntVar(&failed, "tests-failed", 0, "tests failed")
	fl.StringSliceVar(&tools, "tool", nil, "tool used (repeatable)")
	fl.StringSliceVar(&files, "file", nil, "file changed (repeatable)")
	fl.StringVar(&agent, "agent", "", "agent")
	declare(fl, rules{"iteration": atLeast(1), "tests-passed": atLeast(0), "tests-failed": atLeast(0)})
	freeText(fl, "loop", "error-type", "error-message", "location", "fix", "diff", "tool", "file", "agent")
	return cmd
}

func newCmdLoopComplete(f *Factory) *cobra.Command {
	var loop, outcome, mode, approach string
	var n int
	cmd := &cobra.Command{
		Use:   "complete --loop ID --outcome success|partial|failure --iterations N",
		Short: "Complete a loop; patterns are extracted from it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := map[string]any{"loop_id": loop, "outcome": outcome}
			if cmd.Flags().Changed("iterations") {
				a["iterations"] = n
			}
			if mode != "" {
				a["failure_mode"] = mode
			}
			if approach != "" {
				a["approach"] = approach
			}
			return callLoop(cmd, f, "complete", a, func(map[string]any) string { return fmt.Sprintf("Completed %s (%s)", loop, outcome) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&loop, "loop", "", "loop id")
	fl.StringVar(&outcome, "outcome", "", "success, partial or failure")
	fl.IntVar(&n, "iterations", 0, "iterations run")
	fl.StringVar(&mode, "failure-mode", "", "for a failure: infinite_loop, scope_creep, incorrect_fix, ...")
	fl.StringVar(&approach, "approach", "", "the approach the loop took")
	declare(fl, rules{"outcome": schemaEnum("loop.completed/v1", "outcome"), "iterations": atLeast(0),
		"failure-mode": schemaEnum("loop.completed/v1", "failure_mode")})
	freeText(fl, "loop", "approach")
	return cmd
}

func newCmdLoopApply(f *Factory) *cobra.Command {
	var loop, pattern, agent string
	var success, failed bool
	var it int
	cmd := &cobra.Command{
		Use:   "apply --loop ID --pattern PATTERN_ID --success|--failed [--iteration N]",
		Short: "Record that a loop applied a pattern (updates usage and success rate)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if success == failed {
				return fmt.Errorf("%w: give --success or --failed", errBadInput)
			}
			a := map[string]any{"loop_id": loop, "pattern_id": pattern, "success": success}
			if cmd.Flags().Changed("iteration") {
				a["iteration"] = it
			}
			if agent != "" {
				a["agent"] = agent
			}
			return callLoop(cmd, f, "apply", a, func(map[string]any) string {
				return fmt.Sprintf("Recorded %s on %s (success=%v)", pattern, loop, success)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&loop, "loop", "", "loop id")
	fl.StringVar(&pattern, "pattern", "", "pattern id")
	fl.BoolVar(&success, "success", false, "the pattern helped")
	fl.BoolVar(&failed, "failed", false, "the pattern did not help")
	fl.IntVar(&it, "iteration", 0, "iteration it was used in")
	fl.StringVar(&agent, "agent", "", "agent")
	declare(fl, rules{"iteration": atLeast(0)})
	freeText(fl, "loop", "pattern", "agent")
	return cmd
}

func newCmdLoopShow(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show LOOP_ID",
		Short: "Show one loop's state: injected patterns (applied, successful, iteration used), extracted patterns, improvement estimate",
		Example: `  lore loop show ralph-fix-validation-b2c3d4e5
  lore loop show ralph-fix-validation-b2c3d4e5 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if err := f.Call(cmd.Context(), "loop", "show", map[string]string{"id": args[0]}, &raw); err != nil {
				return err
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
			fmt.Fprint(f.Out, out.Text)
			return nil
		},
	}
}
