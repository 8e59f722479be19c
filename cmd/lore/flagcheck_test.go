package main

import (
	"context"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loredev/lore/test/natstest"
)

// flagCase is one flag of one command, with its rule.
type flagCase struct {
	path []string // the command's words, e.g. [knowledge list]
	flag *pflag.Flag
}

// everyFlag walks the command tree: each runnable command's own flags, and
// the global flags once (through the first runnable command).
func everyFlag(root *cobra.Command) []flagCase {
	var out []flagCase
	var globalsVia []string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && c != root {
			if globalsVia == nil {
				globalsVia = path
			}
			c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
				out = append(out, flagCase{path: path, flag: fl})
			})
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		out = append(out, flagCase{path: globalsVia, flag: fl})
	})
	return out
}

func (c flagCase) String() string { return strings.Join(c.path, " ") + " --" + c.flag.Name }

// TestEveryFlagHasARule: a flag cannot be added unchecked. Every non-bool
// flag of every command declares a rule or is marked free text.
func TestEveryFlagHasARule(t *testing.T) {
	root := newRootCmd(NewFactory(strings.NewReader(""), io.Discard, io.Discard))
	var missing []string
	n := 0
	for _, c := range everyFlag(root) {
		if c.flag.Value.Type() == "bool" {
			continue
		}
		n++
		if len(c.flag.Annotations[ruleKey]) == 0 {
			missing = append(missing, c.String())
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("flags without a rule (declare one next to the flag, or freeText):\n  %s", strings.Join(missing, "\n  "))
	}
	if n < 100 {
		t.Fatalf("walked only %d non-bool flags: the walk misses commands", n)
	}
}

// TestDefaultsPassTheirRules: every command's defaults (and string
// defaults taken from the environment) pass the check.
func TestDefaultsPassTheirRules(t *testing.T) {
	root := newRootCmd(NewFactory(strings.NewReader(""), io.Discard, io.Discard))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if err := c.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if err := checkFlags(c); err != nil {
			t.Errorf("%s with its defaults: %v", c.CommandPath(), err)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestInvalidFlagValuesExit2BeforeAnyWork runs every command with each of
// its flags set to a value the flag's rule refuses (plus the cases below,
// seen in use): lore exits 2 with a message naming the flag, and does no
// work: it neither connects to lore's NATS (so appends, asks and waits for
// nothing) nor writes in the data folder (so serves and snapshots nothing).
func TestInvalidFlagValuesExit2BeforeAnyWork(t *testing.T) {
	s := natstest.Start(t)
	url := s.ClientURL()
	type run struct {
		name string
		args []string // the command and the bad flag, last
		flag string
	}
	var runs []run
	root := newRootCmd(NewFactory(strings.NewReader(""), io.Discard, io.Discard))
	for _, c := range everyFlag(root) {
		r := rule(c.flag.Annotations[ruleKey])
		if len(r) == 0 {
			continue // TestEveryFlagHasARule reports it
		}
		bad, ok := invalidValue(r, c.flag.Value.Type())
		if !ok {
			continue
		}
		runs = append(runs, run{c.String() + " " + bad, append(append([]string(nil), c.path...), "--"+c.flag.Name, bad), c.flag.Name})
	}
	for _, r := range []run{
		{"timeout below zero", []string{"stats", "--timeout", "-1s"}, "timeout"},
		{"tail a negative count", []string{"events", "tail", "-n", "-5"}, "last"},
		{"list an unknown category", []string{"knowledge", "list", "--category", "nonsense"}, "category"},
		{"keep a negative number of snapshots", []string{"snapshot", "create", "--local", "--keep", "-3"}, "keep"},
		{"serve on a port out of range", []string{"serve", "--port", "99999"}, "port"},
		{"tick below zero", []string{"serve", "--tick", "-1m"}, "tick"},
		{"snapshot every negative hour", []string{"serve", "--snapshot-every", "-1h"}, "snapshot-every"},
		{"metrics on no address", []string{"serve", "--metrics", "not-an-address"}, "metrics"},
		{"a bad flag before the positional argument", []string{"errors", "record", "--type", "nonsense"}, "type"},
	} {
		runs = append(runs, r)
	}
	if len(runs) < 80 {
		t.Fatalf("only %d runs: the walk misses flags", len(runs))
	}

	connections := func() uint64 {
		v, err := s.Varz(&server.VarzOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return v.TotalConnections
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			before := connections()
			data := t.TempDir()
			// The bound only ends a run that would otherwise serve forever.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"--data", data, "--nats", url}, r.args...)
			code, _, stderr := cli(t, ctx, "", args...)
			if code != exitBadInput {
				t.Fatalf("lore %s: exit %d, want %d; stderr %q", strings.Join(r.args, " "), code, exitBadInput, stderr)
			}
			if !strings.Contains(stderr, "--"+r.flag) {
				t.Errorf("lore %s: the message does not name --%s: %q", strings.Join(r.args, " "), r.flag, stderr)
			}
			if ents, err := os.ReadDir(data); err != nil || len(ents) != 0 {
				t.Errorf("lore %s wrote in the data folder: %v %v", strings.Join(r.args, " "), ents, err)
			}
			if n := connections(); n != before {
				t.Fatalf("lore %s connected to NATS (%d connections, want %d)", strings.Join(r.args, " "), n, before)
			}
		})
	}
}

// TestEnvironmentDefaultsAreChecked: a string default taken from the
// environment is held to its flag's rule, and named as the flag.
func TestEnvironmentDefaultsAreChecked(t *testing.T) {
	t.Setenv("LORE_METRICS", "not-an-address")
	t.Setenv("LORE_PROJECT", "two words")
	data := t.TempDir()
	code, _, stderr := cli(t, context.Background(), "", "serve", "--data", data, "--port", "-1", "--project", "web")
	if code != exitBadInput || !strings.Contains(stderr, "--metrics") {
		t.Fatalf("serve with LORE_METRICS=not-an-address: exit %d, stderr %q; want 2 naming --metrics", code, stderr)
	}
	if ents, _ := os.ReadDir(data); len(ents) != 0 {
		t.Fatalf("serve wrote in the data folder: %v", ents)
	}
	code, _, stderr = cli(t, context.Background(), "", "stats", "--data", data)
	if code != exitBadInput || !strings.Contains(stderr, "--project") {
		t.Fatalf("stats with LORE_PROJECT=\"two words\": exit %d, stderr %q; want 2 naming --project", code, stderr)
	}
}

// TestValidFlagValuesPass: values the rules admit, including the spelled
// "not given" and "any" values, pass the check.
func TestValidFlagValuesPass(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--port", "-1", "--tick", "0", "--snapshot-every", "0", "--metrics", "", "--fsync", "always", "--host", "::1"},
		{"serve", "--metrics", ":9464", "--webhook", "https://ci.example.com/lore", "--webhook-type", "promoted,inverted"},
		{"knowledge", "list", "--category", "lesson", "--tier", "hive", "--status", "quarantined", "--limit", "0"},
		{"knowledge", "add", "x", "--category", "testing", "--scope", "stack:go", "--confidence", "1"},
		{"events", "tail", "-n", "0", "--type", "outcome.recorded", "--type", "error.recorded/v1"},
		{"extract", "--all", "--types", "error,anti"},
		{"stats", "--nats", "nats://a:4222,tls://b:4223", "--as-of", "2026-01-02", "--timeout", "1ms"},
		{"learning", "feedback", "c", "--type", "harmful", "--value", "0", "--time", "2026-01-02T15:04:05Z"},
		{"loop", "complete", "--outcome", "failure", "--failure-mode", "scope_creep"},
		{"record", "x", "--expect-seq", "-1"},
	} {
		root := newRootCmd(NewFactory(strings.NewReader(""), io.Discard, io.Discard))
		c, rest, err := root.Find(args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := checkFlags(c); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestUnknownSubcommandsExit2: every command group refuses a subcommand it
// does not have, naming it (exit code 2, nothing on stdout), and alone
// prints its help (exit 0), as the root does.
func TestUnknownSubcommandsExit2(t *testing.T) {
	root := newRootCmd(NewFactory(strings.NewReader(""), io.Discard, io.Discard))
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string{}, path...), sub.Name())
			if sub.HasSubCommands() {
				groups = append(groups, p)
				walk(sub, p)
			}
		}
	}
	walk(root, nil)
	if len(groups) < 8 {
		t.Fatalf("found %d command groups: the walk misses commands", len(groups))
	}
	for _, g := range groups {
		code, out, errs := cli(t, context.Background(), "", append(g, "lsit")...)
		if code != exitBadInput || out != "" || !strings.Contains(errs, `unknown command "lsit"`) || !strings.Contains(errs, strings.Join(g, " ")) {
			t.Errorf("lore %s lsit: exit %d, out %q, err %q; want 2 naming the command", strings.Join(g, " "), code, out, errs)
		}
		if code, out, _ := cli(t, context.Background(), "", g...); code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("lore %s: exit %d, want its help", strings.Join(g, " "), code)
		}
	}
}
