package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/hook"
)

func init() { addCommand(newCmdHook) }

func newCmdHook(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "hook", Short: "Agent hooks: lore inside the sessions of Claude Code and Codex"}
	cmd.AddCommand(newCmdHookClaudeCode(f), newCmdHookCodex(f), newCmdHookInstall(f, true), newCmdHookInstall(f, false))
	return cmd
}

// newCmdHookClaudeCode is the command Claude Code runs at each hooked
// event. It never fails the agent's session: whatever goes wrong is said
// on stderr and the exit code is 0 (Claude Code reads exit code 2 as
// "block"; any other non-zero code is shown to the user as an error).
func newCmdHookClaudeCode(f *Factory) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use:   "claude-code",
		Short: "Act on one Claude Code hook call (its JSON input on stdin)",
		Long: `Reads one Claude Code hook input on stdin. SessionStart: prints lore's context
(cross-loop patterns and knowledge for the session's task) as additional context.
PostToolUse / PostToolUseFailure: a failed tool call or test run is recorded as an error of
the session's bead. Stop: the turn is recorded as one iteration of the session's loop.
SessionEnd: the outcome (duration, errors, retries) is recorded and the loop completed.
The loop id is derived from the session id. Never blocks the agent: exits 0, problems go to stderr.
Install with: lore hook install claude-code`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if task == "" {
				task = os.Getenv("LORE_TASK")
			}
			if err := runHook(cmd.Context(), f, task, hook.ParseClaudeCode, false); err != nil {
				fmt.Fprintf(f.Err, "lore hook claude-code: %v\n", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&task, "task", "", "the session's task (default: $LORE_TASK, else \"claude-code session in <folder>\")")
	freeText(fl, "task")
	return cmd
}

// newCmdHookCodex is the command Codex runs at each hooked event; as
// lore hook claude-code, it never fails the agent's session.
func newCmdHookCodex(f *Factory) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use:   "codex",
		Short: "Act on one Codex hook call (its JSON input on stdin)",
		Long: `Reads one Codex hook input on stdin (Codex's hooks speak Claude Code's format).
SessionStart: prints lore's context as additional context. PostToolUse (Bash): a failing
test run is recorded as an error of the session's bead. Stop: the turn is one iteration of
the session's loop; when the newest test run passed, the loop is completed (success) and the
session's next turn starts the next loop (Codex has no session-end hook).
Never blocks the agent: exits 0, problems go to stderr. Install with: lore hook install codex`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if task == "" {
				task = os.Getenv("LORE_TASK")
			}
			if err := runHook(cmd.Context(), f, task, hook.ParseCodex, true); err != nil {
				fmt.Fprintf(f.Err, "lore hook codex: %v\n", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "the session's task (default: $LORE_TASK, else \"codex session in <folder>\")")
	freeText(cmd.Flags(), "task")
	return cmd
}

func runHook(ctx context.Context, f *Factory, task string, parse func([]byte) (hook.Event, error), endAtGreen bool) error {
	raw, err := io.ReadAll(io.LimitReader(f.In, 16<<20))
	if err != nil {
		return fmt.Errorf("read the hook input: %w", err)
	}
	e, err := parse(raw)
	if err != nil || e.Kind == hook.Ignore {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h := &hook.Handler{Lore: loreAPI{f}, StateDir: filepath.Join(f.DataDir, "hooks"), Task: task, EndAtGreenStop: endAtGreen}
	text, err := h.Handle(ctx, e)
	if out := hook.ClaudeCodeReply(e, text); out != nil {
		if _, werr := f.Out.Write(out); werr != nil {
			return werr
		}
	}
	return err
}

// hookAgents are the agents lore installs hooks for: the spec and the
// hook configuration file, relative to the project (the current folder)
// or to the user's home folder.
var hookAgents = map[string]struct {
	spec hook.Spec
	file string
}{
	hook.ClaudeCode: {hook.ClaudeCodeSpec, filepath.Join(".claude", "settings.json")},
	hook.Codex:      {hook.CodexSpec, filepath.Join(".codex", "hooks.json")},
}

// hookConfigPath is an agent's hook configuration file in a scope.
func hookConfigPath(file string, user bool) (string, error) {
	if user {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: no home folder for --user: %v", errBadInput, err)
		}
		return filepath.Join(home, file), nil
	}
	return file, nil
}

func newCmdHookInstall(f *Factory, install bool) *cobra.Command {
	var project, user bool
	var file string
	verb := "install"
	short := "Add lore's hooks to an agent's settings (claude-code: .claude/settings.json, codex: .codex/hooks.json), leaving every other setting and hook as it is"
	if !install {
		verb = "uninstall"
		short = "Remove exactly lore's hooks from an agent's settings"
	}
	cmd := &cobra.Command{
		Use:   verb + " claude-code|codex [--project|--user|--settings FILE]",
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if _, ok := hookAgents[firstArg(args)]; len(args) != 1 || !ok {
				return fmt.Errorf("%w: name the agent: lore hook %s claude-code (or codex)", errBadInput, verb)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			agent := hookAgents[args[0]]
			edit := agent.spec.Install
			if !install {
				edit = agent.spec.Uninstall
			}
			if project && user {
				return fmt.Errorf("%w: --project and --user exclude each other", errBadInput)
			}
			path := file
			if path == "" {
				var err error
				if path, err = hookConfigPath(agent.file, user); err != nil {
					return err
				}
			}
			if err := hook.EditFile(path, edit); err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			fmt.Fprintf(f.Out, "%sed lore's %s hooks in %s\n", verb, args[0], path)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&project, "project", false, "the project's settings, under the current folder (the default)")
	fl.BoolVar(&user, "user", false, "the user's settings, under the home folder")
	fl.StringVar(&file, "settings", "", "this settings file instead")
	freeText(fl, "settings")
	return cmd
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
