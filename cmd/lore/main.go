// Command lore is the learning memory of a swarm of coding agents: one
// binary that serves (embedded NATS + JetStream + Pebble projectors + the
// API), records events, answers queries, replays the log for audits, and
// speaks MCP.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/node/cmalloc"
)

// commands are added by each command file in init; see addCommand.
var commands []func(f *Factory) *cobra.Command

// addCommand registers a top-level command constructor.
func addCommand(c func(f *Factory) *cobra.Command) { commands = append(commands, c) }

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "lore",
		Short:         "lore — the learning memory of a swarm of coding agents",
		Long:          "lore records what happened to agent loops as events on NATS JetStream, folds them into\nPebble read models and answers, at the start of a task, what helps and what to avoid.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f.bindGlobalFlags(root)
	for _, c := range commands {
		root.AddCommand(c(f))
	}
	guardFlags(root)
	knownSubcommands(root)
	return root
}

// knownSubcommands makes every command group under c (a command with
// subcommands and nothing of its own to run) refuse an unknown subcommand,
// naming it (exit code 2), as the root does; alone it prints its help.
// Without it cobra prints the group's help and exits 0, so a mistyped
// command in a script passes for done.
func knownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && sub.Run == nil && sub.RunE == nil {
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
				}
				return cmd.Help()
			}
		}
		knownSubcommands(sub)
	}
}

func main() {
	cmalloc.Tune() // before the store's first allocation
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory(os.Stdin, os.Stdout, os.Stderr)
	os.Exit(run(ctx, f, os.Args[1:]))
}

// run executes the CLI and maps the outcome to an exit code.
func run(ctx context.Context, f *Factory, args []string) int {
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.Err)
	err := root.ExecuteContext(ctx)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "lore:") {
			msg = "lore: " + msg
		}
		fmt.Fprintln(f.Err, msg)
	}
	return exitCode(err)
}

// Exit codes. NB: scripts depend on them; see `lore help exit-codes`.
const (
	exitOK       = 0
	exitFailure  = 1
	exitBadInput = 2
	exitRejected = 5 // lore knowledge add: the lesson was rejected (kept in the rejected list)
)

// errBadInput marks a usage or input error (exit code 2).
var errBadInput = errors.New("bad input")

// errRejected marks a lesson the validator rejected (exit code 5).
var errRejected = errors.New("lesson rejected")

func ralphErr(err error) bool { _, ok := ralphExitCode(err); return ok }

// exitCode maps an error to the process exit code: 0 ok, 1 failure, 2 bad input.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case ralphErr(err):
		code, _ := ralphExitCode(err)
		return code
	case isBadInput(err):
		return exitBadInput
	case errors.Is(err, errRejected):
		return exitRejected
	default:
		return exitFailure
	}
}
