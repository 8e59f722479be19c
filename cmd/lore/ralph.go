package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/ralph"
)

func init() { addCommand(newCmdRalph) }

// Exit codes of `lore ralph run` beyond 0/1/2 (see `lore help exit-codes`).
const (
	exitNotPassed   = 3   // the loop ended at its iteration limit without verify passing
	exitUnreachable = 4   // lore unreachable: refused to start, or records were not sent
	exitInterrupted = 130 // stopped by Ctrl-C (SIGINT) or SIGTERM
)

// ralphExitCode maps the errors of a Ralph loop to their exit codes.
func ralphExitCode(err error) (int, bool) {
	switch {
	case errors.Is(err, ralph.ErrCannotStart):
		return exitBadInput, true
	case errors.Is(err, ralph.ErrInterrupted):
		return exitInterrupted, true
	case errors.Is(err, ralph.ErrUnreachable):
		return exitUnreachable, true
	case errors.Is(err, ralph.ErrNotPassed):
		return exitNotPassed, true
	}
	return 0, false
}

func newCmdRalph(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "ralph", Short: "Run Ralph loops recorded in lore: an agent run until a verify command passes"}
	cmd.AddCommand(newCmdRalphRun(f), newCmdRalphStatus(f))
	return cmd
}

// loreAPI is ralph.Lore over the CLI's NATS connection: a transport
// failure (no connection, no responder, timeout) is ralph.ErrUnreachable;
// an error lore answered with is returned as is.
type loreAPI struct{ f *Factory }

func (l loreAPI) Call(ctx context.Context, group, name string, args any, key string, out any) error {
	req, err := l.f.Request(args)
	if err != nil {
		return err
	}
	req.IdempotencyKey = key
	nc, err := l.f.Conn()
	if err != nil {
		return fmt.Errorf("%w: %v", ralph.ErrUnreachable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, l.f.Timeout)
	defer cancel()
	raw, err := api.NewClient(nc).CallRaw(ctx, group, name, req)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			if errors.Is(err, app.ErrKeyReused) {
				return fmt.Errorf("%w: %w", ralph.ErrKeyReused, err)
			}
			return err
		}
		return fmt.Errorf("%w: %v", ralph.ErrUnreachable, err)
	}
	return decodeReply(group, name, raw, out)
}

// shellWords are shell keywords and builtins: a verify command starting
// with one is not looked up on the PATH before the loop starts.
var shellWords = map[string]bool{"cd": true, "export": true, "set": true, "source": true, ".": true, "exec": true,
	"if": true, "for": true, "while": true, "until": true, "!": true, "[": true, "test": true, "true": true,
	"false": true, "eval": true, "env": true, "command": true, "time": true, "{": true, "(": true}

// checkVerify refuses, before anything starts, a verify command whose
// program is not on the PATH (when it is a plain word).
func checkVerify(verify string) error {
	fields := strings.Fields(verify)
	if len(fields) == 0 {
		return fmt.Errorf("%w: --verify is required (the command whose success ends the loop, e.g. \"go test ./...\")", errBadInput)
	}
	first := fields[0]
	if shellWords[first] || strings.ContainsAny(first, "=$`'\"(){};|&<>*?~\\") {
		return nil
	}
	if _, err := exec.LookPath(first); err != nil {
		return fmt.Errorf("%w: --verify: %q cannot start: %v", errBadInput, first, err)
	}
	return nil
}

