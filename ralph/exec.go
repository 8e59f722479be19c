package ralph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// runAgent runs the agent command once with the prompt (on stdin, or as
// the file its "{prompt}" placeholder names). A non-zero exit is the
// agent's business (verify judges the tree); a command that cannot start
// is ErrCannotStart. timedOut: the iteration timeout killed it.
func runAgent(ctx context.Context, c Config, prompt string) (timedOut bool, err error) {
	args := append([]string(nil), c.Agent...)
	var stdin io.Reader = strings.NewReader(prompt)
	placeholder := false
	for _, a := range args {
		if strings.Contains(a, "{prompt}") {
			placeholder = true
		}
	}
	if placeholder {
		path, cleanup, err := promptFile(prompt)
		if err != nil {
			return false, err
		}
		defer cleanup()
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "{prompt}", path)
		}
		stdin = nil
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c.IterationTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.IterationTimeout)
	}
	defer cancel()
	cmd := command(actx, c.Dir, args)
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = c.AgentOut, c.AgentOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return false, ctx.Err()
	case actx.Err() != nil:
		return true, nil
	case err == nil, errors.As(err, &exit):
		if exit != nil {
			fmt.Fprintf(c.Log, "lore: the agent exited with status %d\n", exit.ExitCode())
		}
		return false, nil
	default:
		return false, fmt.Errorf("%w: agent %q: %v", ErrCannotStart, c.Agent[0], err)
	}
}

// runVerify runs the verify command through the shell; its output
// (stdout and stderr) is returned for parsing and shown. A shell that
// cannot find or run the command (status 126/127) is ErrCannotStart.
func runVerify(ctx context.Context, c Config) (string, bool, error) {
	sh := c.Shell
	if len(sh) == 0 {
		sh = []string{"sh", "-c"}
	}
	var buf bytes.Buffer
	cmd := command(ctx, c.Dir, append(append([]string(nil), sh...), c.Verify))
	cmd.Stdout = io.MultiWriter(&buf, c.AgentOut)
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", false, ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return buf.String(), true, nil
	case errors.As(err, &exit) && (exit.ExitCode() == 126 || exit.ExitCode() == 127):
		return "", false, fmt.Errorf("%w: verify command %q (status %d: %s)", ErrCannotStart, c.Verify, exit.ExitCode(), lastLine(buf.String()))
	case errors.As(err, &exit):
		return buf.String(), false, nil
	default:
		return "", false, fmt.Errorf("%w: verify command %q: %v", ErrCannotStart, c.Verify, err)
	}
}

// command is a process in its own group where the platform has them
// (ownGroup), so that a timeout or Ctrl-C kills the agent's children too.
func command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Diff is the change an iteration made to the working tree.
type Diff struct {
	Description string   // "edit retry.go (+1 -1), util.go (+3)"
	Patch       string   // the unified diff, cut to maxPatch bytes
	Files       []string // files changed
}

const maxPatch = 8000

// gitSnapshot names the working tree's state as a commit (git stash create
// stores it without touching the tree or the index; HEAD when clean), or ""
// outside a git repository.
func gitSnapshot(ctx context.Context, dir string) string {
	if out, err := git(ctx, dir, "stash", "create"); err == nil && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out)
	}
	if out, err := git(ctx, dir, "rev-parse", "--verify", "HEAD"); err == nil {
		return strings.TrimSpace(out)
	}
	return ""
}

// gitDiff is the change to tracked files since the snapshot.
func gitDiff(ctx context.Context, dir, snap string) Diff {
	if snap == "" {
		return Diff{}
	}
	num, err := git(ctx, dir, "diff", "--numstat", snap, "--")
	if err != nil {
		return Diff{}
	}
	d := DescribeNumstat(num)
	if patch, err := git(ctx, dir, "diff", snap, "--"); err == nil {
		if len(patch) > maxPatch {
			patch = patch[:maxPatch]
		}
		d.Patch = patch
	}
	return d
}

// DescribeNumstat turns `git diff --numstat` output into a diff summary.
func DescribeNumstat(num string) Diff {
	var d Diff
	var parts []string
	for _, ln := range strings.Split(strings.TrimSpace(num), "\n") {
		f := strings.SplitN(ln, "\t", 3)
		if len(f) != 3 {
			continue
		}
		d.Files = append(d.Files, f[2])
		var counts []string
		if a, err := strconv.Atoi(f[0]); err == nil && a > 0 {
			counts = append(counts, "+"+f[0])
		}
		if r, err := strconv.Atoi(f[1]); err == nil && r > 0 {
			counts = append(counts, "-"+f[1])
		}
		if f[0] == "-" {
			counts = append(counts, "binary")
		}
		p := f[2]
		if len(counts) > 0 {
			p += " (" + strings.Join(counts, " ") + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		d.Description = "edit " + strings.Join(parts, ", ")
	}
	return d
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	return out.String(), err
}
