package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
)

type kEntry struct {
	ID             string  `json:"id"`
	Tier           string  `json:"tier"`
	Lesson         string  `json:"lesson"`
	Status         string  `json:"status"`
	ArchiveReason  string  `json:"archive_reason"`
	EncounterScore float64 `json:"encounter_score"`
	PromotionRoute string  `json:"promotion_route"`
}

func inProject(p string) func(*api.Request) { return func(r *api.Request) { r.Project = p } }

// TestKnowledgeOverTwelvePhases drives the knowledge stores through the API
// with three projects: reinforcement, hive promotion (fast-track and
// explicit), a cross-project encounter, a todo archived by its TTL, a
// quarantined entry never injected, a rejected dangerous lesson kept, and
// the injection budget by headroom.
func TestKnowledgeOverTwelvePhases(t *testing.T) {
	n := startNode(t, node.Config{})
	runNode(t, n)
	a := serveAPI(t, n)
	projects := []string{"web", "api", "cli"}
	add := func(project string, phase int, lesson, category string, tags []string, extra map[string]any) (res struct {
		ID          string `json:"id"`
		Outcome     string `json:"outcome"`
		DuplicateOf string `json:"duplicate_of"`
		Layer       int    `json:"layer"`
		Reason      string `json:"reason"`
	}) {
		t.Helper()
		args := map[string]any{"lesson": lesson, "category": category, "phase": phase, "confidence": 0.8}
		if tags != nil { // null is not an array: the schema refuses it, as record.event does
			args["tags"] = tags
		}
		for k, v := range extra {
			args[k] = v
		}
		var reply api.CommandReply
		if err := a.call("knowledge", "add", args, &reply, inProject(project)); err != nil {
			t.Fatalf("add %q: %v", lesson, err)
		}
		if err := jsonUnmarshalTest(reply.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	list := func(project string, args map[string]any) []kEntry {
		t.Helper()
		var es []kEntry
		if err := a.call("knowledge", "list", args, &es, inProject(project)); err != nil {
			t.Fatal(err)
		}
		return es
	}
	complete := func(project string, phase int) {
		t.Helper()
		if err := a.call("phase", "complete", map[string]any{"phase": phase}, nil, inProject(project)); err != nil {
			t.Fatalf("phase complete: %v", err)
		}
	}
	common := "Run the type checker before every commit to catch type errors early"
	first := add("web", 1, common, "testing", []string{"typescript"}, map[string]any{"hive_eligible": true})
	if first.Outcome != "added" {
		t.Fatalf("first submission: %+v", first)
	}
	fast := add("api", 1, "Pin the Node.js version in CI so builds are reproducible across machines", "tooling",
		[]string{"hive-fast-track", "ci"}, nil)
	todo := add("cli", 1, "TODO: replace the hand-written flag parser with cobra", "todo", nil, nil)
	bad := add("web", 1, "To clean the build cache quickly run rm -rf / as root", "tooling", nil, nil)
	if bad.Outcome != "rejected" || bad.Layer != 2 {
		t.Fatalf("dangerous lesson: %+v, want rejected at layer 2", bad)
	}
	stale := add("api", 1, "Prefer small pull requests that change a single module at a time", "process", nil, nil)
	secret := add("cli", 1, "Retry flaky network calls in the deploy script with exponential backoff", "integration", []string{"deploy"}, nil)

	for phase := 1; phase <= 12; phase++ {
		if phase > 1 && phase <= 4 { // the common lesson is met again in web
			r := add("web", phase, common+".", "testing", []string{"typescript"}, nil)
			if r.Outcome != "reinforced" || r.DuplicateOf != first.ID {
				t.Fatalf("phase %d: resubmission %+v, want reinforcement of %s", phase, r, first.ID)
			}
		}
		if phase == 6 || phase == 7 { // other projects meet the hive lesson
			add(projects[phase-5], phase, common, "testing", []string{"typescript"}, nil)
		}
		if phase == 2 {
			var q api.CommandReply
			if err := a.call("knowledge", "quarantine", map[string]any{"id": secret.ID[:8], "reason": "leaks the deploy host"}, &q, inProject("cli")); err != nil {
				t.Fatalf("quarantine by prefix: %v", err)
			}
		}
		for _, p := range projects {
			complete(p, phase)
		}
	}

	// Hive: the fast-tracked lesson and the common one (explicit route). Hive
	// entries age at every project's phase completion (SPEC §5), so after 36
	// completions they may be archived by TTL: list them all.
	hive := list("web", map[string]any{"tier": "hive", "all": true})
	byLesson := map[string]kEntry{}
	for _, e := range hive {
		byLesson[strings.TrimSuffix(e.Lesson, ".")] = e
	}
	if e, ok := byLesson[strings.TrimSuffix("Pin the Node.js version in CI so builds are reproducible across machines", ".")]; !ok {
		t.Errorf("fast-tracked lesson %s not in the hive: %+v", fast.ID, hive)
	} else if e.PromotionRoute != "fast-track" {
		t.Errorf("fast-tracked hive entry: %+v", e)
	}
	if e, ok := byLesson[common]; !ok {
		t.Errorf("reinforced hive-eligible lesson not promoted to the hive: %+v", hive)
	} else if e.PromotionRoute != "explicit" || e.EncounterScore <= 1.0 {
		t.Errorf("hive entry met by other projects: %+v, want the explicit route and an encounter score > 1.0", e)
	}
	// TTLs: the todo is gone from view; the unconfirmed lesson is archived.
	all := list("cli", map[string]any{"all": true})
	for _, e := range all {
		if e.ID == todo.ID && (e.Status != "archived" || e.ArchiveReason != "ttl-todo") {
			t.Errorf("todo after 12 phases: %+v", e)
		}
	}
	for _, e := range list("api", map[string]any{}) {
		if e.ID == stale.ID {
			t.Errorf("an unconfirmed lesson is still active after 12 phases: %+v", e)
		}
	}
	// Rejected lessons are kept with their layer and reason.
	var rejected []map[string]any
	if err := a.call("knowledge", "rejected", nil, &rejected, inProject("web")); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 || !strings.Contains(fmt.Sprint(rejected[0]), "rm -rf") {
		t.Errorf("rejected model: %v", rejected)
	}
	// Budgets by headroom; the quarantined lesson is never shown.
	for _, c := range []struct {
		headroom        float64
		maxEntries, max int
	}{{0.7, 5, 2000}, {0.3, 2, 1000}, {0.1, 1, 500}, {0.03, 0, 0}} {
		var inj struct {
			Text    string `json:"text"`
			Chars   int    `json:"chars"`
			Entries []struct {
				ID string `json:"id"`
			} `json:"entries"`
		}
		var reply api.CommandReply
		if err := a.call("knowledge", "inject", map[string]any{"task": "retry deploy calls and check types before commit",
			"headroom": c.headroom}, &reply, inProject("cli")); err != nil {
			t.Fatal(err)
		}
		if err := jsonUnmarshalTest(reply.Result, &inj); err != nil {
			t.Fatal(err)
		}
		if len(inj.Entries) > c.maxEntries || inj.Chars > c.max {
			t.Errorf("headroom %.2f: %d entries, %d chars; budget %d entries, %d chars", c.headroom, len(inj.Entries), inj.Chars, c.maxEntries, c.max)
		}
		if c.headroom >= 0.1 && len(inj.Entries) == 0 {
			t.Errorf("headroom %.2f: nothing injected", c.headroom)
		}
		if c.headroom < 0.05 && inj.Text != "" {
			t.Errorf("headroom %.2f: %q, want nothing", c.headroom, inj.Text)
		}
		for _, e := range inj.Entries {
			if e.ID == secret.ID {
				t.Errorf("headroom %.2f: the quarantined entry was injected", c.headroom)
			}
		}
	}
}
