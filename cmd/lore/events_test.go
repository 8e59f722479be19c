package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestEventsTailCountsOnlyTheWantedTypes: -n N --type T prints the last N
// events of type T however far back they lie, not the T events among the
// last N of the log; --project filters the same way.
func TestEventsTailCountsOnlyTheWantedTypes(t *testing.T) {
	t.Parallel()
	url := cliNode(t)
	bg := context.Background()
	rec := func(project, typ string, sets ...string) {
		t.Helper()
		args := []string{"--nats", url, "--project", project, "record", typ}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		stdin := ""
		if len(sets) == 0 {
			stdin = "{}"
		}
		if code, out, errs := cli(t, bg, stdin, args...); code != 0 {
			t.Fatalf("record %s: exit %d, out %q, err %q", typ, code, out, errs)
		}
	}
	// Three errors, then 30 ticks: the errors lie beyond a window of 20.
	for i := range 3 {
		rec("web", "error.recorded", "bead_id=bd-1", "error_type=timeout", fmt.Sprintf("message=slow %d", i))
	}
	rec("api", "error.recorded", "bead_id=bd-2", "error_type=timeout", "message=other project")
	for range 30 {
		rec("web", "clock.ticked")
	}
	tail := func(args ...string) []map[string]any {
		t.Helper()
		code, out, errs := cli(t, bg, "", append([]string{"--nats", url, "--json", "events", "tail"}, args...)...)
		if code != 0 {
			t.Fatalf("tail %v: exit %d, err %q", args, code, errs)
		}
		var evs []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("tail line %q: %v", line, err)
			}
			evs = append(evs, ev)
		}
		return evs
	}
	got := tail("-n", "2", "--type", "error.recorded")
	if len(got) != 2 || got[0]["project"] != "web" || got[1]["project"] != "api" {
		t.Fatalf("-n 2 --type error.recorded: %v, want the last two errors in log order", got)
	}
	if got = tail("-n", "10", "--type", "error.recorded"); len(got) != 4 {
		t.Fatalf("-n 10 --type error.recorded: %d events, want all 4", len(got))
	}
	got = tail("-n", "2", "--type", "error.recorded", "--project", "web")
	if len(got) != 2 || !strings.Contains(fmt.Sprint(got[1]["data"]), "slow 2") || !strings.Contains(fmt.Sprint(got[0]["data"]), "slow 1") {
		t.Fatalf("-n 2 --type error.recorded --project web: %v", got)
	}
	if got = tail("-n", "5"); len(got) != 5 || got[4]["type"] != "clock.ticked/v1" {
		t.Fatalf("-n 5: %v", got)
	}
	if got = tail("--from-seq", "3", "--type", "error.recorded"); len(got) != 2 {
		t.Fatalf("--from-seq 3 --type error.recorded: %d events, want 2", len(got))
	}
}

// TestEventsTypesColumnsAlign: every row of `events types` starts its
// aggregate and meaning columns where the header's do.
func TestEventsTypesColumnsAlign(t *testing.T) {
	t.Parallel()
	code, out, errs := cli(t, context.Background(), "", "events", "types")
	if code != 0 {
		t.Fatalf("events types: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	aggCol, docCol := strings.Index(header, "AGGREGATE"), strings.Index(header, "MEANING")
	if aggCol < 0 || docCol < 0 {
		t.Fatalf("header %q", header)
	}
	word := regexp.MustCompile(`\S`)
	for _, l := range lines[1:] {
		if len(l) <= docCol || l[aggCol-1] != ' ' || l[docCol-1] != ' ' || !word.MatchString(l[aggCol:aggCol+1]) || !word.MatchString(l[docCol:docCol+1]) {
			t.Errorf("misaligned row (columns at %d and %d):\n%s\n%s", aggCol, docCol, header, l)
		}
	}
}
