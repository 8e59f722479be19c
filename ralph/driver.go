package ralph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loredev/lore/projector/crossloop"
)

// Errors of a run; the CLI maps each to its exit code.
var (
	// ErrUnreachable: lore did not answer (after retries).
	ErrUnreachable = errors.New("lore is unreachable")
	// ErrCannotStart: the agent or verify command could not be started.
	ErrCannotStart = errors.New("command cannot start")
	// ErrNotPassed: the loop ended at its iteration limit without the verify command passing.
	ErrNotPassed = errors.New("verify did not pass")
	// ErrInterrupted: the loop was stopped (Ctrl-C: its context cancelled)
	// before it ended; it is recorded as partial.
	ErrInterrupted = errors.New("interrupted")
	// ErrKeyReused: lore holds another request under a call's idempotency
	// key (a record sent before under that key with other details).
	ErrKeyReused = errors.New("idempotency key used by another request")
)

// Lore is what the driver needs of lore: one call of an API endpoint, a
// command carrying an idempotency key so that a retried call records
// nothing twice. Transport failures are returned wrapping ErrUnreachable.
type Lore interface {
	Call(ctx context.Context, group, name string, args any, key string, out any) error
}

// Unreachable policies.
const (
	UnreachableFail     = "fail"     // refuse to start; stop when records cannot be sent
	UnreachableContinue = "continue" // keep looping, say so, send what is pending when lore answers
)

// Config is one loop run.
type Config struct {
	Task, Category string
	Prompt         string   // the user's prompt text
	Verify         string   // shell command; exit status 0 = pass
	Agent          []string // argv; "{prompt}" in an argument is replaced by the prompt file's path, else the prompt is on stdin
	MaxIterations  int
	// IterationTimeout bounds one agent run (0: none); the agent's process
	// group is killed past it and the iteration is verified as it stands.
	IterationTimeout time.Duration
	Inject           bool    // add lore's cross-loop patterns and knowledge to the prompt
	Headroom         float64 // knowledge injection budget: fraction of the context window free
	TopK             int     // cross-loop patterns injected (0: lore's default)
	OnUnreachable    string
	Dir              string // working tree (default: the current folder)
	Agent0           string // agent name recorded (default: the command's base name)
	Log              io.Writer
	AgentOut         io.Writer // where the agent's and verify's output go (besides being parsed)
	// Redact removes secrets from every text recorded in lore.
	Redact func(string) string
	// Shell runs Verify (default: sh -c).
	Shell []string
}

// Result is a finished run.
type Result struct {
	LoopID     string
	Iterations int
	Outcome    string // success, partial, failure
	Unsent     int    // records lore did not receive (unreachable)
	Last       Verdict
}

// Run drives the loop: start it in lore, then per iteration build the
// prompt, run the agent, run verify, record the iteration; complete the
// loop with its outcome. It returns ErrNotPassed, ErrInterrupted,
// ErrUnreachable or ErrCannotStart (wrapped) when the loop did not pass.
func Run(ctx context.Context, c Config, lore Lore) (Result, error) {
	if c.MaxIterations <= 0 {
		c.MaxIterations = 10
	}
	if c.Redact == nil {
		c.Redact = Redact
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.AgentOut == nil {
		c.AgentOut = io.Discard
	}
	if c.Agent0 == "" && len(c.Agent) > 0 {
		c.Agent0 = filepath.Base(c.Agent[0])
	}
	if c.Dir == "" {
		c.Dir = "."
	}
	id, err := crossloop.NewLoopID(c.Task)
	if err != nil {
		return Result{}, err
	}
	r := &runner{c: c, lore: lore, res: Result{LoopID: id}}
	start := map[string]any{"loop_id": id, "task": c.Redact(c.Task), "agent": c.Agent0}
	if c.Category != "" {
		start["category"] = c.Category
	}
	if err := r.send(ctx, "start", start, id+"-start"); err != nil {
		switch {
		case ctx.Err() != nil:
			// Interrupted while starting: lore may hold the start already
			// (only its reply was lost). The start stays pending and is sent
			// again, under its key, before the completion below.
		case errors.Is(err, ErrUnreachable) && c.OnUnreachable != UnreachableContinue:
			return r.res, fmt.Errorf("refusing to start (--on-unreachable fail): %w", err)
		case !errors.Is(err, ErrUnreachable):
			return r.res, err
		}
	}
	if ctx.Err() == nil {
		fmt.Fprintf(c.Log, "lore: loop %s started (verify: %s)\n", id, c.Verify)
	}
	var hist []Verdict
	outcome, runErr := "failure", error(nil)
	for n := 1; n <= c.MaxIterations && ctx.Err() == nil; n++ {
		v, passed, err := r.iteration(ctx, n)
		if err != nil {
			// A loop stopped by anything but its verify is partial: it says
			// nothing of the approach (no failure anti-pattern from it).
			outcome, runErr = "partial", err
			break
		}
		hist = append(hist, v)
		r.res.Last = v
		if passed {
			outcome = "success"
			break
		}
		if n == c.MaxIterations {
			runErr = fmt.Errorf("%w within %d iteration(s); last error: %s", ErrNotPassed, n, describe(v))
		}
	}
	// The outcome is decided here, once: a Ctrl-C at any point before (while
	// starting, running the agent or verify, or sending a record) makes the
	// loop partial and the run ErrInterrupted, whatever error the interrupted
	// step returned. The exit status always agrees with the recorded outcome.
	if ctx.Err() != nil {
		outcome, runErr = "partial", fmt.Errorf("%w after %d iteration(s)", ErrInterrupted, r.res.Iterations)
	}
	r.res.Outcome = outcome
	done := map[string]any{"loop_id": id, "outcome": outcome, "iterations": r.res.Iterations}
	if outcome == "failure" {
		done["failure_mode"] = FailureMode(hist)
	}
	// The completion is recorded even after Ctrl-C: on a fresh context. The
	// records an interrupt left pending (the start, an iteration) go first.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := r.send(cctx, "complete", done, id+"-complete"); err != nil && !errors.Is(err, ErrUnreachable) {
		return r.res, errors.Join(runErr, err)
	}
	if r.res.Unsent = len(r.pending); r.res.Unsent > 0 {
		fmt.Fprintf(c.Log, "lore: unreachable: %d record(s) of loop %s were not sent\n", r.res.Unsent, id)
		// Records lost outrank the loop's own result: nothing is silently unrecorded.
		runErr = errors.Join(fmt.Errorf("%w: %d record(s) of loop %s not sent", ErrUnreachable, r.res.Unsent, id), runErr)
	}
	fmt.Fprintf(c.Log, "lore: loop %s %s after %d iteration(s)\n", id, outcome, r.res.Iterations)
	return r.res, runErr
}

