package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

// TestEveryEndpointRefusesAnUnknownArgument: every endpoint, query or
// command, refuses an argument it does not take with 400 naming it, and
// appends nothing.
func TestEveryEndpointRefusesAnUnknownArgument(t *testing.T) {
	b := newMemBackend(t)
	p := app.NewPipeline(b)
	for _, e := range app.Endpoints() {
		_, _, err := do[any](t, p, e.Group, e.Name, app.Call{Args: []byte(`{"no_such_argument":1}`)})
		bad := errors.Is(err, app.ErrBadRequest) || errors.Is(err, events.ErrInvalidEvent)
		if !bad || !strings.Contains(err.Error(), "no_such_argument") {
			t.Errorf("%s: %v", e.Subject(), err)
		}
	}
	if len(b.log) != 0 {
		t.Errorf("%d events appended", len(b.log))
	}
}

// TestEveryHandlerBindsItsDeclaredArgs: each handler decodes into the
// type its Endpoint.Args declares (the type MCP describes to clients).
func TestEveryHandlerBindsItsDeclaredArgs(t *testing.T) {
	b := newMemBackend(t)
	p := app.NewPipeline(b)
	for _, e := range app.Endpoints() {
		_, _, err := do[any](t, p, e.Group, e.Name, app.Call{Args: []byte(`{}`)})
		if err != nil && strings.Contains(err.Error(), "differs from Endpoint.Args") {
			t.Errorf("%s: %v", e.Subject(), err)
		}
	}
}
