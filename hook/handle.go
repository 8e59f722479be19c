package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/ralph"
)

// Handler acts on Events: it records them in lore and returns the context
// text a SessionStart answers with.
type Handler struct {
	Lore ralph.Lore
	// StateDir holds one small file per running session: what must survive
	// between hook calls (the start time, counts, the last test verdict).
	StateDir string
	// Task names the session's work; empty: "<agent> session in <folder>".
	Task     string
	Headroom float64 // knowledge injection budget (fraction of the context window free)
	Redact   func(string) string
	Now      func() time.Time
	// EndAtGreenStop completes the loop at a turn's end when the newest test
	// run passed, for agents whose hooks have no session end (Codex); the
	// session's next turn starts its next loop.
	EndAtGreenStop bool
}

// state is a session's memory between hook calls. Every record's key is
// derived from the loop id (itself derived from the session id) and the
// event, so a hook call repeated records nothing twice.
type state struct {
	LoopID     string         `json:"loop_id"`
	Gen        int            `json:"gen,omitempty"` // loops of the session completed before this one
	StartSent  bool           `json:"start_sent,omitempty"`
	Injections int            `json:"injections,omitempty"` // SessionStarts answered (startup, resume, compact...)
	Task       string         `json:"task"`
	Started    time.Time      `json:"started"`
	TurnFrom   time.Time      `json:"turn_from,omitempty"` // when the current turn began (the previous one's end)
	Iterations int            `json:"iterations"`
	Errors     int            `json:"errors"`
	Retries    int            `json:"retries"`
	Failed     map[string]int `json:"failed,omitempty"` // failures per command: a repeated one is a retry
	Tools      []string       `json:"tools,omitempty"`  // tools of the current turn
	Last       *ralph.Verdict `json:"last,omitempty"`   // the newest test run's verdict
	TurnError  *ralph.Verdict `json:"turn_error,omitempty"`
	Files      []string       `json:"files,omitempty"` // files the current turn edited
	Diff       string         `json:"diff,omitempty"`  // the current turn's edits
}

// LoopID is the loop of an agent's session, a pure function of the two.
func LoopID(agent, session string) string {
	h := sha256.Sum256([]byte(agent + "\x00" + session))
	return crossloop.LoopIDWith(agent+" session", [4]byte(h[:4]))
}

func (h *Handler) statePath(e Event) string {
	s := sha256.Sum256([]byte(e.Agent + "\x00" + e.SessionID))
	return filepath.Join(h.StateDir, e.Agent+"-"+hex.EncodeToString(s[:12])+".json")
}

func (h *Handler) load(e Event) (*state, error) {
	st := &state{}
	b, err := os.ReadFile(h.statePath(e))
	if err == nil {
		if err := json.Unmarshal(b, st); err != nil {
			return nil, fmt.Errorf("session state %s: %w", h.statePath(e), err)
		}
		return st, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session state: %w", err)
	}
	st.LoopID = LoopID(e.Agent, e.SessionID)
	st.Task = h.Task
	if st.Task == "" {
		st.Task = e.Agent + " session"
		if e.Cwd != "" {
			st.Task += " in " + filepath.Base(e.Cwd)
		}
	}
	st.Started = h.now()
	return st, nil
}

func (h *Handler) save(e Event, st *state) error {
	if err := os.MkdirAll(h.StateDir, 0o700); err != nil {
		return fmt.Errorf("session state: %w", err)
	}
	b, _ := json.Marshal(st)
	tmp := h.statePath(e) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("session state: %w", err)
	}
	return os.Rename(tmp, h.statePath(e))
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) red(s string) string {
	if h.Redact != nil {
		return h.Redact(s)
	}
	return ralph.Redact(s)
}

