package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

func TestArgsSchemaFromArgumentStructs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     any
		props    []string // properties that must be declared
		required []string // exactly
	}{
		{"outcome: event payload embedded with a time", app.LearningOutcomeArgs{},
			[]string{"bead_id", "duration_ms", "error_count", "criteria", "time", "project"},
			[]string{"bead_id", "duration_ms", "retry_count", "success"}},
		{"weights: a query's optional filter", app.LearningWeightsArgs{}, []string{"criterion", "project"}, nil},
		{"manual: nested embedding", app.LearningManualArgs{}, []string{"pattern_id", "content", "reason", "time"}, nil},
		{"knowledge add: the payload itself", events.KnowledgeSubmitted{}, []string{"lesson", "category"}, []string{"category", "lesson"}},
		{"prune: pointers", app.PruneArgs{}, []string{"dry_run", "min_success_rate", "max_age_days"}, nil},
		{"no arguments", nil, []string{"project"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := argsSchema(tc.args, "", obj{"project": projectProp})
			if err != nil {
				t.Fatal(err)
			}
			if s["additionalProperties"] != false {
				t.Errorf("additionalProperties = %v, want false", s["additionalProperties"])
			}
			props, _ := s["properties"].(obj)
			for _, p := range tc.props {
				if props[p] == nil {
					t.Errorf("property %q missing: %v", p, props)
				}
			}
			req, _ := s["required"].([]string)
			slices.Sort(req)
			want := slices.Clone(tc.required)
			slices.Sort(want)
			if !slices.Equal(req, want) {
				t.Errorf("required = %v, want %v", req, want)
			}
		})
	}
}

func TestArgsSchemaTakesEventConstraints(t *testing.T) {
	s, err := argsSchema(app.LearningOutcomeArgs{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := s["properties"].(obj)["duration_ms"].(obj)
	if d["minimum"] != float64(0) || !strings.Contains(d["description"].(string), "time from start to completion") {
		t.Fatalf("duration_ms lacks the event schema's constraint and description: %v", d)
	}
	// Event payloads nested in a list are described by their event schema.
	s, err = argsSchema(app.KnowledgeImportArgs{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	items := s["properties"].(obj)["submissions"].(obj)["items"].(obj)
	if items["additionalProperties"] != false || !slices.Contains(toStrings(items["required"]), "lesson") {
		t.Fatalf("submissions items: %v", items)
	}
}

func toStrings(v any) []string {
	b, _ := json.Marshal(v)
	var out []string
	_ = json.Unmarshal(b, &out)
	return out
}

func TestValidatorNamesTheWrongArgument(t *testing.T) {
	s, err := argsSchema(app.LearningOutcomeArgs{}, "", obj{"project": projectProp})
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	ok := obj{"bead_id": "bd-1", "duration_ms": 5.0, "retry_count": 0.0, "success": true, "project": "web"}
	if err := v.check(ok); err != nil {
		t.Fatalf("valid arguments refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(obj)
		want string
	}{
		{"unknown argument", func(a obj) { a["durration_ms"] = 5.0 }, "durration_ms"},
		{"missing required", func(a obj) { delete(a, "duration_ms") }, "duration_ms"},
		{"null for a number", func(a obj) { a["duration_ms"] = nil }, `field "duration_ms": type: null has type "null", want "integer"`},
		{"below the minimum", func(a obj) { a["duration_ms"] = -5.0 }, `field "duration_ms": minimum: -5 is less than 0`},
		{"wrong type", func(a obj) { a["success"] = "yes" }, "success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := without(ok)
			tc.edit(a)
			err := v.check(a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// Every endpoint gets an exact schema from its declared arguments, with
// the request extras: project, and for a command its idempotency key.
func TestEndpointSchemasAreExact(t *testing.T) {
	for _, e := range app.Endpoints() {
		s, err := endpointSchema(e)
		if err != nil {
			t.Fatalf("%s: %v", e.Subject(), err)
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties %v", e.Subject(), s["additionalProperties"])
		}
		props, _ := s["properties"].(obj)
		if _, ok := props["project"]; !ok {
			t.Errorf("%s: no project property", e.Subject())
		}
		if _, ok := props["idempotency_key"]; ok != (e.Command != nil) {
			t.Errorf("%s: idempotency_key offered %v, command %v", e.Subject(), ok, e.Command != nil)
		}
		if _, err := newValidator(s); err != nil {
			t.Errorf("%s: schema does not resolve: %v", e.Subject(), err)
		}
	}
}

// recordArgs has the shape of an argument struct holding raw JSON (an
// envelope with its data) and an embedded pointer.
type recordArgs struct {
	*events.Event
	Events []*events.Event `json:"events,omitempty"`
}

func TestArgsSchemaRawJSONIsAnyValue(t *testing.T) {
	s, err := argsSchema(recordArgs{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.check(obj{"type": "x/v1", "data": obj{"a": 1.0}, "events": []any{obj{"data": "s"}}}); err != nil {
		t.Fatalf("raw JSON fields refused: %v", err)
	}
	if err := v.check(obj{"events": []any{obj{"dta": 1.0}}}); err == nil || !strings.Contains(err.Error(), "dta") {
		t.Fatalf("unknown key in a nested envelope: %v", err)
	}
}

func TestArgsSchemaKeepsTheEventsCrossFieldRules(t *testing.T) {
	s, err := argsSchema(app.LearningObserveArgs{}, "", obj{"project": projectProp})
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.check(obj{"success": true, "content": "split by layer", "time": "2026-01-01T00:00:00Z"}); err != nil {
		t.Fatalf("content alone refused: %v", err)
	}
	if err := v.check(obj{"success": true}); err == nil || !strings.Contains(err.Error(), "pattern_id") {
		t.Fatalf("neither pattern_id nor content: %v", err)
	}
}
