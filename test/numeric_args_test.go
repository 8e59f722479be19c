package test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
)

// numericArgsBaseline are the arguments an endpoint needs besides the one
// under test to reach its checks (a required field it checks first).
var numericArgsBaseline = map[string]map[string]any{
	"patterns.inject": {"task": "fix the parser"},
}

// TestNumericArgumentsBelowTheirRange: every number an endpoint takes as
// an argument (a count, a page, a bound, a rate) given -1 is refused by
// the API, naming it, as the CLI's flags refuse it: none is taken for
// "no bound" or matched against nothing. Endpoints whose arguments are an
// event's data are left to that event's schema (its minimums).
func TestNumericArgumentsBelowTheirRange(t *testing.T) {
	cl := servedClient(t)
	tested := 0
	for _, e := range app.Endpoints() {
		if e.Args == nil || e.Data != "" {
			continue
		}
		rt := reflect.TypeOf(e.Args)
		for i := range rt.NumField() {
			f := rt.Field(i)
			k := f.Type.Kind()
			if k == reflect.Pointer {
				k = f.Type.Elem().Kind()
			}
			if k != reflect.Int && k != reflect.Float64 {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			args := map[string]any{name: -1}
			for k, v := range numericArgsBaseline[e.Group+"."+e.Name] {
				args[k] = v
			}
			req, err := api.NewRequest(args)
			if err != nil {
				t.Fatal(err)
			}
			req.Project = "numeric"
			_, err = cl.CallRaw(context.Background(), e.Group, e.Name, req)
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != "400" || !strings.Contains(ae.Message, fmt.Sprintf("%q", name)) {
				t.Errorf("%s.%s {%q: -1}: %v; want a bad request naming the field", e.Group, e.Name, name, err)
			}
			tested++
		}
	}
	if tested < 20 {
		t.Fatalf("only %d numeric arguments found: the reflection misses the endpoints' arguments", tested)
	}
}
