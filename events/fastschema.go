package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// fastSchema is a compiled form of the subset of JSON Schema (draft
// 2020-12) that lore's schemas use, checked directly on the JSON bytes in
// one pass, without decoding them into a tree and without big numbers for
// plain integers.
//
// Invariant (soundness): valid(data) reports true only if the full validator
// (santhosh-tekuri/jsonschema, the reference) accepts data against the same
// schema document. When the fast check cannot decide cheaply and exactly — a
// string with a "format" other than a plain RFC 3339 "date-time" (see
// certainDateTime), a number with an exponent, a non-integral number
// compared with a bound, invalid UTF-8 or lone surrogates, "uniqueItems" on
// two or more items, nesting beyond maxFastDepth — or when data is invalid,
// valid reports false and the caller runs the full validator, which decides
// and names the field. The fast path therefore changes how fast a payload is
// accepted, never what is accepted nor the errors.
//
// A schema using any keyword not handled below does not compile to a
// fastSchema at all (compileFast returns an error) and its kind is always
// validated by the full validator.
type fastSchema struct {
	never bool  // the boolean schema false
	types uint8 // allowed JSON types (t* bits); 0: any

	// objects
	props      map[string]*fastSchema
	additional *fastSchema       // names not in props; nil: anything
	required   map[string]uint64 // required name → its bit in reqMask
	reqMask    uint64

	// arrays
	items              *fastSchema // nil: anything
	minItems, maxItems int         // -1: no bound
	uniqueItems        bool

	// strings
	minLen, maxLen int // in code points, as the reference counts; -1: no bound
	pattern        *regexp.Regexp
	// format is the string's "format" ("": none). Only "date-time" is
	// decided here, for the strings certainDateTime accepts; the full
	// validator decides every other string with a format.
	format string

	hasEnum bool
	enum    []string // only string enums compile

	// numbers: exact bounds; the int64 forms when the bound is an integer
	// that fits, compared with plain integer literals without big.Rat.
	minimum, maximum   *big.Rat
	minInt, maxInt     int64
	minIsInt, maxIsInt bool

	anyOf []*fastSchema
}

const (
	tObject uint8 = 1 << iota
	tArray
	tString
	tInteger
	tNumber
	tBool
	tNull
)

// maxFastDepth bounds the recursion of the fast check; deeper data goes to
// the full validator.
const maxFastDepth = 64

var fastTypes = map[string]uint8{"object": tObject, "array": tArray, "string": tString,
	"integer": tInteger, "number": tNumber, "boolean": tBool, "null": tNull}

// annotations are keywords that never change validity.
var annotations = map[string]bool{"$schema": true, "title": true, "description": true,
	"$comment": true, "examples": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true}

// compileFastSchema compiles a schema file's bytes (see fastSchema).
func compileFastSchema(raw []byte) (*fastSchema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return compileFast(doc)
}