func newCmdRalphRun(f *Factory) *cobra.Command {
	var c ralph.Config
	var promptPath string
	var noInject bool
	cmd := &cobra.Command{
		Use:   "run --task TEXT --prompt FILE --verify CMD [flags] -- AGENT-COMMAND...",
		Short: "Run an agent until verify passes; every iteration is recorded, patterns are injected",
		Long: `Runs a Ralph loop: starts a loop in lore, then per iteration writes the prompt (the prompt
file plus lore's cross-loop patterns and knowledge for the task), runs the agent with it (on
stdin, or as a file where an argument holds {prompt}), runs verify (through sh -c), and records
the iteration: the error and location parsed from verify's output (go test, pytest, jest,
vitest, tsc, cargo), the test counts, the fix (the working tree's diff since the iteration
began, in a git repository). It stops when verify passes, at --max-iterations, or on Ctrl-C,
and records the loop's completion (success, failure, partial) so lore extracts patterns.
Secrets are redacted from everything recorded. Exit codes: lore help exit-codes.`,
		Example: `  lore ralph run --task "Fix the flaky retry test" --prompt PROMPT.md --verify "go test ./..." -- claude -p
  lore ralph run --task "Type errors in api/" --prompt PROMPT.md --verify "npx tsc --noEmit" \
    --max-iterations 5 --iteration-timeout 15m -- codex exec --full-auto "$(cat {prompt})"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(c.Task) == "" {
				return fmt.Errorf("%w: --task is required", errBadInput)
			}
			if cmd.ArgsLenAtDash() < 0 || len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("%w: give the agent command after --, e.g. lore ralph run ... -- claude -p", errBadInput)
			}
			if promptPath == "" {
				return fmt.Errorf("%w: --prompt is required (the prompt file given to the agent)", errBadInput)
			}
			b, err := os.ReadFile(promptPath)
			if err != nil {
				return fmt.Errorf("%w: --prompt: %v", errBadInput, err)
			}
			if err := checkVerify(c.Verify); err != nil {
				return err
			}
			if c.Dir != "" {
				if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
					return fmt.Errorf("%w: --dir %q is not a folder", errBadInput, c.Dir)
				}
			}
			if _, err := exec.LookPath(args[0]); err != nil {
				return fmt.Errorf("%w: agent command %q cannot start: %v", errBadInput, args[0], err)
			}
			c.Prompt, c.Agent, c.Inject = string(b), args, !noInject
			c.Log, c.AgentOut = f.Err, f.Err
			res, err := ralph.Run(cmd.Context(), c, loreAPI{f})
			if f.JSON {
				if perr := f.PrintJSON(map[string]any{"loop_id": res.LoopID, "outcome": res.Outcome,
					"iterations": res.Iterations, "unsent": res.Unsent}); perr != nil {
					return perr
				}
			} else if res.LoopID != "" && res.Outcome != "" {
				fmt.Fprintf(f.Out, "%s %s %d\n", res.LoopID, res.Outcome, res.Iterations)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Task, "task", "", "the task (what lore learns under, and injects for)")
	fl.StringVar(&promptPath, "prompt", "", "prompt file given to the agent each iteration")
	fl.StringVar(&c.Verify, "verify", "", "command whose success ends the loop (run with sh -c)")
	fl.IntVar(&c.MaxIterations, "max-iterations", 10, "iteration limit")
	fl.StringVar(&c.Category, "category", "", "task category (debugging, testing, refactoring, ...)")
	fl.Float64Var(&c.Headroom, "budget", 0.5, "knowledge injection budget: fraction of the agent's context window free for it")
	fl.IntVar(&c.TopK, "top-k", 0, "cross-loop patterns injected (default injection.top_k_patterns, capped at injection.max_patterns_injected: lore patterns config)")
	fl.DurationVar(&c.IterationTimeout, "iteration-timeout", 30*time.Minute, "time limit of one agent run (0: none); past it the agent is killed")
	fl.StringVar(&c.OnUnreachable, "on-unreachable", ralph.UnreachableFail, "when lore does not answer: fail (refuse to start) or continue (loop, say so, send later)")
	fl.BoolVar(&noInject, "no-inject", false, "do not add lore's patterns and knowledge to the prompt")
	fl.StringVar(&c.Dir, "dir", "", "working tree the agent and verify run in (default: the current folder)")
	fl.StringVar(&c.Agent0, "agent", "", "agent name recorded (default: the command's name)")
	declare(fl, rules{"max-iterations": atLeast(1), "budget": between(0, 1), "top-k": atLeast(0),
		"iteration-timeout": atLeast(0), "on-unreachable": oneOf(ralph.UnreachableFail, ralph.UnreachableContinue)})
	freeText(fl, "task", "prompt", "verify", "category", "agent", "dir")
	return cmd
}

func newCmdRalphStatus(f *Factory) *cobra.Command {
	var flt crossloop.LoopFilter
	cmd := &cobra.Command{
		Use:   "status [--running] [--limit N]",
		Short: "Running and recent loops with their iteration counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ls []crossloop.LoopSummary
			if err := f.Call(cmd.Context(), "loop", "list", flt, &ls); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(ls)
			}
			if len(ls) == 0 {
				fmt.Fprintln(f.Out, "No loops (start one with lore ralph run).")
				return nil
			}
			tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LOOP\tSTATE\tITERATIONS\tSTARTED\tTASK")
			for _, l := range ls {
				state := l.Outcome
				if l.Running() {
					state = "running"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", l.ID, state, l.Iterations, l.Started.UTC().Format(time.RFC3339), oneLine(l.Task, 60))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&flt.Running, "running", false, "only loops still running")
	fl.IntVar(&flt.Limit, "limit", 50, "at most this many loops, newest first")
	declare(fl, rules{"limit": atLeast(1)})
	return cmd
}
