// Package conformance runs the golden cases of testdata/*.json against lore's
// public functions. Every file in testdata is picked up with no code change:
// a case is dispatched by (file, fn) to a handler registered in one of the
// *_cases_test.go files of this folder.
//
// Statuses (testdata's "lore" field):
//
//	conform       the handler must reproduce "expected"
//	departs       SPEC.md differs; the handler asserts lore's value
//	open          the reference is undefined; the handler asserts SPEC.md
//	superseded    an older reference version: counted, not run
//	informational the reference's own format: counted, not run
//	n/a           a feature lore does not have: counted, not run
package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Case is one golden case.
type Case struct {
	File     string          `json:"-"`
	Index    int             `json:"-"`
	Fn       string          `json:"fn"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`
	Lore     string          `json:"lore"`
	Note     string          `json:"note"`
	Source   string          `json:"source"`
	// Refs names the reference versions the case was obtained from.
	Refs []string `json:"refs"`
}

// RefersTo reports whether the case was obtained from reference version v
// (e.g. "v7.103.2").
func (c Case) RefersTo(v string) bool {
	for _, r := range c.Refs {
		if r == v || strings.HasPrefix(r, v+" ") {
			return true
		}
	}
	return false
}

// allCases holds every loaded case by file base, for handlers that settle
// a case by another one (the same input run on another reference version).
var allCases = map[string][]Case{}

// sameInputCase finds a case of c's file and function with c's input
// (compared as JSON values) obtained from reference version v.
func sameInputCase(c Case, v string) (Case, bool) {
	var in any
	if json.Unmarshal(c.Input, &in) != nil {
		return Case{}, false
	}
	for _, o := range allCases[c.File] {
		var oin any
		if o.Index == c.Index || o.Fn != c.Fn || !o.RefersTo(v) || json.Unmarshal(o.Input, &oin) != nil {
			continue
		}
		if reflect.DeepEqual(in, oin) {
			return o, true
		}
	}
	return Case{}, false
}

// Handler runs one case and reports mismatches through t.
type Handler func(t T, c Case)

// handlers maps "<file base>:<fn>" (e.g. "swarm_learning:scoreOutcome") to
// its handler. Files register in init.
var handlers = map[string]Handler{}

func register(file, fn string, h Handler) {
	key := file + ":" + fn
	if _, dup := handlers[key]; dup {
		panic("conformance: duplicate handler " + key)
	}
	handlers[key] = h
}

var runStatuses = map[string]bool{"conform": true, "departs": true, "open": true}
var skipStatuses = map[string]bool{"superseded": true, "informational": true, "n/a": true}

func loadCases(t T, path string) []Case {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var cases []Case
	if err := json.Unmarshal(raw, &cases); err != nil {
		var doc struct {
			Cases []Case `json:"cases"`
		}
		if err2 := json.Unmarshal(raw, &doc); err2 != nil {
			t.Fatalf("%s: neither a list of cases nor {cases: [...]}: %v", path, err)
		}
		cases = doc.Cases
	}
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	for i := range cases {
		cases[i].File, cases[i].Index = base, i
	}
	allCases[base] = cases
	return cases
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata: %v", err)
	}
	for _, f := range files {
		cases := loadCases(t, f)
		counts := map[string]int{}
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, c := range cases {
				name := fmt.Sprintf("%03d_%s_%s", c.Index, c.Fn, c.Lore)
				switch {
				case skipStatuses[c.Lore]:
					counts["skipped "+c.Lore]++
					continue
				case !runStatuses[c.Lore]:
					t.Errorf("case %d (%s): unknown status %q", c.Index, c.Fn, c.Lore)
					continue
				}
				h, ok := handlers[c.File+":"+c.Fn]
				if !ok {
					t.Errorf("case %d: no handler for %s:%s (status %s): every case that must run needs one", c.Index, c.File, c.Fn, c.Lore)
					counts["unhandled"]++
					continue
				}
				counts["asserted "+c.Lore]++
				t.Run(name, func(t *testing.T) { h(t, c) })
			}
		})
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
		}
		t.Logf("%s: %d cases: %s", filepath.Base(f), len(cases), strings.Join(parts, " "))
	}
}

// decodeInput decodes c.Input into v strictly: a field v does not declare
// (at any depth) fails the case, naming the field and the case, so that no
// part of a case's input can be silently ignored. The only exception is a
// top-level "note", the case author's comment, which is logged, not decoded.
func decodeInput(t T, c Case, v any) {
	t.Helper()
	raw := c.Input
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		if note, ok := obj["note"]; ok {
			t.Logf("note: %s", note)
			delete(obj, "note")
			var err error
			if raw, err = json.Marshal(obj); err != nil {
				t.Fatalf("case %s#%d (%s): input: %v", c.File, c.Index, c.Fn, err)
			}
		}
	}
	if err := strictUnmarshal(raw, v); err != nil {
		t.Fatalf("case %s#%d (%s): input: %v", c.File, c.Index, c.Fn, err)
	}
}

// strictUnmarshal is json.Unmarshal that refuses unknown fields and
// trailing data.
func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", raw, err)
	}
	if dec.More() {
		return fmt.Errorf("decode %s: trailing data", raw)
	}
	return nil
}

// T is what a handler needs of a test: *testing.T, or the recorder the
// mutation test runs handlers with.
type T interface {
	Helper()
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Log(args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}
