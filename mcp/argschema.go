package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/schemas"
)

// argsSchema is the exact input schema of a tool whose arguments decode
// into a value of args's type (a struct or pointer to one; nil: the tool
// takes none), plus the extra properties every such tool takes.
//
// Invariants: every object in it has additionalProperties false (an unknown
// argument is refused); a struct that is an event payload (the type itself,
// an embedded struct, or the elements of a field) takes its properties,
// constraints, descriptions and required fields from the event type's JSON
// Schema, the schema appends are validated against, with the rules the
// event schema states across fields (anyOf ...); nothing else is required
// (the endpoint names what it lacks).
func argsSchema(args any, desc string, extra obj) (obj, error) {
	props, req, rules := obj{}, []string(nil), obj{}
	if args != nil {
		t := reflect.TypeOf(args)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		js, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: rawTypes})
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		s, err := toObj(js)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		if err := refine(s, t); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		if p, ok := s["properties"].(obj); ok {
			props = p
		}
		if r, ok := s["required"].([]string); ok {
			req = r
		}
		if d, ok := s["description"].(string); ok && desc == "" {
			desc = d
		}
		for _, k := range crossFieldKeys {
			if v, ok := s[k]; ok {
				rules[k] = v
			}
		}
	}
	// An extra describes a common property; it replaces the inferred one.
	for k, v := range extra {
		props[k] = v
	}
	o := object(desc, props, req...)
	for k, v := range rules {
		o[k] = v
	}
	return o, nil
}

// crossFieldKeys are the keywords of rules across an object's fields.
var crossFieldKeys = []string{"anyOf", "oneOf", "allOf", "not", "dependentRequired", "if", "then", "else"}

// rawTypes are the types holding any JSON value as is (an event's data, a
// document): any value is valid there; the endpoint checks it.
var rawTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage]():   {},
	reflect.TypeFor[gojson.RawMessage](): {},
	reflect.TypeFor[any]():               {},
}

// toObj turns a schema into its JSON object form.
func toObj(s *jsonschema.Schema) (obj, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var o obj
	return o, json.Unmarshal(b, &o)
}

// refine rewrites the schema s inferred from t: event payload properties
// from the event's schema, required fields from event schemas only.
func refine(s obj, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if items, ok := s["items"].(obj); ok {
			return refine(items, t.Elem())
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	props, _ := s["properties"].(obj)
	if props == nil {
		return nil
	}
	delete(s, "required")
	delete(s, "propertyOrder")
	fromEvent := map[string]bool{}
	var required []string
	// The type itself and each embedded struct may be an event payload.
	for _, et := range append([]reflect.Type{t}, embedded(t)...) {
		typ, ok := payloadTypes()[et]
		if !ok {
			continue
		}
		es, err := eventSchema(typ)
		if err != nil {
			return err
		}
		eprops, _ := es["properties"].(obj)
		for name, p := range eprops {
			if _, declared := props[name]; declared {
				props[name], fromEvent[name] = p, true
			}
		}
		if r, ok := es["required"].([]any); ok {
			for _, x := range r {
				if name, ok := x.(string); ok && fromEvent[name] {
					required = append(required, name)
				}
			}
		}
		if d, ok := es["description"].(string); ok {
			s["description"] = d
		}
		// Rules across the event's fields (pattern_id or content) hold
		// for the arguments too.
		for _, k := range crossFieldKeys {
			if v, ok := es[k]; ok {
				if prev, dup := s[k]; dup {
					s["allOf"] = []any{obj{k: prev}, obj{k: v}}
					delete(s, k)
					continue
				}
				s[k] = v
			}
		}
	}
	for _, f := range reflect.VisibleFields(t) {
		name := jsonName(f)
		if name == "" || fromEvent[name] {
			continue
		}
		if p, ok := props[name].(obj); ok {
			if err := refine(p, f.Type); err != nil {
				return err
			}
		}
	}
	sort.Strings(required)
	if len(required) > 0 {
		s["required"] = required
	}
	s["additionalProperties"] = false
	return nil
}

// embedded lists the struct types embedded in t, at any depth.
func embedded(t reflect.Type) []reflect.Type {
	var out []reflect.Type
	for _, f := range reflect.VisibleFields(t) {
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft.Kind() == reflect.Struct && jsonTagName(f) == "" {
			out = append(out, ft)
		}
	}
	return out
}

// jsonName is the JSON key of a field as encoding/json names it, "" when
// it has none (unexported, "-", or an embedded struct whose fields are
// promoted).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() || f.Tag.Get("json") == "-" {
		return ""
	}
	if n := jsonTagName(f); n != "" {
		return n
	}
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if f.Anonymous && ft.Kind() == reflect.Struct {
		return ""
	}
	return f.Name
}

func jsonTagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// payloadTypes maps each event payload's Go type to its event type.
var payloadTypes = sync.OnceValue(func() map[reflect.Type]string {
	m := map[reflect.Type]string{}
	for _, k := range events.Kinds() {
		t := reflect.TypeOf(k.New())
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		// The newest version wins: Kinds is sorted by type.
		m[t] = k.Type
	}
	return m
})

// eventSchema is the JSON Schema of an event type's data.
func eventSchema(typ string) (obj, error) {
	raw, err := schemas.FS.ReadFile(schemas.FileName(typ))
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", typ, err)
	}
	var s obj
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", typ, err)
	}
	return s, nil
}

// validator checks tool arguments against a tool's input schema.
type validator struct{ r *jsonschema.Resolved }

func newValidator(schema obj) (*validator, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &validator{r: r}, nil
}

// check validates args (a decoded JSON object); the error names what is
// wrong: an unknown argument, a missing or mistyped one.
func (v *validator) check(args obj) error {
	if v == nil {
		return nil
	}
	if err := v.r.Validate(map[string]any(args)); err != nil {
		msg := strings.TrimPrefix(err.Error(), "validating root: ")
		msg = topField.ReplaceAllString(msg, `field "$1": `)
		// The validator prints null, integers and whole bounds its own way.
		msg = strings.ReplaceAll(msg, "<invalid reflect.Value>", "null")
		msg = wholeRat.ReplaceAllString(msg, "$1")
		msg = wholeFloat.ReplaceAllString(msg, "$1")
		return fmt.Errorf("invalid arguments: %s", msg)
	}
	return nil
}

// topField is how the validator names a top-level argument in its errors.
var (
	topField   = regexp.MustCompile(`^validating /properties/([^/:]+): `)
	wholeRat   = regexp.MustCompile(`(-?\d+)/1\b`)
	wholeFloat = regexp.MustCompile(`(-?\d+)\.0+\b`)
)
