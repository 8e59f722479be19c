package hook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Agent names, as recorded and as named on the command line.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// claudeInput is the part of Claude Code's hook input (JSON on stdin, see
// https://code.claude.com/docs/en/hooks) lore reads. Every event carries
// session_id, transcript_path, cwd and hook_event_name; the others are
// event-specific. Fields not listed are ignored, and a missing field is
// left empty: nothing here is required beyond session_id and the event.
type claudeInput struct {
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	Event     string          `json:"hook_event_name"`
	Source    string          `json:"source"` // SessionStart: startup, resume, clear, compact
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	// ToolResponse is PostToolUse's result of the tool; its shape is the
	// tool's own (an object for Bash), so only its text is read.
	ToolResponse json.RawMessage `json:"tool_response"`
	// Error is PostToolUseFailure's description of the failure (a string;
	// read leniently, as responseText reads any shape).
	Error json.RawMessage `json:"error"`
}

// ParseClaudeCode translates one Claude Code hook input into an Event.
// Events lore does not act on are Ignore; malformed input is an error.
func ParseClaudeCode(raw []byte) (Event, error) { return parseWire(ClaudeCode, raw) }

// ParseCodex translates one Codex hook input into an Event. Codex's hooks
// speak Claude Code's wire format (https://developers.openai.com/codex/hooks:
// the same common fields, SessionStart, PostToolUse with tool_input,
// tool_response and tool_use_id, Stop per turn); it has no SessionEnd.
func ParseCodex(raw []byte) (Event, error) { return parseWire(Codex, raw) }

// parseWire reads the hook wire format Claude Code and Codex share.
func parseWire(agent string, raw []byte) (Event, error) {
	var in claudeInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return Event{}, fmt.Errorf("%s hook input: %w", agent, err)
	}
	if in.SessionID == "" {
		return Event{}, fmt.Errorf("%s hook input: no session_id", agent)
	}
	e := Event{Agent: agent, SessionID: in.SessionID, Cwd: in.Cwd, Source: in.Source,
		Tool: in.ToolName, ToolUseID: in.ToolUseID}
	switch in.Event {
	case "SessionStart":
		e.Kind = SessionStart
	case "PostToolUse":
		e.Kind = ToolDone
		e.Output = responseText(in.ToolResponse)
	case "PostToolUseFailure":
		e.Kind = ToolFailed
		e.Output = responseText(in.Error)
	case "Stop":
		e.Kind = TurnEnd
	case "SessionEnd":
		e.Kind = SessionEnd
	default:
		return Event{}, nil
	}
	var ti struct {
		Command      string `json:"command"`
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		OldString    string `json:"old_string"`
		NewString    string `json:"new_string"`
		Edits        []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	if len(in.ToolInput) > 0 && json.Unmarshal(in.ToolInput, &ti) == nil {
		e.Command = ti.Command
		// Edit, MultiEdit, Write and NotebookEdit name the file they change.
		if e.Kind == ToolDone && in.ToolName != "Read" {
			e.File = ti.FilePath
			if e.File == "" {
				e.File = ti.NotebookPath
			}
			edits := append([]struct {
				OldString string `json:"old_string"`
				NewString string `json:"new_string"`
			}{{ti.OldString, ti.NewString}}, ti.Edits...)
			var d strings.Builder
			for _, ed := range edits {
				for _, l := range lines(ed.OldString) {
					d.WriteString("-" + l + "\n")
				}
				for _, l := range lines(ed.NewString) {
					d.WriteString("+" + l + "\n")
				}
			}
			e.Diff = d.String()
		}
	}
	return e, nil
}

// responseText is the text of a tool's response: a string as is; of an
// object, its string fields stdout and stderr (Bash) or, lacking them, every
// string value; anything else is empty.
func responseText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var parts []string
	for _, k := range []string{"stdout", "stderr", "output", "error"} {
		if v, ok := m[k].(string); ok && v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "\n")
}

// ClaudeCodeReply is what a SessionStart hook prints on stdout for Claude
// Code (and Codex, whose SessionStart output is the same) to add text to
// the session's context; nil when there is none.
func ClaudeCodeReply(e Event, context string) []byte {
	if e.Kind != SessionStart || strings.TrimSpace(context) == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "SessionStart", "additionalContext": context}})
	return append(b, '\n')
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
