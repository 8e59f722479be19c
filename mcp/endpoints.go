package mcp

import (
	"github.com/loredev/lore/app"
)

// endpointSchema is the input schema of e's tool: its exact arguments plus
// the common extras.
func endpointSchema(e app.Endpoint) (obj, error) {
	return argsSchema(e.Args, e.Doc, commonExtras(e))
}

// commonExtras are the properties every endpoint tool takes besides the
// endpoint's arguments.
func commonExtras(e app.Endpoint) obj {
	extras := obj{"project": projectProp}
	if e.Command != nil {
		extras["idempotency_key"] = idempotencyProp
	}
	return extras
}
