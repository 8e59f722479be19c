package events

import (
	"fmt"
	"strings"
)

// Subject layout. NB: must not change: it is how the log is stored and how
// clients in other languages append.
//
//	lore.ev.<project>.<aggregate>.<aggregate id>          facts (the log)
//	lore.derived.<project>.<name...>.<aggregate id>     derived announcements
//
// Tokens are encoded with EncodeToken so that ids with dots (bd-123.1),
// wildcards or spaces survive unchanged.
const (
	EventsPrefix  = "lore.ev"
	DerivedPrefix = "lore.derived"
	// EventsFilter and DerivedFilter match every fact and every announcement.
	EventsFilter  = EventsPrefix + ".>"
	DerivedFilter = DerivedPrefix + ".>"
)

// EncodeToken encodes s as one subject token, reversibly: letters, digits,
// '-' and '_' stay; every other byte becomes %XX. The empty string is "%".
func EncodeToken(s string) string {
	if s == "" {
		return "%"
	}
	safe := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	i := 0
	for i < len(s) && safe(s[i]) {
		i++
	}
	if i == len(s) {
		return s // nothing to escape: the common case, without allocating
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if safe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// DecodeToken reverses EncodeToken.
func DecodeToken(tok string) (string, error) {
	if tok == "%" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(tok) {
			return "", fmt.Errorf("decode token %q: truncated escape", tok)
		}
		var v byte
		if _, err := fmt.Sscanf(tok[i+1:i+3], "%02X", &v); err != nil {
			return "", fmt.Errorf("decode token %q: %w", tok, err)
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}

// SubjectFor returns the subject an event is stored on.
func SubjectFor(ev *Event) (string, error) {
	k, ok := Lookup(ev.Type)
	if !ok {
		return "", fmt.Errorf("%w: field \"type\": unknown type %q", ErrInvalidEvent, ev.Type)
	}
	if ev.Subject == "" {
		return "", fmt.Errorf("%w: %s: field \"subject\": the aggregate id is empty", ErrInvalidEvent, ev.Type)
	}
	prefix := EventsPrefix
	if k.Derived {
		prefix = DerivedPrefix + "." + EncodeToken(project(ev.Project)) + "." + k.Name() + "." + EncodeToken(ev.Subject)
		return prefix, nil
	}
	return prefix + "." + EncodeToken(project(ev.Project)) + "." + k.Aggregate + "." + EncodeToken(ev.Subject), nil
}

// AggregateSubject is the subject of one aggregate's events.
func AggregateSubject(project, aggregate, id string) string {
	return EventsPrefix + "." + EncodeToken(projectOr(project)) + "." + aggregate + "." + EncodeToken(id)
}

func project(p string) string { return projectOr(p) }

func projectOr(p string) string {
	if p == "" {
		return DefaultProject
	}
	return p
}
