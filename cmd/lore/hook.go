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
	cmd := &cobra.Command{Use: "hook", Short: "Agent hooks: lore inside the sessions of Claude Code"}
	cmd.AddCommand(newCmdHookClaudeCode(f), newCmdHookInstall(f, true), newCmdHookInstall(f, false))
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
			if err := runHook(cmd.Context(), f, task); err != nil {
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

func runHook(ctx context.Context, f *Factory, task string) error {
	raw, err := io.ReadAll(io.LimitReader(f.In, 16<<20))
	if err != nil {
		return fmt.Errorf("read the hook input: %w", err)
	}
	e, err := hook.ParseClaudeCode(raw)
	if err != nil || e.Kind == hook.Ignore {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h := &hook.Handler{Lore: loreAPI{f}, StateDir: filepath.Join(f.DataDir, "hooks"), Task: task}
	text, err := h.Handle(ctx, e)
	if out := hook.ClaudeCodeReply(e, text); out != nil {
		if _, werr := f.Out.Write(out); werr != nil {
			return werr
		}
	}
	return err
}

// claudeSettings is the settings file of a scope: the project's
// .claude/settings.json (under the current folder) or the user's
// ~/.claude/settings.json.
func claudeSettings(user bool) (string, error) {
	if user {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: no home folder for --user: %v", errBadInput, err)
		}
		return filepath.Join(home, ".claude", "settings.json"), nil
	}
	return filepath.Join(".claude", "settings.json"), nil
}

func newCmdHookInstall(f *Factory, install bool) *cobra.Command {
	var project, user bool
	var file string
	verb, edit := "install", hook.InstallClaudeCode
	short := "Add lore's hooks to Claude Code's settings, leaving every other setting and hook as it is"
	if !install {
		verb, edit = "uninstall", hook.UninstallClaudeCode
		short = "Remove exactly lore's hooks from Claude Code's settings"
	}
	cmd := &cobra.Command{
		Use:   verb + " claude-code [--project|--user|--settings FILE]",
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] != hook.ClaudeCode {
				return fmt.Errorf("%w: name the agent: lore hook %s claude-code", errBadInput, verb)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if project && user {
				return fmt.Errorf("%w: --project and --user exclude each other", errBadInput)
			}
			path := file
			if path == "" {
				var err error
				if path, err = claudeSettings(user); err != nil {
					return err
				}
			}
			if err := hook.EditFile(path, edit); err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			fmt.Fprintf(f.Out, "%sed lore's Claude Code hooks in %s\n", verb, path)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&project, "project", false, "the project's .claude/settings.json (the default)")
	fl.BoolVar(&user, "user", false, "the user's ~/.claude/settings.json")
	fl.StringVar(&file, "settings", "", "this settings file instead")
	freeText(fl, "settings")
	return cmd
}
