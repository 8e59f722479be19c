// Package hook turns the hook calls of agent CLIs into lore records. Each
// agent has an adapter translating its input into one Event; Handle acts on
// Events alike, whatever agent sent them.
package hook

import "github.com/loredev/lore/ralph"

// Kind is what happened in the agent's session.
type Kind string

// Kinds of Event. An adapter maps every input it does not act on to Ignore.
const (
	Ignore       Kind = ""
	SessionStart Kind = "session_start" // answer with lore's context
	ToolDone     Kind = "tool_done"     // a tool call returned; Output may hold a test run
	ToolFailed   Kind = "tool_failed"   // a tool call failed
	TurnEnd      Kind = "turn_end"      // the agent finished responding: one loop iteration
	SessionEnd   Kind = "session_end"   // the session ended: the loop completes
)

// Event is one hook call, agent-neutral.
type Event struct {
	Agent     string // agent name recorded (claude-code, codex)
	Kind      Kind
	SessionID string
	Cwd       string
	Source    string // why a session started (startup, resume, clear, compact), when given
	Tool      string // tool name
	ToolUseID string // the agent's id of the tool call, when given
	Command   string // the shell command a tool ran, when it ran one
	Output    string // the tool's output, or its error message
	File      string // the file a tool edited or wrote, when it did
	Diff      string // the edit as removed (-) and added (+) lines, when the tool says
}

// testRun is the verdict on a tool call's output when it is the output of
// a test runner or compiler that ralph's verify parsers recognise.
func testRun(e Event) (ralph.Verdict, bool) {
	if e.Output == "" {
		return ralph.Verdict{}, false
	}
	v := ralph.ParseVerify(e.Output)
	if v.Tool == "" && !v.HasError() && v.Passed == 0 && v.Failed == 0 {
		return v, false
	}
	return v, true
}
