// Package consumers holds lore's reactive subscribers of derived events
// (the LORE_DERIVED stream): Watch yields announcements to a program (`lore
// watch`), and Webhook POSTs each one to a URL, signed, at least once.
//
// Both read through a JetStream consumer. A named consumer is durable: it
// resumes after the last announcement it acknowledged, across restarts. An
// unnamed watch is ephemeral and sees announcements made after it started.
package consumers

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/loredev/lore/events"
)

// ErrInvalidOption is returned when a filter, a name or a URL is invalid.
var ErrInvalidOption = errors.New("lore: invalid consumer option")

// Filter selects derived events. The zero Filter selects every announcement
// of every project.
type Filter struct {
	// Types are words naming announcements: a class word ("promoted",
	// "inverted", "deprecated", "archived", ...), a type name
	// ("pattern.inverted") or a versioned type ("pattern.inverted/v1").
	// Empty: every type.
	Types []string
	// Project restricts to one project; empty: every project.
	Project string
}

// Validate checks every type word against the catalogue of derived kinds.
func (f Filter) Validate() error {
	known := KnownWords()
	set := map[string]bool{}
	for _, w := range known {
		set[w] = true
	}
	for _, w := range f.Types {
		if !set[strings.ToLower(strings.TrimSpace(w))] {
			return fmt.Errorf("%w: type %q: no announcement matches it; known: %s", ErrInvalidOption, w, strings.Join(known, ", "))
		}
	}
	return nil
}

// FilterSubject is the subject filter of the consumer: the project's
// announcements, or all of them.
func (f Filter) FilterSubject() string {
	if f.Project == "" {
		return events.DerivedFilter
	}
	return events.DerivedPrefix + "." + events.EncodeToken(f.Project) + ".>"
}

// Match reports whether ev passes the filter.
func (f Filter) Match(ev *events.Event) bool {
	if f.Project != "" && ev.Project != f.Project {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	words := Classes(ev.Type, ev.Data)
	for _, w := range f.Types {
		w = strings.ToLower(strings.TrimSpace(w))
		for _, c := range words {
			if c == w {
				return true
			}
		}
	}
	return false
}

// Classes are the words an announcement answers to: its versioned type,
// its name, the last token of its name, that token's last '_' segment
// ("knowledge.hive_promoted" → "hive_promoted", "promoted"), and, for
// maturity steps, the state reached: a pattern reaching proven or a
// knowledge entry reaching promoted is "promoted", a pattern reaching
// deprecated is "deprecated".
func Classes(typ string, data json.RawMessage) []string {
	name, _ := events.SplitType(typ)
	if name == "" {
		name = typ
	}
	out := []string{strings.ToLower(typ), strings.ToLower(name)}
	last := name[strings.LastIndexByte(name, '.')+1:]
	out = append(out, last)
	if i := strings.LastIndexByte(last, '_'); i >= 0 {
		out = append(out, last[i+1:])
	}
	switch name {
	case "pattern.maturity_changed", "knowledge.advanced":
		var d struct {
			To string `json:"to"`
		}
		if json.Unmarshal(data, &d) == nil {
			switch d.To {
			case "proven", "promoted":
				out = append(out, "promoted")
			case "deprecated":
				out = append(out, "deprecated")
			}
		}
	}
	return out
}

// KnownWords lists every word a filter accepts, from the derived kinds of
// the catalogue, sorted.
func KnownWords() []string {
	set := map[string]bool{}
	for _, k := range events.Kinds() {
		if !k.Derived {
			continue
		}
		for _, w := range Classes(k.Type, nil) {
			set[w] = true
		}
		switch k.Name() {
		case "pattern.maturity_changed", "knowledge.advanced":
			set["promoted"] = true
			if k.Name() == "pattern.maturity_changed" {
				set["deprecated"] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// ParseTypes splits a comma-separated list of type words.
func ParseTypes(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// DurableName returns the durable consumer name for a user-given name with
// a role prefix ("watch", "webhook"). NB: must not change: the name is how
// a consumer resumes.
func DurableName(role, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", fmt.Errorf("%w: name %q: use letters, digits, '-' and '_'", ErrInvalidOption, name)
		}
	}
	if len(name) > 200 {
		return "", fmt.Errorf("%w: name %q: at most 200 characters", ErrInvalidOption, name)
	}
	return "lore-" + role + "-" + name, nil
}
