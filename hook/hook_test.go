package hook

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Samples shaped as the hook inputs documented at https://code.claude.com/docs/en/hooks.
const (
	inStart = `{"session_id":"abc123","transcript_path":"/home/u/.claude/projects/p/abc123.jsonl","cwd":"/home/u/payments",` +
		`"permission_mode":"default","hook_event_name":"SessionStart","source":"startup","model":"claude-sonnet-4-6"}`
	inPostBash = `{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"/home/u/payments","permission_mode":"default",` +
		`"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go test ./...","description":"Run tests"},` +
		`"tool_response":{"stdout":"--- FAIL: TestRetry (0.00s)\n    retry_test.go:12: want 3 attempts, got 1\nFAIL\nFAIL\tpay\t0.01s\n","stderr":"","interrupted":false,"isImage":false},` +
		`"tool_use_id":"toolu_01ABC"}`
	inPostFailure = `{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"/home/u/payments","hook_event_name":"PostToolUseFailure",` +
		`"tool_name":"Bash","tool_input":{"command":"npm test"},"tool_use_id":"toolu_02","error":"Command exited with non-zero status code 1","is_interrupt":false}`
	inStop = `{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"/home/u/payments","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false}`
	inEnd  = `{"session_id":"abc123","transcript_path":"/t.jsonl","cwd":"/home/u/payments","hook_event_name":"SessionEnd","reason":"other"}`
	inPre  = `{"session_id":"abc123","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
)

func TestParseClaudeCode(t *testing.T) {
	for _, c := range []struct {
		name, in string
		kind     Kind
		cmd, out string
		err      bool
	}{
		{"start", inStart, SessionStart, "", "", false},
		{"post tool use", inPostBash, ToolDone, "go test ./...", "--- FAIL: TestRetry", false},
		{"failure", inPostFailure, ToolFailed, "npm test", "non-zero status", false},
		{"stop", inStop, TurnEnd, "", "", false},
		{"end", inEnd, SessionEnd, "", "", false},
		{"unhandled event", inPre, Ignore, "", "", false},
		{"unknown event", `{"session_id":"x","hook_event_name":"SomethingNew","extra":[1]}`, Ignore, "", "", false},
		{"string response", `{"session_id":"x","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":"ok 3 passed"}`, ToolDone, "", "ok 3 passed", false},
		{"error not a string", `{"session_id":"x","hook_event_name":"PostToolUseFailure","tool_name":"Bash","error":{"stderr":"boom"}}`, ToolFailed, "", "boom", false},
		{"edit", `{"session_id":"x","hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{"file_path":"/p/a.go","old_string":"a","new_string":"b"},"tool_response":{"filePath":"/p/a.go"}}`, ToolDone, "", "", false},
		{"not json", `{"session_id":`, Ignore, "", "", true},
		{"no session", `{"hook_event_name":"Stop"}`, Ignore, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseClaudeCode([]byte(c.in))
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if e.Kind != c.kind || e.Command != c.cmd || !strings.Contains(e.Output, c.out) {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestTestRunVerdict(t *testing.T) {
	e, _ := ParseClaudeCode([]byte(inPostBash))
	v, ok := testRun(e)
	if !ok || v.Tool != "go test" || v.Failed == 0 || !strings.Contains(v.Location, "retry_test.go:12") {
		t.Fatalf("verdict %+v ok %v", v, ok)
	}
	if _, ok := testRun(Event{Output: "total 0\ndrwxr-x .\n"}); ok {
		t.Fatal("ls output taken for a test run")
	}
}

func TestClaudeCodeReply(t *testing.T) {
	out := ClaudeCodeReply(Event{Kind: SessionStart}, "## Cross-Loop Learning Context\n- Fix: x")
	if gjson.GetBytes(out, "hookSpecificOutput.hookEventName").String() != "SessionStart" ||
		!strings.Contains(gjson.GetBytes(out, "hookSpecificOutput.additionalContext").String(), "Fix: x") {
		t.Fatalf("reply %s", out)
	}
	if ClaudeCodeReply(Event{Kind: SessionStart}, " ") != nil || ClaudeCodeReply(Event{Kind: TurnEnd}, "x") != nil {
		t.Fatal("reply without context or outside SessionStart")
	}
}

func TestLoopIDDeterministic(t *testing.T) {
	a, b := LoopID(ClaudeCode, "abc123"), LoopID(ClaudeCode, "abc123")
	if a != b || a == LoopID(ClaudeCode, "abc124") || !strings.HasPrefix(a, "ralph-") {
		t.Fatalf("ids %q %q", a, b)
	}
}

func TestInstallUninstallKeepsOtherHooks(t *testing.T) {
	for name, orig := range map[string]string{
		"other hooks": `{
  "model": "opus",
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [ { "type": "command", "command": "npx prettier --write \"$CLAUDE_FILE\"" } ]
      }
    ],
    "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done", "timeout": 5 } ] } ]
  },
  "permissions": { "allow": ["Bash(go test:*)"] }
}
`,
		"no hooks": "{\n  \"model\": \"opus\"\n}\n",
		"empty":    "{}",
	} {
		t.Run(name, func(t *testing.T) {
			in, err := InstallClaudeCode([]byte(orig))
			if err != nil {
				t.Fatal(err)
			}
			for _, hk := range claudeHooks {
				if len(ClaudeCodeSpec.entries(in, hk.event)) != 1 {
					t.Fatalf("%s not installed once:\n%s", hk.event, in)
				}
			}
			for _, keep := range []string{"npx prettier", "notify-send done", `"model"`, "Bash(go test:*)"} {
				if strings.Contains(orig, keep) && !strings.Contains(string(in), keep) {
					t.Fatalf("lost %q:\n%s", keep, in)
				}
			}
			again, err := InstallClaudeCode(in)
			if err != nil || string(again) != string(in) {
				t.Fatalf("second install changed the file: %v\n%s", err, again)
			}
			out, err := UninstallClaudeCode(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != orig {
				t.Fatalf("uninstall did not restore the file byte for byte:\n%q\nwant\n%q", out, orig)
			}
		})
	}
	// A lore command in a group shared with another hook: only it goes.
	shared := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"lore hook claude-code"},{"type":"command","command":"say done"}]}]}}`
	out, err := UninstallClaudeCode([]byte(shared))
	if err != nil || strings.Contains(string(out), "lore hook") || !strings.Contains(string(out), "say done") {
		t.Fatalf("shared group: %v %s", err, out)
	}
	if _, err := InstallClaudeCode([]byte(`[1]`)); err == nil {
		t.Fatal("a settings file that is not an object was accepted")
	}
}
