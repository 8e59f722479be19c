package events

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	json "github.com/goccy/go-json"
)

// rawText is a string value of a JSON document and its field name.
type rawText struct {
	field, text string
}

// rawTexts lists the string values of a JSON value (not its object
// keys), in document order, each named as visitRaw names it (field, then
// ".key" or ".index" per level). It reports false when it cannot read the
// value exactly as a decoder into any would (invalid JSON, an object with
// a repeated key): the caller then decodes it.
func rawTexts(field string, raw []byte, out []rawText) ([]rawText, bool) {
	s := textScanner{b: raw, out: out}
	if !s.value(field, 0) {
		return out, false
	}
	s.ws()
	return s.out, s.i == len(s.b)
}

type textScanner struct {
	b   []byte
	i   int
	out []rawText
}

// maxTextDepth bounds the nesting the scanner follows.
const maxTextDepth = 64

func (s *textScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *textScanner) value(path string, depth int) bool {
	s.ws()
	if s.i >= len(s.b) || depth > maxTextDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		t, ok := s.str()
		if ok {
			s.out = append(s.out, rawText{path, t})
		}
		return ok
	case c == '{':
		s.i++
		var keys []string
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return true
		}
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return false
			}
			k, ok := s.str()
			if !ok {
				return false
			}
			for _, o := range keys {
				if o == k {
					return false // the decoder keeps the last one only
				}
			}
			keys = append(keys, k)
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			if !s.value(path+"."+k, depth+1) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case ',':
				s.i++
			case '}':
				s.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for n := 0; ; n++ {
			if !s.value(path+"."+strconv.Itoa(n), depth+1) {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	default:
		return s.scalar()
	}
}

// str reads a string at s.i: its text as a decoder reads it.
func (s *textScanner) str() (string, bool) {
	start := s.i + 1
	esc := false
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '\\':
			esc = true
			j++
		case c == '"':
			s.i = j + 1
			body := s.b[start:j]
			if !esc && utf8.Valid(body) {
				return string(body), true
			}
			// escapes or invalid UTF-8: as the decoder reads them
			var t string
			if json.Unmarshal(s.b[start-1:j+1], &t) != nil {
				return "", false
			}
			return t, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// scalar reads a number, true, false or null.
func (s *textScanner) scalar() bool {
	for _, lit := range [][]byte{[]byte("true"), []byte("false"), []byte("null")} {
		if bytes.HasPrefix(s.b[s.i:], lit) {
			s.i += len(lit)
			return true
		}
	}
	// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	j := s.i
	digits := func() bool {
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if !digits() {
		return false
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	s.i = j
	return true
}
