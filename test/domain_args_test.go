package test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
)

// hasProjectArg reports whether an argument struct takes "project"
// (its embedded structs included).
func hasProjectArg(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && hasProjectArg(f.Type) {
			return true
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "project" && f.Type.Kind() == reflect.String {
			return true
		}
	}
	return false
}

// TestProjectsTheLogCannotHold: a project name no event can carry (a
// space in it) is refused by every endpoint, named as the call's project
// or as a "project" argument (one that is not an event's data: the event's
// schema checks those), query or command alike: a query never answers an
// empty state for a project that cannot exist.
func TestProjectsTheLogCannotHold(t *testing.T) {
	cl := servedClient(t)
	call := func(e app.Endpoint, project string, args map[string]any) error {
		req, err := api.NewRequest(args)
		if err != nil {
			t.Fatal(err)
		}
		req.Project = project
		_, err = cl.CallRaw(context.Background(), e.Group, e.Name, req)
		return err
	}
	refused := func(err error) bool {
		var ae *api.Error
		return errors.As(err, &ae) && ae.Code == "400" && strings.Contains(ae.Message, `"project"`) && strings.Contains(ae.Message, "zz bogus")
	}
	args := 0
	for _, e := range app.Endpoints() {
		if err := call(e, "zz bogus", nil); !refused(err) {
			t.Errorf("%s with the call's project %q: %v; want a bad request naming the project", e.Subject(), "zz bogus", err)
		}
		// An event's data (e.Data) is its schema's to check.
		if e.Args != nil && e.Data == "" && hasProjectArg(reflect.TypeOf(e.Args)) {
			args++
			if err := call(e, "ok", map[string]any{"project": "zz bogus"}); !refused(err) {
				t.Errorf("%s {project: %q}: %v; want a bad request naming the project", e.Subject(), "zz bogus", err)
			}
		}
	}
	if args < 5 {
		t.Fatalf("only %d endpoints take a project argument: the reflection misses them", args)
	}
}

// TestDomainArgumentsRefused: a value outside an argument's domain is
// refused naming the argument, never matched against nothing.
func TestDomainArgumentsRefused(t *testing.T) {
	cl := servedClient(t)
	for _, c := range []struct {
		group, name, field string
		args               map[string]any
	}{
		{"knowledge", "list", "status", map[string]any{"status": "candidat"}},
		{"knowledge", "list", "category", map[string]any{"category": "nonsense"}},
		{"knowledge", "list", "tier", map[string]any{"tier": "global"}},
		{"knowledge", "decisions", "event_ids[1]", map[string]any{"event_ids": []string{"ok-id", "two words"}}},
		{"knowledge", "import", "format", map[string]any{"format": "knowledge.json", "submissions": []any{}}},
		{"patterns", "list", "type", map[string]any{"type": "errors"}},
	} {
		req, err := api.NewRequest(c.args)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.CallRaw(context.Background(), c.group, c.name, req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != "400" || !strings.Contains(ae.Message, `"`+c.field+`"`) {
			t.Errorf("%s.%s %v: %v; want a bad request naming %q", c.group, c.name, c.args, err, c.field)
		}
	}
}
