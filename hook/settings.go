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

// ClaudeCodeCommand is the command lore's hooks run; it is also the mark
// by which uninstall finds exactly lore's entries.
const ClaudeCodeCommand = "lore hook claude-code"

// claudeHooks are the events lore hooks into, with their matcher (the tool
// name pattern; empty for events that take none).
var claudeHooks = []struct{ event, matcher string }{
	{"SessionStart", ""},
	{"PostToolUse", "Bash|Edit|MultiEdit|Write|NotebookEdit"},
	{"PostToolUseFailure", "Bash"},
	{"Stop", ""},
	{"SessionEnd", ""},
}

// esc escapes a key for a gjson/sjson path.
func esc(s string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(s)
}

// InstallClaudeCode adds lore's hooks to a Claude Code settings document.
// Everything else is left byte for byte: entries are appended to the
// events' arrays in place (tidwall/sjson edits the text, it does not
// re-encode it). Hooks already installed are not added twice.
func InstallClaudeCode(doc []byte) ([]byte, error) {
	return keepTail(doc, installClaudeCode)
}

func installClaudeCode(doc []byte) ([]byte, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		doc = []byte("{}")
	}
	if !gjson.ValidBytes(doc) || !gjson.ParseBytes(doc).IsObject() {
		return nil, errors.New("settings: not a JSON object")
	}
	for _, hk := range claudeHooks {
		path := "hooks." + esc(hk.event)
		if arr := gjson.GetBytes(doc, path); arr.Exists() && !arr.IsArray() {
			return nil, fmt.Errorf("settings: %s is not an array", path)
		}
		if len(loreEntries(doc, hk.event)) > 0 {
			continue
		}
		group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": ClaudeCodeCommand}}}
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
func loreEntries(doc []byte, event string) []int {
	var idx []int
	gjson.GetBytes(doc, "hooks."+esc(event)).ForEach(func(k, g gjson.Result) bool {
		g.Get("hooks").ForEach(func(_, h gjson.Result) bool {
			if isLore(h.Get("command").String()) {
				idx = append([]int{int(k.Int())}, idx...)
				return false
			}
			return true
		})
		return true
	})
	return idx
}

func isLore(cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	return cmd == ClaudeCodeCommand || strings.HasPrefix(cmd, ClaudeCodeCommand+" ")
}

// UninstallClaudeCode removes exactly lore's hooks: its commands from
// their groups, a group left with no hook, an event left with no group,
// and "hooks" when nothing is left in it. The rest is left byte for byte.
func UninstallClaudeCode(doc []byte) ([]byte, error) {
	return keepTail(doc, uninstallClaudeCode)
}

func uninstallClaudeCode(doc []byte) ([]byte, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		return doc, nil
	}
	if !gjson.ValidBytes(doc) || !gjson.ParseBytes(doc).IsObject() {
		return nil, errors.New("settings: not a JSON object")
	}
	var err error
	gjson.GetBytes(doc, "hooks").ForEach(func(ev, _ gjson.Result) bool {
		event := ev.String()
		for _, gi := range loreEntries(doc, event) {
			gpath := "hooks." + esc(event) + "." + strconv.Itoa(gi)
			hooks := gjson.GetBytes(doc, gpath+".hooks").Array()
			for hi := len(hooks) - 1; hi >= 0; hi-- {
				if isLore(hooks[hi].Get("command").String()) {
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
	for _, hk := range claudeHooks {
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
