// Package promptline renders stored text (lessons, patterns, error
// messages: anything a client wrote) into the prompt blocks lore injects
// into agents' prompts, as data that cannot act as structure there.
//
// Invariants of Line's output, whatever the input:
//   - it is one line: no line break of any kind (\n, \r, vertical tab, form
//     feed, NEL U+0085, U+2028, U+2029) and no other control or invisible
//     format character (zero-width, bidi, Unicode tag characters);
//   - it does not start with a heading (#), a code fence (``` or ~~~), a
//     role marker (system:, assistant:, user:, Human: ...), a chat
//     template token (<|im_start|>, [INST], <<SYS>>, <s>), or a tag (<x>,
//     </x>): such a text is shown in double quotes, with " and \ escaped;
//   - it contains no "<|" or "|>" (the delimiters of chat template special
//     tokens): they are spaced apart;
//   - text free of all these renders unchanged, apart from runs of white
//     space collapsing to one space and the ends trimmed.
//
// Block formats put Line's output after their own prefix ("- ", "Fix: ")
// and never start a line of the block with stored text, so no line of a
// block can be made to open a heading, a fence or a role by stored text.
package promptline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line renders a stored text as one safe line (see the package invariants).
func Line(s string) string {
	s = flatten(s, true)
	if Unsafe(s) {
		return quote(s)
	}
	return s
}

// Lines renders a stored multi-line text (a code template) as lines that
// each begin with prefix, which must not itself start unsafely: a stored
// line can then neither end the block's structure nor start a heading,
// fence or role. Line breaks of every kind split lines; other invisible
// characters are dropped; indentation is kept. Empty text gives no lines.
func Lines(s, prefix string) []string {
	if strings.TrimSpace(prefix) == "" || Unsafe(prefix) {
		panic("promptline: unsafe prefix " + strconv.Quote(prefix)) // a wiring bug
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	if s == "" {
		return nil
	}
	var out []string
	add := func(ln string) { out = append(out, strings.TrimRight(prefix+flatten(ln, false), " \t")) }
	start := 0
	for i, r := range s {
		if isBreak(r) {
			add(s[start:i])
			start = i + utf8.RuneLen(r)
		}
	}
	add(s[start:])
	return out
}

// isBreak reports a character that ends a line in some reader.
func isBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// flatten drops control and invisible format characters, turns line breaks
// and tabs into spaces and spaces apart "<|" and "|>". With collapse, runs
// of white space become one space and the ends are trimmed.
func flatten(s string, collapse bool) string {
	if flat(s, collapse) {
		return s // most stored text: nothing to change, nothing to copy
	}
	return rewrite(s, collapse)
}

// rewrite is flatten's loop, for any text.
func rewrite(s string, collapse bool) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	var prev rune
	for _, r := range s {
		switch {
		case isBreak(r) || r == '\t' || (collapse && unicode.IsSpace(r)):
			if !collapse && r == '\t' {
				b.WriteRune(r)
				prev = r
				continue
			}
			if collapse && space {
				continue
			}
			b.WriteByte(' ')
			space, prev = true, ' '
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || (r >= 0xE0000 && r <= 0xE007F):
			continue
		}
		if (prev == '<' && r == '|') || (prev == '|' && r == '>') {
			b.WriteByte(' ')
		}
		space, prev = false, r
		b.WriteRune(r)
	}
	if collapse {
		return strings.TrimSpace(b.String())
	}
	return b.String()
}

// flat reports whether flatten would return s unchanged, for the text
// its loop cannot change: printable ASCII and single spaces (with
// collapse: neither leading nor trailing), without "<|" or "|>". Every
// other byte (controls, tabs, DEL, any non-ASCII) takes flatten's loop.
func flat(s string, collapse bool) bool {
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < ' ' || c > '~':
			return false
		case c == ' ' && collapse && (i == 0 || prev == ' ' || i == len(s)-1):
			return false
		case (prev == '<' && c == '|') || (prev == '|' && c == '>'):
			return false
		}
		prev = c
	}
	return true
}

// roles are the words that, followed by a colon at a line start, read as a
// turn of a conversation.
var roles = []string{"system", "assistant", "user", "human", "ai", "developer", "tool", "function", "model"}

// Unsafe reports whether a line starting with s (after leading white
// space) could be read as structure: a heading, fence, role, chat template
// token or tag.
func Unsafe(s string) bool {
	s = skipLead(s)
	if s == "" {
		return false
	}
	switch s[0] {
	case '#':
		return true
	case '`', '~':
		return strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~")
	case '<':
		// <|im_start|>, <<SYS>>, <s>, </s>, <system>, </instructions>, <!--
		if len(s) > 1 && (s[1] == '|' || s[1] == '<' || s[1] == '/' || s[1] == '!' || isLetter(s[1])) {
			return true
		}
	case '[':
		// [INST], [/INST], [SYSTEM], [system](...)
		end := strings.IndexByte(s, ']')
		if end > 1 {
			w := strings.TrimPrefix(s[1:end], "/")
			if isRole(w) || strings.EqualFold(w, "INST") || strings.EqualFold(w, "SYS") {
				return true
			}
		}
	}
	// role: a role word, optional spaces, then ':'
	i := 0
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	if i == 0 || !isRole(s[:i]) {
		return false
	}
	rest := strings.TrimLeft(s[i:], " \t")
	return strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "：")
}

// skipLead skips what markdown reads before a line's content: white space,
// block quote and list markers, emphasis ("> - **system:**" is a role).
func skipLead(s string) string {
	for {
		t := strings.TrimLeft(s, " \t>*_-+")
		d := strings.TrimLeft(t, "0123456789")
		if len(d) < len(t) && d != "" && (d[0] == '.' || d[0] == ')') {
			t = d[1:]
		}
		if t == s {
			return s
		}
		s = t
	}
}

func isRole(w string) bool {
	for _, r := range roles {
		if strings.EqualFold(w, r) {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// quote shows s as a double-quoted string: " and \ escaped.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