// describe is a verdict in one line for the user.
func describe(v Verdict) string {
	var parts []string
	for _, s := range []string{v.ErrorType, v.Message} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	s := strings.Join(parts, ": ")
	if v.Location != "" {
		s += " at " + v.Location
	}
	if s == "" {
		s = "verify failed (no error recognised in its output)"
	}
	return s
}

// FailureMode names why a loop that hit its iteration limit failed: the
// same error signature in its last three iterations is repeated_same_error,
// anything else infinite_loop (it never converged).
func FailureMode(hist []Verdict) string {
	if len(hist) >= 3 {
		last := hist[len(hist)-3:]
		sig := last[0].ErrorType + "\x00" + last[0].Message
		if last[0].HasError() && last[1].ErrorType+"\x00"+last[1].Message == sig && last[2].ErrorType+"\x00"+last[2].Message == sig {
			return "repeated_same_error"
		}
	}
	return "infinite_loop"
}

type call struct {
	name string
	args map[string]any
	key  string
}

type runner struct {
	c       Config
	lore    Lore
	res     Result
	pending []call // records not yet received by lore, in order
}

// send records one loop event, after any still pending; an unreachable lore
// keeps it pending. Each call carries its idempotency key, so a retry after
// a lost reply is not counted twice.
func (r *runner) send(ctx context.Context, name string, args map[string]any, key string) error {
	r.pending = append(r.pending, call{name, args, key})
	for len(r.pending) > 0 {
		p := r.pending[0]
		if err := r.callRetry(ctx, "loop", p.name, p.args, p.key, nil); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				// Interrupted, not lore's failure: the record stays pending
				// for the completion, which is sent on a fresh context (whose
				// own time limit running out is lore not answering).
				return fmt.Errorf("%w: loop %s %s not sent yet: %v", ErrInterrupted, r.res.LoopID, p.name, err)
			}
			if errors.Is(err, ErrUnreachable) {
				fmt.Fprintf(r.c.Log, "lore: unreachable, loop %s continues unrecorded for now (%d pending): %v\n", r.res.LoopID, len(r.pending), err)
			}
			return err
		}
		r.pending = r.pending[1:]
	}
	return nil
}

// callRetry retries an unreachable lore a few times, with the same key.
func (r *runner) callRetry(ctx context.Context, group, name string, args any, key string, out any) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = r.lore.Call(ctx, group, name, args, key, out); err == nil || !errors.Is(err, ErrUnreachable) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 500 * time.Millisecond):
		}
	}
	return err
}

