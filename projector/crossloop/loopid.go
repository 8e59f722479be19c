package crossloop

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// loopIDRe is the loop id format of the reference's schemas.
var loopIDRe = regexp.MustCompile(`^ralph-[a-z0-9-]+-[a-f0-9]{8}$`)

// ValidLoopID reports whether id has the form ralph-<slug>-<8 hex>.
func ValidLoopID(id string) bool { return loopIDRe.MatchString(id) }

// LoopSlug is the slug part of a loop id, as the reference computes it:
// lower case, every run of characters outside [a-z0-9] becomes '-', leading
// and trailing '-' trimmed, then cut to 30 bytes (which may leave a trailing
// '-'). A task with no letter or digit gives "task" (the reference would
// give "", an id its own schema refuses).
func LoopSlug(task string) string {
	s := slugRun(strings.ToLower(task))
	s = strings.Trim(s, "-")
	if len(s) > 30 {
		s = s[:30]
	}
	if s == "" {
		s = "task"
	}
	return s
}

// slugRun replaces runs of characters outside [a-z0-9] by one '-'.
func slugRun(s string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return b.String()
}

// NewLoopID returns ralph-<slug>-<8 random hex>. It reads crypto/rand, so
// call it before append (in the command), never in a fold.
func NewLoopID(task string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("loop id: %w", err)
	}
	return LoopIDWith(task, b), nil
}

// LoopIDWith builds a loop id from a task and 4 given bytes (deterministic).
func LoopIDWith(task string, b [4]byte) string {
	return "ralph-" + LoopSlug(task) + "-" + hex.EncodeToString(b[:])
}

// slugWords is a short [a-z0-9-] slug of at most max bytes, cut at a word
// boundary, used in pattern ids.
func slugWords(s string, max int) string {
	s = strings.Trim(slugRun(strings.ToLower(s)), "-")
	if len(s) > max {
		s = s[:max]
		if i := strings.LastIndexByte(s, '-'); i > 0 {
			s = s[:i]
		}
		s = strings.Trim(s, "-")
	}
	if s == "" {
		s = "pattern"
	}
	return s
}

// PatternID is the id of the n-th pattern of a type: pat-<type>-<slug>-<NNN>
// (code templates: tmpl-<slug>-<NNN>, the form the shared registry schema
// requires). n above 999 keeps growing (4 digits), which the reference's
// schema would refuse; see docs/cross-loop.md.
func PatternID(typ, slug string, n int) string {
	slug = slugWords(slug, 30)
	if typ == TypeTemplate {
		return fmt.Sprintf("tmpl-%s-%03d", slug, n)
	}
	return fmt.Sprintf("pat-%s-%s-%03d", typ, slug, n)
}

var patternIDRe = regexp.MustCompile(`^(?:pat-(error|success|anti)|tmpl)-[a-z0-9-]+-(\d{3,})$`)

// ParsePatternID returns the type and counter of a pattern id.
func ParsePatternID(id string) (typ string, n int, ok bool) {
	m := patternIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", 0, false
	}
	typ = m[1]
	if typ == "" {
		typ = TypeTemplate
	}
	fmt.Sscanf(m[2], "%d", &n)
	return typ, n, true
}
