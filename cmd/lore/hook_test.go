package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loredev/lore/hook"
	"github.com/loredev/lore/projector/crossloop"
)

// claudeInput is a Claude Code hook input as documented
// (https://code.claude.com/docs/en/hooks): common fields plus the event's.
func claudeInput(session, event string, extra map[string]any) string {
	m := map[string]any{"session_id": session, "transcript_path": "/tmp/" + session + ".jsonl",
		"cwd": "/home/u/payments", "permission_mode": "default", "hook_event_name": event}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func bashRun(cmd, stdout string) map[string]any {
	return map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": cmd},
		"tool_response": map[string]any{"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false},
		"tool_use_id":   fmt.Sprintf("toolu_%x", len(stdout))}
}

const goTestFail = "--- FAIL: TestRetry (0.00s)\n    retry_test.go:12: want 3 attempts, got 1\nFAIL\nFAIL\tpay\t0.01s\n"
const goTestPass = "ok  \tpay\t0.01s\n"

// TestHookClaudeCodeSession drives `lore hook claude-code` through one
// Claude Code session against a real lore: a failing test run is an error
// of the session's bead, each Stop an iteration, SessionEnd the outcome and
// the loop's completion; repeated hook calls record nothing twice; a later
// session on the same task starts with what the first one taught.
func TestHookClaudeCodeSession(t *testing.T) {
	d := serveLore(t)
	bg := context.Background()
	task := []string{"--task", "Fix the flaky retry in the payments client"}
	hookCall := func(in string) string {
		t.Helper()
		code, out, errs := cli(t, bg, in, append(slices.Clone(d), append([]string{"hook", "claude-code"}, task...)...)...)
		if code != 0 || strings.Contains(errs, "lore hook") {
			t.Fatalf("hook: exit %d, stderr %q", code, errs)
		}
		return out
	}
	s := "sess-1"
	hookCall(claudeInput(s, "SessionStart", map[string]any{"source": "startup"}))
	fail := claudeInput(s, "PostToolUse", bashRun("go test ./...", goTestFail))
	hookCall(fail)
	hookCall(claudeInput(s, "PostToolUseFailure", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "go test ./..."},
		"tool_use_id": "toolu_f2", "error": "Command exited with non-zero status code 1"}))
	hookCall(claudeInput(s, "Stop", map[string]any{"stop_hook_active": false}))
	hookCall(claudeInput(s, "PostToolUse", map[string]any{"tool_name": "Edit", "tool_input": map[string]any{"file_path": "/home/u/payments/retry.go",
		"old_string": "attempts := 1", "new_string": "attempts := 3"}, "tool_response": map[string]any{"filePath": "/home/u/payments/retry.go"}}))
	hookCall(claudeInput(s, "PostToolUse", bashRun("go test ./...", goTestPass)))
	hookCall(claudeInput(s, "Stop", map[string]any{"stop_hook_active": false}))
	hookCall(claudeInput(s, "SessionEnd", map[string]any{"reason": "other"}))
	hookCall(claudeInput(s, "SessionEnd", map[string]any{"reason": "other"})) // repeated: recorded once

	id := hook.LoopID(hook.ClaudeCode, s)
	code, out, errs := cli(t, bg, "", append(slices.Clone(d), "ralph", "status", "--json")...)
	var ls []crossloop.LoopSummary
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("status: exit %d %q %q", code, out, errs)
	}
	i := slices.IndexFunc(ls, func(l crossloop.LoopSummary) bool { return l.ID == id })
	if i < 0 || ls[i].Iterations != 2 || ls[i].Outcome != "success" || ls[i].Agent != hook.ClaudeCode {
		t.Fatalf("loop %s not recorded as 2 iterations, success: %+v", id, ls)
	}
	// Both failures of the first turn are errors of the session's bead.
	code, out, errs = cli(t, bg, "", append(slices.Clone(d), "errors", "stats", id, "--json")...)
	t.Logf("error stats: %d %s %s", code, out, errs)
	var es struct {
		Total int `json:"total"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &es) != nil || es.Total != 2 {
		t.Fatalf("errors of bead %s: exit %d %q %q", id, code, out, errs)
	}

	// A later session on the same task is answered with lore's context.
	out = hookCall(claudeInput("sess-2", "SessionStart", map[string]any{"source": "startup"}))
	var reply struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.HookSpecificOutput.HookEventName != "SessionStart" {
		t.Fatalf("SessionStart reply %q: %v", out, err)
	}
	t.Logf("context:\n%s", reply.HookSpecificOutput.AdditionalContext)
	if ctx := reply.HookSpecificOutput.AdditionalContext; !strings.Contains(ctx, "Error Patterns") || !strings.Contains(ctx, "Fix TestFailure: edit retry.go") {
		t.Fatalf("the second session was not given the first one's fix:\n%s", ctx)
	}
	if states, _ := filepath.Glob(filepath.Join(d[1], "hooks", "*.json")); len(states) != 1 {
		t.Fatalf("session state files: %v (the ended session's must be gone, the running one's kept)", states)
	}
}

// TestHookNeverBlocksTheAgent: malformed input, an unknown event and a lore
// that does not answer all exit 0 with nothing on stdout (Claude Code
// reads exit code 2 as "block"), the problem said on stderr.
func TestHookNeverBlocksTheAgent(t *testing.T) {
	d := []string{"--data", t.TempDir(), "--nats", "nats://127.0.0.1:1", "--timeout", "2s"}
	for _, c := range []struct{ name, in, stderr string }{
		{"not json", "{", "claude-code hook input"},
		{"unknown event", `{"session_id":"s","hook_event_name":"SomethingNew"}`, ""},
		{"lore unreachable", claudeInput("s", "SessionStart", map[string]any{"source": "startup"}), "loop.start"},
	} {
		code, out, errs := cli(t, context.Background(), c.in, append(slices.Clone(d), "hook", "claude-code")...)
		if code != 0 || out != "" || !strings.Contains(errs, c.stderr) || (c.stderr == "") != (errs == "") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
		}
	}
}

// TestHookInstallClaudeCode: install adds lore's hooks to a settings file
// holding others, twice is once, uninstall gives the file back byte for
// byte; bad arguments are exit code 2.
func TestHookInstallClaudeCode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	orig := `{
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 10}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "afplay done.aiff"}]}]
  }
}
`
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	for i := 0; i < 2; i++ {
		if code, _, errs := cli(t, bg, "", "hook", "install", "claude-code", "--settings", path); code != 0 {
			t.Fatalf("install: exit %d: %s", code, errs)
		}
	}
	b, _ := os.ReadFile(path)
	var doc struct {
		Hooks map[string][]struct {
			Matcher string                     `json:"matcher"`
			Hooks   []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("installed settings are not JSON: %v\n%s", err, b)
	}
	for _, ev := range []string{"SessionStart", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"} {
		n := 0
		for _, g := range doc.Hooks[ev] {
			for _, h := range g.Hooks {
				if h.Command == hook.ClaudeCodeCommand {
					n++
				}
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d lore hooks after two installs:\n%s", ev, n, b)
		}
	}
	if len(doc.Hooks["Stop"]) != 2 || len(doc.Hooks["PreToolUse"]) != 1 {
		t.Fatalf("other hooks disturbed:\n%s", b)
	}
	if code, _, errs := cli(t, bg, "", "hook", "uninstall", "claude-code", "--settings", path); code != 0 {
		t.Fatalf("uninstall: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("uninstall did not give the file back:\n%s", b)
	}
	for _, args := range [][]string{{"hook", "install"}, {"hook", "install", "cursor"},
		{"hook", "install", "claude-code", "--project", "--user"}} {
		if code, _, _ := cli(t, bg, "", args...); code != exitBadInput {
			t.Fatalf("%v: exit %d, want %d", args, code, exitBadInput)
		}
	}
	bad := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(bad, []byte("[1,2]"), 0o644)
	if code, _, errs := cli(t, bg, "", "hook", "install", "claude-code", "--settings", bad); code != exitBadInput || !strings.Contains(errs, "not a JSON object") {
		t.Fatalf("settings not an object: exit %d %q", code, errs)
	}
}

// TestHookCodexSession: Codex's hooks (Claude Code's format, no session
// end) through the same handler: the turn whose test run passed completes
// the loop, and the session's next turn is the next loop.
func TestHookCodexSession(t *testing.T) {
	d := serveLore(t)
	bg := context.Background()
	hookCall := func(in string) {
		t.Helper()
		code, out, errs := cli(t, bg, in, append(slices.Clone(d), "hook", "codex")...)
		if code != 0 || errs != "" {
			t.Fatalf("hook: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	}
	// Codex's PostToolUse input adds turn_id and model to Claude Code's fields.
	codex := func(event string, extra map[string]any) string {
		m := map[string]any{"turn_id": "turn-1", "model": "gpt-5-codex"}
		for k, v := range extra {
			m[k] = v
		}
		return claudeInput("cx-1", event, m)
	}
	hookCall(codex("SessionStart", map[string]any{"source": "startup"}))
	hookCall(codex("PostToolUse", bashRun("go test ./...", goTestFail)))
	hookCall(codex("Stop", map[string]any{"stop_hook_active": false}))
	hookCall(codex("PostToolUse", bashRun("go test ./...", goTestPass)))
	hookCall(codex("Stop", map[string]any{"stop_hook_active": false}))
	hookCall(codex("PostToolUse", bashRun("go test ./...", goTestFail)))
	hookCall(codex("Stop", map[string]any{"stop_hook_active": false}))

	code, out, errs := cli(t, bg, "", append(slices.Clone(d), "ralph", "status", "--json")...)
	var ls []crossloop.LoopSummary
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("status: exit %d %q %q", code, out, errs)
	}
	byID := map[string]crossloop.LoopSummary{}
	for _, l := range ls {
		byID[l.ID] = l
	}
	first, next := byID[hook.LoopID(hook.Codex, "cx-1")], byID[hook.LoopID(hook.Codex, "cx-1#1")]
	if first.Outcome != "success" || first.Iterations != 2 || first.Agent != hook.Codex {
		t.Fatalf("first loop: %+v (all: %+v)", first, ls)
	}
	if !next.Running() || next.Iterations != 1 {
		t.Fatalf("next loop: %+v (all: %+v)", next, ls)
	}

	path := filepath.Join(t.TempDir(), "hooks.json")
	if code, _, errs := cli(t, bg, "", "hook", "install", "codex", "--settings", path); code != 0 {
		t.Fatalf("install codex: exit %d %s", code, errs)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"command":"lore hook codex"`) || !strings.Contains(string(b), `"Stop"`) {
		t.Fatalf("codex hooks.json: %s", b)
	}
	if code, _, errs := cli(t, bg, "", "hook", "uninstall", "codex", "--settings", path); code != 0 {
		t.Fatalf("uninstall codex: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != "{}" {
		t.Fatalf("codex hooks.json after uninstall: %q", b)
	}
}
