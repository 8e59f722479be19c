package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/test/natstest"
)

// TestREADMEListsEveryEventType keeps the README's catalogue in step with
// the registered event types.
func TestREADMEListsEveryEventType(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, k := range events.Kinds() {
		if !strings.Contains(readme, "| `"+k.Type+"` |") {
			t.Errorf("README's catalogue misses %s", k.Type)
		}
	}
}

// readmeBlock returns the commands of the first ```sh block after heading
// (a line of the README): continuation lines joined, comments and blank
// lines dropped.
func readmeBlock(t *testing.T, readme, heading string) []string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q", heading)
	}
	rest := readme[i:]
	j := strings.Index(rest, "```sh\n")
	if j < 0 {
		t.Fatalf("README has no sh block after %q", heading)
	}
	body := rest[j+len("```sh\n"):]
	body = body[:strings.Index(body, "```")]
	body = strings.ReplaceAll(body, "\\\n", " ")
	var cmds []string
	for _, line := range strings.Split(body, "\n") {
		if k := strings.Index(line, " #"); k >= 0 {
			line = line[:k]
		}
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// readmeCommand splits a command line as sh does for the README's commands:
// words separated by blanks, single and double quotes grouping, and an
// `echo 'TEXT' |` prefix turned into stdin.
func readmeCommand(t *testing.T, line string) (stdin string, args []string) {
	t.Helper()
	if strings.HasPrefix(line, "echo ") {
		pipe := strings.LastIndex(line, "|")
		words := splitWords(t, line[:pipe])
		stdin = strings.Join(words[1:], " ") + "\n"
		line = strings.TrimSpace(line[pipe+1:])
	}
	return stdin, splitWords(t, line)
}

func splitWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestREADMEEverydayCommandsRunAsWritten runs the README's flow as a user
// would, from a folder of their own: the "Running lore" serve command,
// then every "Everyday commands" line in order, with no --data, --nats or
// LORE_* variable (they find the serve started in their folder), then the
// replay's folder served and queried as the README says. Only what a test
// cannot do verbatim differs: serve takes any free port (--port -1) and no
// clock tick, and /tmp/ is the test's own temp folder.
func TestREADMEEverydayCommandsRunAsWritten(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	work, tmp := t.TempDir(), t.TempDir()
	t.Chdir(work)
	for _, k := range []string{"LORE_NATS", "LORE_DATA", "LORE_PROJECT", "LORE_SOURCE"} {
		t.Setenv(k, "")
	}
	t.Setenv("XDG_DATA_HOME", t.TempDir()) // the default data folder: empty
	verbatim := func(line string) (string, []string) {
		stdin, words := readmeCommand(t, strings.ReplaceAll(line, "/tmp/", tmp+"/"))
		if len(words) == 0 || (words[0] != "lore" && words[0] != "./lore") {
			t.Fatalf("README command %q does not run lore", line)
		}
		return stdin, words[1:]
	}
	serve := func(args []string) {
		t.Helper()
		data := args[slices.Index(args, "--data")+1]
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if code, _, errs := cli(t, ctx, "", append(args, "--port", "-1", "--tick", "0", "--metrics", "", "--snapshot-every", "0")...); code != 0 {
				t.Errorf("%v exited %d: %s", args, code, errs)
			}
		}()
		t.Cleanup(func() { stop(); <-done })
		natstest.WaitFor(t, 2*time.Minute, func() error {
			_, err := os.Stat(filepath.Join(data, urlFile))
			return err
		})
	}

	var served bool
	for _, line := range readmeBlock(t, readme, "## Running lore") {
		if !strings.HasPrefix(line, "lore ") && !strings.HasPrefix(line, "./lore ") {
			continue // building lore: this test is lore already
		}
		if _, args := verbatim(line); len(args) > 1 && args[0] == "serve" && slices.Index(args, "--data") >= 0 {
			serve(args)
			served = true
			break
		}
	}
	if !served {
		t.Fatal(`"Running lore" shows no lore serve --data DIR`)
	}

	bg := context.Background()
	outs := map[string]string{}
	for _, line := range readmeBlock(t, readme, "## Everyday commands") {
		stdin, args := verbatim(line)
		code, out, errs := cli(t, bg, stdin, args...)
		if code != 0 {
			t.Fatalf("README command %q: exit %d, out %q, err %q", line, code, out, errs)
		}
		outs[strings.Join(args[:min(2, len(args))], " ")] = out
	}
	for cmd, want := range map[string]string{
		"record outcome.recorded": "recorded", "record error.recorded": "recorded",
		"events tail": "error.recorded/v1", "events types": "outcome.recorded/v1",
		"stats": "events folded: 2", "replay --out": "replayed to seq 2", "help exit-codes": "2  bad input",
	} {
		if !strings.Contains(outs[cmd], want) {
			t.Errorf("%s printed %q, want it to contain %q", cmd, outs[cmd], want)
		}
	}

	// The replay's folder, served and queried as the README says.
	for _, line := range readmeBlock(t, readme, "A replay's folder is a data folder of its own, served and queried like any:") {
		_, args := verbatim(line)
		if args[0] == "serve" {
			serve(args)
			continue
		}
		code, out, errs := cli(t, bg, "", args...)
		if code != 0 || !strings.Contains(out, "read model at seq 2") || !strings.Contains(out, "events folded: 0") {
			t.Fatalf("%q on the replayed folder: exit %d, out %q, err %q", line, code, out, errs)
		}
	}
}
