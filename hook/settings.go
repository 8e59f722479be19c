package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The commands lore's hooks run; each is also the mark by which uninstall
// finds exactly lore's entries.
const (
	ClaudeCodeCommand = "lore hook claude-code"
	CodexCommand      = "lore hook codex"
)

// hookSpec is one event lore hooks into, with its matcher (the tool name
// pattern; empty for events that take none).
type hookSpec struct{ event, matcher string }

// Spec is what lore installs into one agent's hook configuration: the
// command and its events. Claude Code's settings.json and Codex's
// hooks.json share the layout hooks → event → [{matcher, hooks: [{type,
// command}]}].
type Spec struct {
	Command string
	hooks   []hookSpec
}

// The agents' specs.
var (
	ClaudeCodeSpec = Spec{ClaudeCodeCommand, []hookSpec{
		{"SessionStart", ""},
		{"PostToolUse", "Bash|Edit|MultiEdit|Write|NotebookEdit"},
		{"PostToolUseFailure", "Bash"},
		{"Stop", ""},
		{"SessionEnd", ""},
	}}
	CodexSpec = Spec{CodexCommand, []hookSpec{
		{"SessionStart", ""},
		{"PostToolUse", "Bash"},
		{"Stop", ""},
	}}
)

// claudeHooks are Claude Code's hooked events.
var claudeHooks = ClaudeCodeSpec.hooks

// esc escapes a key for a gjson/sjson path.
func esc(s string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(s)
}

// InstallClaudeCode adds lore's hooks to a Claude Code settings document.
// Everything else is left byte for byte: entries are appended to the
// events' arrays in place (tidwall/sjson edits the text, it does not
// re-encode it). Hooks already installed are not added twice.
func InstallClaudeCode(doc []byte) ([]byte, error) { return ClaudeCodeSpec.Install(doc) }

// UninstallClaudeCode removes exactly lore's Claude Code hooks.
func UninstallClaudeCode(doc []byte) ([]byte, error) { return ClaudeCodeSpec.Uninstall(doc) }

// Install adds the spec's hooks to a hook configuration document, as
// InstallClaudeCode does.
func (sp Spec) Install(doc []byte) ([]byte, error) {
	return keepTail(doc, sp.install)
}

func (sp Spec) install(doc []byte) ([]byte, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		doc = []byte("{}")
	}
	if !gjson.ValidBytes(doc) || !gjson.ParseBytes(doc).IsObject() {
		return nil, errors.New("settings: not a JSON object")
	}
	for _, hk := range sp.hooks {
		path := "hooks." + esc(hk.event)
		if arr := gjson.GetBytes(doc, path); arr.Exists() && !arr.IsArray() {
			return nil, fmt.Errorf("settings: %s is not an array", path)
		}
		if len(sp.entries(doc, hk.event)) > 0 {
			continue
		}
		group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": sp.Command}}}
		if hk.matcher != "" {
			group["matcher"] = hk.matcher
		}
		raw, _ := json.Marshal(group)
		var err error
		if doc, err = sjson.SetRawBytes(doc, path+".-1", raw); err != nil {
			return nil, fmt.Errorf("settings: add %s: %w", path, err)
		}
	}
	return doc, nil
}

// loreEntries are the indexes, in hooks.<event>, of the groups holding a
// lore command, highest first.
func (sp Spec) entries(doc []byte, event string) []int {
	var idx []int
	gjson.GetBytes(doc, "hooks."+esc(event)).ForEach(func(k, g gjson.Result) bool {
		g.Get("hooks").ForEach(func(_, h gjson.Result) bool {
			if sp.isLore(h.Get("command").String()) {
				idx = append([]int{int(k.Int())}, idx...)
				return false
			}
			return true
		})
		return true
	})
	return idx
}

func (sp Spec) isLore(cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	return cmd == sp.Command || strings.HasPrefix(cmd, sp.Command+" ")
}

// Uninstall removes exactly lore's hooks: its commands from
// their groups, a group left with no hook, an event left with no group,
// and "hooks" when nothing is left in it. The rest is left byte for byte.
func (sp Spec) Uninstall(doc []byte) ([]byte, error) {
	return keepTail(doc, sp.uninstall)
}

func (sp Spec) uninstall(doc []byte) ([]byte, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		return doc, nil
	}
	if !gjson.ValidBytes(doc) || !gjson.ParseBytes(doc).IsObject() {
		return nil, errors.New("settings: not a JSON object")
	}
	var err error
	gjson.GetBytes(doc, "hooks").ForEach(func(ev, _ gjson.Result) bool {
		event := ev.String()
		for _, gi := range sp.entries(doc, event) {
			gpath := "hooks." + esc(event) + "." + strconv.Itoa(gi)
			hooks := gjson.GetBytes(doc, gpath+".hooks").Array()
			for hi := len(hooks) - 1; hi >= 0; hi-- {
				if sp.isLore(hooks[hi].Get("command").String()) {
					if doc, err = sjson.DeleteBytes(doc, gpath+".hooks."+strconv.Itoa(hi)); err != nil {
						return false
					}
				}
			}
			if len(gjson.GetBytes(doc, gpath+".hooks").Array()) == 0 {
				if doc, err = sjson.DeleteBytes(doc, gpath); err != nil {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	for _, hk := range sp.hooks {
		p := "hooks." + esc(hk.event)
		if a := gjson.GetBytes(doc, p); a.IsArray() && len(a.Array()) == 0 {
			if doc, err = sjson.DeleteBytes(doc, p); err != nil {
				return nil, fmt.Errorf("settings: %w", err)
			}
		}
	}
	if h := gjson.GetBytes(doc, "hooks"); h.IsObject() && len(h.Map()) == 0 {
		if doc, err = sjson.DeleteBytes(doc, "hooks"); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	return doc, nil
}

// EditFile applies edit to a settings file (absent: an empty document) and
// writes it back through a temporary file, keeping its mode.
func EditFile(path string, edit func([]byte) ([]byte, error)) error {
	doc, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	out, err := edit(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(out) == string(doc) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".lore-tmp"
	if err := os.WriteFile(tmp, out, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// keepTail runs an edit and keeps the whitespace that followed the
// document's object (sjson drops it when it deletes the object's last key).
func keepTail(doc []byte, edit func([]byte) ([]byte, error)) ([]byte, error) {
	out, err := edit(doc)
	if err != nil {
		return nil, err
	}
	tail := doc[len(bytes.TrimRight(doc, " \t\r\n")):]
	return append(bytes.TrimRight(out, " \t\r\n"), tail...), nil
}