// iteration runs iteration n; passed reports verify's verdict.
func (r *runner) iteration(ctx context.Context, n int) (Verdict, bool, error) {
	c := r.c
	began := time.Now()
	snap := gitSnapshot(ctx, c.Dir)
	prompt := c.Prompt
	if c.Inject {
		if extra := r.context(ctx, n); extra != "" {
			prompt = strings.TrimRight(prompt, "\n") + "\n\n" + extra
		}
	}
	fmt.Fprintf(c.Log, "lore: iteration %d/%d of %s\n", n, c.MaxIterations, r.res.LoopID)
	timedOut, err := runAgent(ctx, c, prompt)
	if err != nil {
		return Verdict{}, false, err
	}
	if timedOut {
		fmt.Fprintf(c.Log, "lore: the agent did not finish within --iteration-timeout %s; killed it, verifying the tree as it stands\n", c.IterationTimeout)
	}
	out, passed, err := runVerify(ctx, c)
	if err != nil {
		return Verdict{}, false, err
	}
	v := ParseVerify(out)
	// A verify whose output carries no counts still is one check.
	if passed && v.Passed == 0 {
		v.Passed = 1
	}
	if passed {
		v.Failed = 0
		v.ErrorType, v.Message, v.Location = "", "", ""
	} else if v.Failed == 0 {
		v.Failed = 1
	}
	if !passed && !v.HasError() {
		v.ErrorType, v.Message = "VerifyFailed", lastLine(out)
	}
	d := gitDiff(ctx, c.Dir, snap)
	rec := map[string]any{"loop_id": r.res.LoopID, "iteration": n, "tests_passed": v.Passed, "tests_failed": v.Failed,
		"agent": c.Agent0, "duration_ms": time.Since(began).Milliseconds()}
	red := c.Redact
	for k, s := range map[string]string{"error_type": v.ErrorType, "error_message": v.Message, "location": v.Location,
		"fix_description": d.Description, "fix_diff": d.Patch} {
		if s != "" {
			rec[k] = red(s)
		}
	}
	tools := []string{c.Agent0}
	if v.Tool != "" {
		tools = append(tools, v.Tool)
	}
	if timedOut {
		tools = append(tools, "timeout")
	}
	rec["tools_used"] = tools
	if len(d.Files) > 0 {
		files := make([]string, len(d.Files))
		for i, f := range d.Files {
			files[i] = red(f)
		}
		rec["files_changed"] = files
	}
	r.res.Iterations = n
	if err := r.send(ctx, "iterate", rec, fmt.Sprintf("%s-it-%d", r.res.LoopID, n)); err != nil && !errors.Is(err, ErrUnreachable) {
		return v, passed, err
	} else if err != nil && c.OnUnreachable != UnreachableContinue {
		return v, passed, fmt.Errorf("recording iteration %d (--on-unreachable fail): %w", n, err)
	}
	if passed {
		fmt.Fprintf(c.Log, "lore: verify passed in iteration %d\n", n)
	} else {
		fmt.Fprintf(c.Log, "lore: verify failed: %s\n", describe(v))
	}
	return v, passed, nil
}

// context is lore's block for the prompt: the cross-loop patterns for the
// loop (the injection is recorded on the loop the first time) and the
// knowledge for the task within the headroom budget. An unreachable lore
// gives an empty block and a message.
func (r *runner) context(ctx context.Context, n int) string {
	var blocks []string
	var pat struct {
		Text string `json:"text"`
	}
	a := map[string]any{"task": r.c.Task}
	if r.c.Category != "" {
		a["category"] = r.c.Category
	}
	if r.c.TopK > 0 {
		a["top_k"] = r.c.TopK
	}
	if n == 1 && len(r.pending) == 0 {
		a["loop_id"] = r.res.LoopID
	}
	if err := r.callRetry(ctx, "patterns", "inject", a, fmt.Sprintf("%s-inject-%d", r.res.LoopID, n), &pat); err != nil {
		fmt.Fprintf(r.c.Log, "lore: no cross-loop patterns for this iteration: %v\n", err)
	} else if pat.Text != "" {
		blocks = append(blocks, strings.TrimRight(pat.Text, "\n"))
	}
	var kn struct {
		Text string `json:"text"`
	}
	if err := r.callRetry(ctx, "knowledge", "inject", map[string]any{"task": r.c.Task, "headroom": r.c.Headroom},
		fmt.Sprintf("%s-knowledge-%d", r.res.LoopID, n), &kn); err != nil {
		fmt.Fprintf(r.c.Log, "lore: no knowledge for this iteration: %v\n", err)
	} else if kn.Text != "" {
		blocks = append(blocks, strings.TrimRight(kn.Text, "\n"))
	}
	return strings.Join(blocks, "\n\n")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// promptFile writes the prompt where the agent command names it.
func promptFile(prompt string) (string, func(), error) {
	f, err := os.CreateTemp("", "lore-ralph-prompt-*.md")
	if err != nil {
		return "", nil, fmt.Errorf("write the prompt file: %w", err)
	}
	_, err = f.WriteString(prompt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", nil, fmt.Errorf("write the prompt file: %w", err)
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}