// Handle acts on one Event and returns the context for the agent (only at
// SessionStart). The session's loop is started on its first event, so a
// session whose SessionStart hook did not run is still recorded.
func (h *Handler) Handle(ctx context.Context, e Event) (string, error) {
	if e.Kind == Ignore {
		return "", nil
	}
	if err := os.MkdirAll(h.StateDir, 0o700); err != nil {
		return "", fmt.Errorf("session state: %w", err)
	}
	unlock, err := lockFile(h.statePath(e) + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	st, err := h.load(e)
	if err != nil {
		return "", err
	}
	start := map[string]any{"loop_id": st.LoopID, "task": h.red(st.Task), "agent": e.Agent}
	if !st.StartSent {
		if err := h.record(ctx, "loop", "start", start, st.LoopID+"-start"); err != nil {
			return "", fmt.Errorf("loop.start: %w", err)
		}
		st.StartSent = true
	}
	var text string
	switch e.Kind {
	case SessionStart:
		text = h.inject(ctx, st, e)
	case ToolDone, ToolFailed:
		err = h.tool(ctx, st, e)
	case TurnEnd:
		err = h.turn(ctx, st, e)
		if err == nil && h.EndAtGreenStop && st.Last != nil && st.Last.Failed == 0 && !st.Last.HasError() {
			if err = h.end(ctx, st, e); err == nil {
				next := &state{Gen: st.Gen + 1, Task: st.Task, Started: h.now()}
				next.LoopID = LoopID(e.Agent, fmt.Sprintf("%s#%d", e.SessionID, next.Gen))
				st = next
			}
		}
	case SessionEnd:
		if err = h.end(ctx, st, e); err == nil {
			os.Remove(h.statePath(e) + ".lock")
			if rerr := os.Remove(h.statePath(e)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return "", fmt.Errorf("session state: %w", rerr)
			}
			return "", nil
		}
	}
	if serr := h.save(e, st); serr != nil {
		err = errors.Join(err, serr)
	}
	return text, err
}

// record sends one of the session's records under its key. A record's key
// names a fact of the session (its start, its n-th iteration, its outcome),
// recorded once: a hook call repeated after its state was spent (a second
// SessionEnd, whose state file the first removed) sends the fact again
// with details computed again (a duration), which lore refuses as another
// request under the key (ralph.ErrKeyReused); the fact is recorded
// already, as the first call sent it, so that refusal is not an error here.
func (h *Handler) record(ctx context.Context, group, name string, args any, key string) error {
	if err := h.Lore.Call(ctx, group, name, args, key, nil); err != nil && !errors.Is(err, ralph.ErrKeyReused) {
		return err
	}
	return nil
}

// inject is lore's block for the session: the cross-loop patterns (the
// injection recorded on the loop) and the knowledge for its task.
func (h *Handler) inject(ctx context.Context, st *state, e Event) string {
	var blocks []string
	var out struct {
		Text string `json:"text"`
	}
	// The loop records what was injected once, at its first SessionStart;
	// a resumed or compacted session is answered again.
	st.Injections++
	key := fmt.Sprintf("%s-inject-%d", st.LoopID, st.Injections)
	a := map[string]any{"task": st.Task}
	if st.Injections == 1 {
		a["loop_id"] = st.LoopID
	}
	if err := h.Lore.Call(ctx, "patterns", "inject", a, key, &out); err != nil {
		fmt.Fprintf(os.Stderr, "lore hook: no cross-loop patterns: %v\n", err)
	} else if t := strings.TrimSpace(out.Text); t != "" {
		blocks = append(blocks, t)
	}
	out.Text = ""
	headroom := h.Headroom
	if headroom <= 0 {
		headroom = 0.5
	}
	if err := h.Lore.Call(ctx, "knowledge", "inject", map[string]any{"task": st.Task, "headroom": headroom}, key+"-knowledge", &out); err != nil {
		fmt.Fprintf(os.Stderr, "lore hook: no knowledge: %v\n", err)
	} else if t := strings.TrimSpace(out.Text); t != "" {
		blocks = append(blocks, t)
	}
	return strings.Join(blocks, "\n\n")
}

// tool records a failed tool call or test run as an error of the session's
// bead (the loop id), and keeps the newest test verdict for the turn.
func (h *Handler) tool(ctx context.Context, st *state, e Event) error {
	if e.Tool != "" && !contains(st.Tools, e.Tool) {
		st.Tools = append(st.Tools, e.Tool)
	}
	if e.File != "" {
		f := e.File
		if e.Cwd != "" {
			if r, err := filepath.Rel(e.Cwd, f); err == nil && !strings.HasPrefix(r, "..") {
				f = r
			}
		}
		if !contains(st.Files, f) {
			st.Files = append(st.Files, f)
		}
		if e.Diff != "" && len(st.Diff) < maxDiff {
			st.Diff += "--- " + f + "\n" + e.Diff
		}
	}
	v, isTest := testRun(e)
	if isTest {
		if v.Tool != "" && !contains(st.Tools, v.Tool) {
			st.Tools = append(st.Tools, v.Tool)
		}
		// A passing run without counts still is one check (as lore ralph run counts it).
		if v.Failed == 0 && !v.HasError() && v.Passed == 0 && e.Kind != ToolFailed {
			v.Passed = 1
		}
		st.Last = &v
	}
	failed := e.Kind == ToolFailed || (isTest && (v.Failed > 0 || v.HasError()))
	if !failed {
		return nil
	}
	if e.Kind == ToolFailed && !isTest {
		v = ralph.Verdict{ErrorType: "ToolFailed", Message: lastLine(e.Output)}
		if e.Output == "" {
			v.Message = e.Tool + " failed"
		}
	} else if !v.HasError() {
		v.ErrorType, v.Message = "TestFailure", lastLine(e.Output)
	}
	if isTest {
		st.Last = &v
	}
	// A parsed test failure says more than a bare failed tool call: the
	// turn keeps the former.
	if isTest || st.TurnError == nil {
		st.TurnError = &v
	}
	st.Errors++
	if st.Failed == nil {
		st.Failed = map[string]int{}
	}
	sig := e.Tool + "\x00" + e.Command
	if st.Failed[sig] > 0 {
		st.Retries++
	}
	st.Failed[sig]++
	id := e.ToolUseID
	if id == "" {
		id = fmt.Sprint(st.Errors)
	}
	// error.recorded/v1 knows five error types: a failing test or compile
	// is a validation error, any other failed tool call a tool failure; the
	// parsed signature leads the message.
	kind := "tool_failure"
	if isTest {
		kind = "validation"
	}
	msg := v.Message
	if v.ErrorType != "" {
		msg = v.ErrorType + ": " + msg
	}
	rec := map[string]any{"bead_id": st.LoopID, "error_type": kind, "message": h.red(msg), "tool_name": e.Tool}
	if e.Command != "" {
		rec["context"] = h.red(e.Command)
	}
	if v.Location != "" {
		rec["stack_trace"] = h.red(v.Location)
	}
	if err := h.record(ctx, "learning", "record_error", rec, st.LoopID+"-error-"+id); err != nil {
		return fmt.Errorf("learning.record_error: %w", err)
	}
	return nil
}

// turn records the agent's finished turn as one loop iteration: the error
// it met last, the newest test counts and the tools it used.
func (h *Handler) turn(ctx context.Context, st *state, e Event) error {
	n := st.Iterations + 1
	from := st.TurnFrom
	if from.IsZero() {
		from = st.Started
	}
	rec := map[string]any{"loop_id": st.LoopID, "iteration": n, "agent": e.Agent,
		"duration_ms": max(h.now().Sub(from).Milliseconds(), 0)}
	if len(st.Tools) > 0 {
		rec["tools_used"] = st.Tools
	}
	if st.Last != nil {
		rec["tests_passed"], rec["tests_failed"] = st.Last.Passed, st.Last.Failed
	}
	if len(st.Files) > 0 {
		files := make([]string, len(st.Files))
		for i, f := range st.Files {
			files[i] = h.red(f)
		}
		rec["files_changed"] = files
		rec["fix_description"] = h.red("edit " + strings.Join(st.Files, ", "))
		if st.Diff != "" {
			rec["fix_diff"] = h.red(truncate(st.Diff, maxDiff))
		}
	}
	if v := st.TurnError; v != nil {
		for k, s := range map[string]string{"error_type": v.ErrorType, "error_message": v.Message, "location": v.Location} {
			if s != "" {
				rec[k] = h.red(s)
			}
		}
	}
	if err := h.record(ctx, "loop", "iterate", rec, fmt.Sprintf("%s-it-%d", st.LoopID, n)); err != nil {
		return fmt.Errorf("loop.iterate: %w", err)
	}
	st.Iterations, st.Tools, st.TurnError, st.Files, st.Diff = n, nil, nil, nil, ""
	st.TurnFrom = h.now()
	return nil
}

// end records the session's outcome on its bead (duration, errors,
// retries) and completes its loop: success when the newest test run
// passed, failure when it failed, partial when no test ran.
func (h *Handler) end(ctx context.Context, st *state, e Event) error {
	if len(st.Tools) > 0 || st.TurnError != nil || len(st.Files) > 0 || st.Iterations == 0 {
		if err := h.turn(ctx, st, e); err != nil {
			return err
		}
	}
	outcome := "partial"
	if st.Last != nil {
		outcome = "failure"
		if st.Last.Failed == 0 && !st.Last.HasError() {
			outcome = "success"
		}
	}
	errs := st.Errors
	rec := map[string]any{"bead_id": st.LoopID, "duration_ms": max(h.now().Sub(st.Started).Milliseconds(), 0),
		"error_count": errs, "retry_count": st.Retries, "success": outcome == "success"}
	if err := h.record(ctx, "learning", "record_outcome", rec, st.LoopID+"-outcome"); err != nil {
		return fmt.Errorf("learning.record_outcome: %w", err)
	}
	done := map[string]any{"loop_id": st.LoopID, "outcome": outcome, "iterations": st.Iterations}
	if outcome == "failure" {
		done["failure_mode"] = "infinite_loop"
	}
	if err := h.record(ctx, "loop", "complete", done, st.LoopID+"-complete"); err != nil {
		return fmt.Errorf("loop.complete: %w", err)
	}
	return nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// maxDiff bounds the diff recorded with an iteration (as lore ralph run's).
const maxDiff = 8000

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
