package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func init() {
	addCommand(newCmdVersion)
	addCommand(newCmdExitCodes)
}

func newCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lore's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if f.JSON {
				return f.PrintJSON(map[string]string{"version": version, "go": runtime.Version()})
			}
			fmt.Fprintf(f.Out, "lore %s (%s)\n", version, runtime.Version())
			return nil
		},
	}
}

// newCmdExitCodes is a help topic: `lore help exit-codes`.
func newCmdExitCodes(*Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "Exit codes lore returns (help topic)",
		Long: `lore exits with:
  0  success (an empty result is a success)
  1  failure: lore or NATS unreachable, storage error, a refused conflict
  2  bad input: unknown command or flag, an invalid flag value (the message names the
     flag; checked before lore connects or starts anything), an invalid event (the
     message names the field), an invalid argument; lore ralph run: a missing prompt
     file, an agent or verify command that cannot start
  3  lore ralph run: the loop reached --max-iterations without verify passing
  4  lore ralph run: lore unreachable (--on-unreachable fail refused to start, or
     records of the loop could not be sent)
  5  lore knowledge add: the lesson was rejected by validation (the reason is printed; it
     is kept in lore knowledge rejected); a reinforced lesson exits 0
  130  lore ralph run: stopped by Ctrl-C or SIGTERM (the loop is recorded as partial)
lore hook claude-code exits 0 whatever happens (Claude Code reads exit code 2 as "block"):
its problems are said on stderr.`,
		Run: func(cmd *cobra.Command, _ []string) { _ = cmd.Help() },
	}
}