func compileFast(doc any) (*fastSchema, error) {
	switch d := doc.(type) {
	case bool:
		return &fastSchema{never: !d, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}, nil
	case map[string]any:
		s := &fastSchema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic errors
		for _, k := range keys {
			if err := s.keyword(k, d[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("a schema must be an object or a boolean, not %T", doc)
}

func (s *fastSchema) keyword(k string, v any) error {
	if k == "$schema" && v != "https://json-schema.org/draft/2020-12/schema" {
		return fmt.Errorf("the fast path knows the semantics of draft 2020-12 only")
	}
	if annotations[k] {
		return nil
	}
	var err error
	switch k {
	case "type":
		switch t := v.(type) {
		case string:
			s.types, err = typeBit(t)
		case []any:
			for _, e := range t {
				name, _ := e.(string)
				b, berr := typeBit(name)
				if berr != nil {
					return berr
				}
				s.types |= b
			}
		default:
			err = fmt.Errorf("unsupported %T", v)
		}
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("not an object")
		}
		s.props = make(map[string]*fastSchema, len(m))
		for name, sub := range m {
			if s.props[name], err = compileFast(sub); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	case "additionalProperties":
		s.additional, err = compileFast(v)
	case "required":
		l, ok := v.([]any)
		if !ok || len(l) > 64 {
			return fmt.Errorf("unsupported")
		}
		s.required = make(map[string]uint64, len(l))
		for _, e := range l {
			name, ok := e.(string)
			if !ok {
				return fmt.Errorf("not a string")
			}
			if _, dup := s.required[name]; !dup {
				bit := uint64(1) << len(s.required)
				s.required[name] = bit
				s.reqMask |= bit
			}
		}
	case "items":
		s.items, err = compileFast(v) // an array (tuple) form is refused there
	case "minItems":
		s.minItems, err = nonNegative(v)
	case "maxItems":
		s.maxItems, err = nonNegative(v)
	case "minLength":
		s.minLen, err = nonNegative(v)
	case "maxLength":
		s.maxLen, err = nonNegative(v)
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("not a boolean")
		}
		s.uniqueItems = b
	case "pattern":
		p, ok := v.(string)
		if !ok {
			return fmt.Errorf("not a string")
		}
		s.pattern, err = regexp.Compile(p) // the reference's default engine
	case "format":
		f, ok := v.(string)
		if !ok {
			return fmt.Errorf("not a string")
		}
		s.format = f
	case "enum":
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("not an array")
		}
		s.hasEnum = true
		for _, e := range l {
			str, ok := e.(string)
			if !ok {
				return fmt.Errorf("only string enums are supported")
			}
			s.enum = append(s.enum, str)
		}
	case "minimum", "maximum":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("not a number")
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return fmt.Errorf("bad number %s", n)
		}
		i, ierr := strconv.ParseInt(n.String(), 10, 64)
		if k == "minimum" {
			s.minimum, s.minInt, s.minIsInt = r, i, ierr == nil
		} else {
			s.maximum, s.maxInt, s.maxIsInt = r, i, ierr == nil
		}
	case "anyOf":
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			return fmt.Errorf("not a non-empty array")
		}
		for _, e := range l {
			sub, err := compileFast(e)
			if err != nil {
				return err
			}
			s.anyOf = append(s.anyOf, sub)
		}
	default:
		return fmt.Errorf("keyword not supported by the fast path")
	}
	return err
}

func typeBit(name string) (uint8, error) {
	if b, ok := fastTypes[name]; ok {
		return b, nil
	}
	return 0, fmt.Errorf("unknown type %q", name)
}

func nonNegative(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	i, err := strconv.Atoi(n.String())
	if err != nil || i < 0 {
		return 0, fmt.Errorf("not a non-negative integer: %s", n)
	}
	return i, nil
}

// valid reports whether data is certainly valid (see fastSchema): one JSON
// value, nothing but whitespace around it.
func (s *fastSchema) valid(data []byte) bool {
	end, ok := s.value(data, skipWS(data, 0), 0)
	return ok && skipWS(data, end) == len(data)
}

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// allows reports whether the schema admits JSON type t (nil: anything).
func (s *fastSchema) allows(t uint8) bool {
	return s == nil || s.types == 0 || s.types&t != 0
}

// value checks the value starting at d[i] (no leading whitespace) against
// s (nil: anything, only the syntax is checked) and returns where it ends.
func (s *fastSchema) value(d []byte, i, depth int) (int, bool) {
	if i >= len(d) || depth > maxFastDepth || s != nil && s.never {
		return i, false
	}
	var end int
	var ok bool
	switch c := d[i]; {
	case c == '{':
		end, ok = s.object(d, i, depth)
	case c == '[':
		end, ok = s.array(d, i, depth)
	case c == '"':
		end, ok = s.str(d, i)
	case c == '-' || c >= '0' && c <= '9':
		end, ok = s.number(d, i)
	case c == 't':
		end, ok = s.literal(d, i, "true", tBool)
	case c == 'f':
		end, ok = s.literal(d, i, "false", tBool)
	case c == 'n':
		end, ok = s.literal(d, i, "null", tNull)
	default:
		return i, false
	}
	if !ok || s == nil || len(s.anyOf) == 0 {
		return end, ok
	}
	for _, sub := range s.anyOf {
		if e, ok := sub.value(d, i, depth); ok && e == end {
			return end, true
		}
	}
	return end, false
}

