package conformance_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Meta-tests of the handlers: a handler that ignores part of its case's
// input passes whatever that part says. Each case that runs is re-run
// under a recorder with its input changed, and must then fail.

// recorder is a T that records failures; Fatal ends the handler.
type recorder struct {
	failed   bool
	first    string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Error(args ...any)         { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }
func (r *recorder) Fatal(args ...any)         { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) {
	r.fail(fmt.Sprintf(f, a...))
	runtime.Goexit()
}

func (r *recorder) fail(msg string) {
	if !r.failed {
		r.failed, r.first = true, msg
	}
}

// runRecorded runs h on c and reports whether the case failed (a panic
// is a failure) and the first failure's message.
func runRecorded(h Handler, c Case) (bool, string) {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.fail(fmt.Sprint("panic: ", p))
			}
		}()
		h(r, c)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.failed, r.first
}

// mutations returns copies of v, each with one leaf changed (a number
// doubled plus one, a string extended, a boolean flipped), labelled by the
// leaf's path.
func mutations(v any, path string) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			for p, m := range mutations(e, path+"."+k) {
				cp := make(map[string]any, len(x))
				for k2, e2 := range x {
					cp[k2] = e2
				}
				cp[k] = m
				out[p] = cp
			}
		}
	case []any:
		for i, e := range x {
			for p, m := range mutations(e, fmt.Sprintf("%s[%d]", path, i)) {
				cp := append([]any(nil), x...)
				cp[i] = m
				out[p] = cp
			}
		}
	case float64:
		out[path+" (2x+1)"] = x*2 + 1
		if x != 0 {
			out[path+" (0)"] = 0.0
		}
	case string:
		out[path+" (extended)"] = x + " mutated"
		if x != "" {
			out[path+" (emptied)"] = ""
		}
	case bool:
		out[path+" (flipped)"] = !x
	}
	return out
}

func runnableCases(t *testing.T) []Case {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata: %v", err)
	}
	var out []Case
	for _, f := range files {
		for _, c := range loadCases(t, f) {
			if runStatuses[c.Lore] && handlers[c.File+":"+c.Fn] != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestConformanceUnknownInputFails: a field no handler reads, added to a
// case's input, fails the case.
func TestConformanceUnknownInputFails(t *testing.T) {
	n := 0
	for _, c := range runnableCases(t) {
		var in map[string]any
		if json.Unmarshal(c.Input, &in) != nil || in == nil {
			continue
		}
		if wholeInput[c.File+":"+c.Fn] {
			continue // lore itself judges the whole document
		}
		in["field_no_handler_reads"] = 1
		m := c
		m.Input, _ = json.Marshal(in)
		if failed, _ := runRecorded(handlers[c.File+":"+c.Fn], m); !failed {
			t.Errorf("%s#%d %s: an unknown input field passed", c.File, c.Index, c.Fn)
		}
		n++
	}
	t.Logf("%d cases refuse an unknown input field", n)
}

// TestConformanceInputsMatter: every case passes as written, and changing
// its input makes it fail for at least one leaf; per function, the share
// of leaves whose change is noticed is logged.
func TestConformanceInputsMatter(t *testing.T) {
	type tally struct{ leaves, noticed int }
	byFn := map[string]*tally{}
	// noticedField[fn][field]: a change of the field (array indices and
	// the kind of change dropped) failed some case of fn.
	noticedField := map[string]map[string]bool{}
	referenced := map[string]bool{}
	for _, c := range runnableCases(t) {
		h := handlers[c.File+":"+c.Fn]
		if failed, msg := runRecorded(h, c); failed {
			t.Errorf("%s#%d %s fails as written: %s", c.File, c.Index, c.Fn, msg)
			continue
		}
		var in any
		if err := json.Unmarshal(c.Input, &in); err != nil {
			t.Fatal(err)
		}
		key := c.File + ":" + c.Fn
		if byFn[key] == nil {
			byFn[key] = &tally{}
		}
		if c.Lore != "open" {
			// an open case is settled by a property of lore's rule that
			// may hold for any input
			referenced[key] = true
		}
		if noticedField[key] == nil {
			noticedField[key] = map[string]bool{}
		}
		for p, m := range mutations(in, "input") {
			mc := c
			mc.Input, _ = json.Marshal(m)
			byFn[key].leaves++
			field := fieldOf(p)
			failed, _ := runRecorded(h, mc)
			if failed {
				byFn[key].noticed++
			}
			noticedField[key][field] = noticedField[key][field] || failed
		}
	}
	// A function none of whose cases notices any change of its input
	// ignores it. A field no case notices is reported for review: the
	// present cases may not be able to show it read (a configuration key
	// the function does not use, a bead with no errors).
	for fn, fields := range noticedField {
		var any bool
		var unseen []string
		for f, ok := range fields {
			any = any || ok
			if !ok && f != "input.note" {
				unseen = append(unseen, f)
			}
		}
		if len(fields) > 0 && !any && referenced[fn] && inputBlind[fn] == "" {
			t.Errorf("%s: no change of its input fails any of its cases", fn)
		}
		if len(unseen) > 0 && !wholeInput[fn] {
			sort.Strings(unseen)
			t.Logf("%s: no case shows these read: %s", fn, strings.Join(unseen, ", "))
		}
	}
	keys := make([]string, 0, len(byFn))
	for k := range byFn {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d/%d input changes noticed", k, byFn[k].noticed, byFn[k].leaves)
	}
}

var indexRe = regexp.MustCompile(`\[\d+\]`)

// fieldOf is a mutation's field: its path without array indices or the
// kind of change.
func fieldOf(path string) string {
	if i := strings.Index(path, " ("); i >= 0 {
		path = path[:i]
	}
	return indexRe.ReplaceAllString(path, "[]")
}

// wholeInput marks the functions whose case input is a document lore
// judges as a whole (a schema validation): an unknown field is the
// validator's business, not the handler's.
var wholeInput = map[string]bool{}

// inputBlind lists the functions whose present cases cannot show their
// input read (no change of it changes the reference's answer), with why.
var inputBlind = map[string]string{
	"swarm_learning:ErrorAccumulator.getErrorStats": "its one case asks about a bead with no errors recorded: any bead id gives empty stats",
}
