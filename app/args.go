package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Strict decoding of arguments, shared by every endpoint and by the wire
// request (DecodeStrict): an unknown key is refused with its name, keys
// match exactly (not case-insensitively as encoding/json would), and nested
// objects refuse unknown fields too.

// DecodeStrict decodes the JSON object raw into v (a pointer to a struct),
// refusing any key that is not one of the struct's JSON field names
// (embedded structs included). what names the object in errors
// ("arguments", "request"). Empty input and null leave v unchanged. An
// error wraps ErrBadRequest.
func DecodeStrict(raw []byte, v any, what string) error {
	if err := checkKeys(raw, reflect.TypeOf(v).Elem(), what); err != nil {
		return err
	}
	return decodeValues(raw, v, what)
}

// decodeValues is DecodeStrict once checkKeys passed on raw: it decodes
// the values, nested objects refusing unknown fields.
func decodeValues(raw []byte, v any, what string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %s", ErrBadRequest, what, jsonError(err))
	}
	return nil
}

// checkKeys refuses a JSON object raw with a key that is not a JSON field
// name of the struct type t (empty input and null pass).
func checkKeys(raw []byte, t reflect.Type, what string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return fmt.Errorf("%w: %s: not JSON object {...}", ErrBadRequest, what)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadRequest, what, err)
	}
	known := fieldNames(t)
	var unknown []string
	for k := range keys {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%w: %s: field %q: unknown (accepted: %s)", ErrBadRequest, what, unknown[0], acceptedList(known))
	}
	return nil
}

// decodeArgs decodes an endpoint's arguments strictly into v.
func decodeArgs(raw []byte, v any) error { return DecodeStrict(raw, v, "arguments") }

// jsonError names the field of a decoding error.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func acceptedList(known map[string]bool) string {
	if len(known) == 0 {
		return "none"
	}
	ks := make([]string, 0, len(known))
	for k := range known {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

var fieldCache sync.Map // reflect.Type → map[string]bool

// fieldNames returns the JSON names of a struct type's fields, as
// encoding/json sees them (embedded structs flattened, "-" skipped).
func fieldNames(t reflect.Type) map[string]bool {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	collectFields(t, m)
	fieldCache.Store(t, m)
	return m
}

func collectFields(t reflect.Type, m map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			collectFields(f.Type, m)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = true
	}
}

// ArgNames returns the argument names an endpoint accepts, sorted (none
// when it takes no arguments).
func (e Endpoint) ArgNames() []string {
	if e.Args == nil {
		return nil
	}
	m := fieldNames(reflect.TypeOf(e.Args))
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// newArgs returns a pointer to a new zero value of the endpoint's Args
// type (nil when it takes none).
func (e Endpoint) newArgs() any {
	if e.Args == nil {
		return nil
	}
	return reflect.New(reflect.TypeOf(e.Args)).Interface()
}

// noArgs is the Args of endpoints that take none.
type noArgs struct{}