func (s *fastSchema) literal(d []byte, i int, lit string, t uint8) (int, bool) {
	if !bytes.HasPrefix(d[i:], []byte(lit)) {
		return i, false
	}
	return i + len(lit), s.allows(t) && (s == nil || !s.hasEnum)
}

func (s *fastSchema) object(d []byte, i, depth int) (int, bool) {
	if !s.allows(tObject) || s != nil && s.hasEnum {
		return i, false
	}
	var seen uint64
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, s == nil || s.reqMask == 0
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, false
		}
		end, key, _, ok := scanString(d, i)
		if !ok {
			return end, false
		}
		var sub *fastSchema
		if s != nil {
			// Duplicate names: every occurrence is checked, so whichever
			// one a decoder keeps is valid.
			if p, ok := s.props[string(key)]; ok {
				sub = p
			} else {
				sub = s.additional
			}
			seen |= s.required[string(key)]
		}
		i = skipWS(d, end)
		if i >= len(d) || d[i] != ':' {
			return i, false
		}
		if i, ok = sub.value(d, skipWS(d, i+1), depth+1); !ok {
			return i, false
		}
		i = skipWS(d, i)
		if i >= len(d) {
			return i, false
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case '}':
			return i + 1, s == nil || seen&s.reqMask == s.reqMask
		default:
			return i, false
		}
	}
}

func (s *fastSchema) array(d []byte, i, depth int) (int, bool) {
	if !s.allows(tArray) || s != nil && s.hasEnum {
		return i, false
	}
	var items *fastSchema
	if s != nil {
		items = s.items
	}
	n := 0
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		i++
	} else {
		for {
			var ok bool
			if i, ok = items.value(d, i, depth+1); !ok {
				return i, false
			}
			n++
			i = skipWS(d, i)
			if i >= len(d) {
				return i, false
			}
			if d[i] == ']' {
				i++
				break
			}
			if d[i] != ',' {
				return i, false
			}
			i = skipWS(d, i+1)
		}
	}
	if s == nil {
		return i, true
	}
	return i, (s.minItems < 0 || n >= s.minItems) && (s.maxItems < 0 || n <= s.maxItems) &&
		(!s.uniqueItems || n < 2)
}

func (s *fastSchema) str(d []byte, i int) (int, bool) {
	end, val, runes, ok := scanString(d, i)
	if !ok || s == nil {
		return end, ok
	}
	if !s.allows(tString) || s.format != "" && (s.format != "date-time" || !certainDateTime(val)) ||
		s.minLen >= 0 && runes < s.minLen || s.maxLen >= 0 && runes > s.maxLen ||
		s.pattern != nil && !s.pattern.Match(val) {
		return end, false
	}
	if s.hasEnum {
		for _, e := range s.enum {
			if string(val) == e {
				return end, true
			}
		}
		return end, false
	}
	return end, true
}

