package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/loredev/lore/schemas"
)

// obj is a JSON Schema object under construction.
type obj = map[string]any

// prop helpers keep the tool schemas short and readable.
func str(desc string) obj { return obj{"type": "string", "description": desc} }
func num(desc string) obj { return obj{"type": "number", "description": desc} }
func integer(desc string) obj {
	return obj{"type": "integer", "minimum": 0, "description": desc}
}
func strs(desc string) obj {
	return obj{"type": "array", "items": obj{"type": "string"}, "description": desc}
}
func enum(desc string, vals ...string) obj {
	return obj{"type": "string", "enum": vals, "description": desc}
}

// object returns an object schema with the given properties and required
// names.
func object(desc string, props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "description": desc}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// projectProp is the optional project every named tool accepts.
var projectProp = str("project scope (default: the server's --project, else \"default\")")

// fromEventSchema builds a tool schema from the data schema of an event
// type (its properties, descriptions and required fields), without the
// fields in drop, plus extra properties.
func fromEventSchema(typ string, drop []string, extra obj) (obj, error) {
	raw, err := schemas.FS.ReadFile(schemas.FileName(typ))
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", typ, err)
	}
	var s obj
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", typ, err)
	}
	props, _ := s["properties"].(obj)
	if props == nil {
		props = obj{}
	}
	skip := map[string]bool{}
	for _, d := range drop {
		delete(props, d)
		skip[d] = true
	}
	for k, v := range extra {
		props[k] = v
	}
	var req []string
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok && !skip[name] {
				req = append(req, name)
			}
		}
	}
	desc, _ := s["description"].(string)
	return object(desc, props, req...), nil
}

// mustSchema panics on a wiring bug (a missing or broken embedded schema).
func mustSchema(o obj, err error) obj {
	if err != nil {
		panic("mcp: " + err.Error())
	}
	return o
}

// freeForm is the schema of an endpoint whose arguments lore does not
// describe: any object, passed through as the endpoint's args.
func freeForm(doc string) obj {
	return obj{"type": "object", "additionalProperties": true,
		"description": "arguments of the endpoint (JSON object), passed as its args: " + doc}
}
