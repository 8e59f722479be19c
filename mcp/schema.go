package mcp

import "slices"

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
// names; no other property is allowed.
func object(desc string, props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if desc != "" {
		o["description"] = desc
	}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// projectProp is the optional project every named tool accepts.
var projectProp = str("project scope (default: the server's --project, else \"default\")")

// idempotencyProp is the optional client key of a command: it names the
// events appended, so a re-sent call appends nothing new and replies the
// same decision.
var idempotencyProp = obj{"type": "string", "minLength": 1, "maxLength": 100, "pattern": `^\S+$`,
	"description": "commands: names the events appended; re-sending the same request with the same key appends nothing new and replies the same decision; another request under a used key is refused (code 422)"}

// withoutProps removes properties (and their required entries) from an
// object schema.
func withoutProps(o obj, names ...string) obj {
	props, _ := o["properties"].(obj)
	req, _ := o["required"].([]string)
	for _, n := range names {
		delete(props, n)
		req = slices.DeleteFunc(req, func(r string) bool { return r == n })
	}
	if len(req) > 0 {
		o["required"] = req
	} else {
		delete(o, "required")
	}
	return o
}

// mustSchema panics on a wiring bug (a missing or broken embedded schema).
func mustSchema(o obj, err error) obj {
	if err != nil {
		panic("mcp: " + err.Error())
	}
	return o
}