// certainDateTime reports whether v is certainly a "date-time" the full
// validator accepts: the common RFC 3339 form YYYY-MM-DDThh:mm:ss, an
// optional fraction of digits, then Z or ±hh:mm, every field in digits, the
// date checked by the reference's own time.Parse layout, seconds below 60
// (a leap second is left to the full validator, which checks it against
// the offset). Anything else — lower-case t or z, a sign or a space inside
// a field — is false: the full validator decides it.
func certainDateTime(v []byte) bool {
	if len(v) < 20 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' {
		return false
	}
	num := func(i int) (int, bool) {
		a, b := v[i], v[i+1]
		if a < '0' || a > '9' || b < '0' || b > '9' {
			return 0, false
		}
		return int(a-'0')*10 + int(b-'0'), true
	}
	for _, i := range []int{0, 2, 5, 8} {
		if _, ok := num(i); !ok {
			return false
		}
	}
	if _, err := time.Parse("2006-01-02", string(v[:10])); err != nil {
		return false
	}
	h, okh := num(11)
	m, okm := num(14)
	sec, oks := num(17)
	if !okh || !okm || !oks || h > 23 || m > 59 || sec > 59 {
		return false
	}
	rest := v[19:]
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	if len(rest) != 6 || rest[0] != '+' && rest[0] != '-' || rest[3] != ':' {
		return false
	}
	zh, okzh := num(len(v) - 5)
	zm, okzm := num(len(v) - 2)
	return okzh && okzm && zh <= 23 && zm <= 59
}

// scanString scans the JSON string starting at d[i] == '"'. It returns where
// it ends, its decoded contents (a slice of d when it has no escape), its
// length in code points, and false when it is malformed or holds invalid
// UTF-8 or a lone surrogate (left to the full validator).
func scanString(d []byte, i int) (end int, val []byte, runes int, ok bool) {
	start := i + 1
	var buf []byte // decoded contents once an escape is met
	for j := start; j < len(d); {
		c := d[j]
		switch {
		case c == '"':
			if buf == nil {
				return j + 1, d[start:j], runes, true
			}
			return j + 1, buf, runes, true
		case c < 0x20:
			return j, nil, 0, false
		case c == '\\':
			if buf == nil {
				buf = append(make([]byte, 0, len(d)-start), d[start:j]...)
			}
			if j+1 >= len(d) {
				return j, nil, 0, false
			}
			e := d[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(d, j)
				if !ok {
					return j, nil, 0, false
				}
				j += 4
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || j+6 > len(d) || d[j] != '\\' || d[j+1] != 'u' {
						return j, nil, 0, false
					}
					lo, ok := hex4(d, j+2)
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return j, nil, 0, false
					}
					j += 6
					r = utf16.DecodeRune(r, lo)
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return j, nil, 0, false
			}
			runes++
		case c < utf8.RuneSelf:
			if buf != nil {
				buf = append(buf, c)
			}
			j++
			runes++
		default:
			r, size := utf8.DecodeRune(d[j:])
			if r == utf8.RuneError && size == 1 {
				return j, nil, 0, false
			}
			if buf != nil {
				buf = append(buf, d[j:j+size]...)
			}
			j += size
			runes++
		}
	}
	return len(d), nil, 0, false
}

func hex4(d []byte, j int) (rune, bool) {
	if j+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[j : j+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (s *fastSchema) number(d []byte, i int) (int, bool) {
	start := i
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	plain, exp := true, false
	if i < len(d) && d[i] == '.' {
		plain = false
		if i++; i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		plain, exp = false, true
		if i++; i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if s == nil {
		return i, true
	}
	if s.hasEnum {
		return i, false
	}
	if plain {
		if !s.allows(tInteger | tNumber) {
			return i, false
		}
	} else if !s.allows(tNumber) {
		// "integer" also admits 5.0 and 1e3: the full validator decides.
		return i, false
	}
	if s.minimum == nil && s.maximum == nil {
		return i, true
	}
	lit := d[start:i]
	if plain {
		if v, err := strconv.ParseInt(string(lit), 10, 64); err == nil &&
			(s.minimum == nil || s.minIsInt) && (s.maximum == nil || s.maxIsInt) {
			return i, (s.minimum == nil || v >= s.minInt) && (s.maximum == nil || v <= s.maxInt)
		}
	}
	if exp {
		return i, false // 1e999999999 would be a huge big.Rat: the full validator decides
	}
	r, ok := new(big.Rat).SetString(string(lit))
	if !ok {
		return i, false
	}
	return i, (s.minimum == nil || r.Cmp(s.minimum) >= 0) && (s.maximum == nil || r.Cmp(s.maximum) <= 0)
}
