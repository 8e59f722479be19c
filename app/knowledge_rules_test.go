package app_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

func newKView(t *testing.T) *kView {
	t.Helper()
	b := newMemBackend(t, knowledge.New())
	return &kView{p: app.NewPipeline(b), b: b}
}

func kImportSub(lesson, category, line string) events.KnowledgeSubmitted {
	return events.KnowledgeSubmitted{Lesson: lesson, Category: category,
		Import: &events.KnowledgeImport{Format: knowledge.FormatSwarm, Digest: knowledge.Digest([]byte(line))}}
}

// TestKnowledgeSeedCategoriesAtEveryDoor: the seed's categories (its own
// example entry uses "pattern") pass at every door — add, import, manual
// promotion — and a category in neither list is refused at each.
func TestKnowledgeSeedCategoriesAtEveryDoor(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, c := range append(append([]string{}, knowledge.SeedCategories...), knowledge.Categories...) {
		lesson := fmt.Sprintf("Use %s%d notes%d when tests%d run%d", c, i, i, i, i)
		res, err := v.call(t, "add", map[string]any{"lesson": lesson, "category": c}, now)
		if err != nil || res.(app.KnowledgeAddResult).Outcome != knowledge.OutcomeAdded {
			t.Fatalf("add category %q: %+v %v", c, res, err)
		}
	}
	res, err := v.call(t, "add", map[string]any{"lesson": "Prefer stream readers over buffers for the parser", "category": "patterns"}, now)
	if err != nil || res.(app.KnowledgeAddResult).Reason != "invalid category: patterns" {
		t.Fatalf("add of an unknown category: %+v %v", res, err)
	}
	imp, err := v.call(t, "import", app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Submissions: []events.KnowledgeSubmitted{
		kImportSub("Keep the release checklist in the repository root", "pattern", "a"),
		kImportSub("Keep the deploy checklist next to the deploy script", "patterns", "b")}}, now)
	if err != nil {
		t.Fatal(err)
	}
	ir := imp.(app.KnowledgeImportResult)
	if ir.Added != 1 || ir.Rejected != 1 || len(ir.Items) != 2 || ir.Items[1].Reason != "invalid category: patterns" {
		t.Fatalf("import report: %+v", ir)
	}
	if _, err := v.call(t, "promote", map[string]any{"lesson": "Record each architecture decision with its context", "category": "decision"}, now); err != nil {
		t.Fatal(err)
	}
	hive, _ := knowledge.HiveEntries(v.Model(knowledge.ModelName))
	if len(hive) != 1 || hive[0].Category != "decision" {
		t.Fatalf("promoted with a seed category: %+v", hive)
	}
}

// TestKnowledgeMaxPhasesSet: every new entry — added, imported without the
// field, promoted to the hive — carries max_phases, the configured
// default_max_phases at its creation, as the seed's entries do; an
// imported max_phases is kept.
func TestKnowledgeMaxPhasesSet(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := v.call(t, "configure", map[string]any{"config": map[string]any{"default_max_phases": 7}}, now); err != nil {
		t.Fatal(err)
	}
	res, err := v.call(t, "add", map[string]any{"lesson": "Run the api schema tests before every release build", "category": "testing",
		"tags": []string{knowledge.FastTrackTag}}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := res.(app.KnowledgeAddResult).ID
	if p := res.(app.KnowledgeAddResult).Promoted; len(p) != 1 || p[0].SwarmID != id || p[0].Route != knowledge.RouteFastTrack {
		t.Errorf("add reply's promotions %+v, want the fast-tracked entry", p)
	}
	withMax := kImportSub("Pin the docker base image digest in CI builds", "tooling", "c")
	withMax.Import.MaxPhases = 12
	if _, err := v.call(t, "import", app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Submissions: []events.KnowledgeSubmitted{
		kImportSub("Keep the release checklist in the repository root", "process", "a"), withMax}}, now); err != nil {
		t.Fatal(err)
	}
	r := v.Model(knowledge.ModelName)
	all, _ := knowledge.List(r, knowledge.ListOptions{Project: "web", All: true})
	want := map[string]int{"Run the api schema tests before every release build": 7,
		"Keep the release checklist in the repository root": 7, "Pin the docker base image digest in CI builds": 12}
	if len(all) != 4 {
		t.Fatalf("entries: %d, want 3 swarm and the fast-tracked hive one", len(all))
	}
	for _, e := range all {
		if e.MaxPhases != want[e.Lesson] {
			t.Errorf("%s %q: max_phases %d, want %d", e.Tier, e.Lesson, e.MaxPhases, want[e.Lesson])
		}
		if e.Tier == knowledge.TierHive && e.PromotedFrom != id {
			t.Errorf("hive entry from %s, want %s", e.PromotedFrom, id)
		}
	}
}

// TestKnowledgeMasterSwitch: with knowledge.enabled false every knowledge
// write is refused naming the switch, an injection shows nothing, a raw
// submission folded meanwhile stores nothing (its decision says why), and
// turning the switch back on restores everything.
func TestKnowledgeMasterSwitch(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	res, err := v.call(t, "add", map[string]any{"lesson": "Run the api schema tests before every release build", "category": "testing"}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := res.(app.KnowledgeAddResult).ID
	if _, err := v.call(t, "configure", map[string]any{"config": map[string]any{"enabled": false}}, now); err != nil {
		t.Fatal(err)
	}
	refused := map[string]any{
		"add":        map[string]any{"lesson": "Prefer small adapters around the file system for testing", "category": "testing"},
		"import":     app.KnowledgeImportArgs{Submissions: []events.KnowledgeSubmitted{kImportSub("Keep the release checklist in the repository root", "process", "a")}},
		"promote":    map[string]any{"entry_id": id},
		"quarantine": map[string]any{"id": id, "reason": "noise"},
		"outcome":    map[string]any{"id": id, "outcome": "helpful"},
		"curate":     map[string]any{},
		"rescan":     map[string]any{},
	}
	for name, a := range refused {
		if _, err := v.call(t, name, a, now); !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "knowledge.enabled") {
			t.Errorf("%s while disabled: %v, want a conflict naming knowledge.enabled", name, err)
		}
	}
	inj, err := v.call(t, "inject", map[string]any{"task": "api schema tests", "headroom": 1}, now)
	if err != nil || len(inj.(app.KnowledgeInjectResult).Entries) != 0 || inj.(app.KnowledgeInjectResult).InjectionID != "" {
		t.Fatalf("inject while disabled: %+v %v", inj, err)
	}
	// A submission published by another door (raw) is folded as nothing.
	ev, err := events.New("knowledge.submitted/v1", "web", "raw", now, &events.KnowledgeSubmitted{
		Lesson: "Prefer small adapters around the file system for testing", Category: "testing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.b.Append(t.Context(), []*events.Event{ev}, nil); err != nil {
		t.Fatal(err)
	}
	d, ok, err := knowledge.DecisionOf(v.Model(knowledge.ModelName), ev.ID)
	if err != nil || !ok || d.Outcome != knowledge.OutcomeDisabled || !strings.Contains(d.Reason, "knowledge.enabled") {
		t.Fatalf("raw submission while disabled: %+v %v %v", d, ok, err)
	}
	if es, _ := knowledge.List(v.Model(knowledge.ModelName), knowledge.ListOptions{Project: "web", All: true}); len(es) != 1 {
		t.Fatalf("entries while disabled: %d, want the one added before", len(es))
	}
	// Reading stays possible; the switch turns everything back on.
	if _, err := v.call(t, "show", map[string]any{"id": id}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := v.call(t, "configure", map[string]any{"config": map[string]any{"enabled": true}}, now); err != nil {
		t.Fatal(err)
	}
	if res, err := v.call(t, "add", refused["add"], now); err != nil || res.(app.KnowledgeAddResult).Outcome != knowledge.OutcomeAdded {
		t.Fatalf("add once enabled again: %+v %v", res, err)
	}
}

// TestKnowledgeInjectScopeDefault: an injection takes the scopes of
// knowledge.scope_filter (global) unless more are asked for, as the
// endpoint's and the MCP tool's schemas say.
func TestKnowledgeInjectScopeDefault(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := v.call(t, "add", map[string]any{"lesson": "Run go vet on every package before the api tests", "category": "testing", "scope": "stack:go"}, now); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scopes []string
		want   int
	}{{nil, 0}, {[]string{"stack:go"}, 1}, {[]string{"stack:rust"}, 0}} {
		inj, err := v.call(t, "inject", map[string]any{"task": "go vet api tests", "headroom": 1, "scopes": c.scopes}, now)
		if err != nil || len(inj.(app.KnowledgeInjectResult).Entries) != c.want {
			t.Errorf("inject with scopes %v: %+v %v, want %d entries", c.scopes, inj, err, c.want)
		}
	}
}

// TestKnowledgeImportReport: an import reports what the fold decided for
// each submission — added, rejected with the reason, a near-duplicate
// merged with the id it went into, the hive promotions it caused — and a
// merged id is looked up to the entry it went to, by id or prefix. A
// re-import sends nothing and still says where the merged one went.
func TestKnowledgeImportReport(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	old := now.AddDate(0, 0, -200)
	a := kImportSub("Pin the docker base image digest so CI builds stay reproducible", "tooling", "a")
	a.Import.OriginalID, a.Import.CreatedAt = "11111111-0000-4000-8000-000000000001", &old
	b := kImportSub("Pin the docker base image digest so CI builds stay reproducible always", "tooling", "b")
	b.Import.OriginalID = "22222222-0000-4000-8000-000000000002"
	c := kImportSub("Keep the release checklist in the repository root", "nonsense", "c")
	args := app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Submissions: []events.KnowledgeSubmitted{a, b, c}}
	res, err := v.call(t, "import", args, now)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(app.KnowledgeImportResult)
	if r.Sent != 3 || r.Added != 1 || r.Merged != 1 || r.Rejected != 1 || r.Pending != 0 || len(r.Items) != 3 {
		t.Fatalf("report %+v", r)
	}
	if it := r.Items[1]; it.Outcome != app.OutcomeMerged || it.ID != b.Import.OriginalID || it.MergedInto != a.Import.OriginalID {
		t.Errorf("merged item %+v", it)
	}
	if it := r.Items[2]; it.Outcome != knowledge.OutcomeRejected || it.Layer != 1 || it.Reason != "invalid category: nonsense" {
		t.Errorf("rejected item %+v", it)
	}
	if len(r.Promoted) != 1 || r.Promoted[0].SwarmID != a.Import.OriginalID || r.Promoted[0].Route != knowledge.RouteAge ||
		r.Promoted[0].HiveID != knowledge.HiveIDFor(a.Import.OriginalID) {
		t.Errorf("promotions %+v, want the 200-day-old entry by age", r.Promoted)
	}
	for _, id := range []string{b.Import.OriginalID, b.Import.OriginalID[:8]} {
		sv, err := v.call(t, "show", map[string]any{"id": id}, now)
		if err != nil {
			t.Fatalf("show %s: %v", id, err)
		}
		ev := sv.(app.KnowledgeEntryView)
		if ev.ID != a.Import.OriginalID || ev.Merged == nil || ev.Merged.ID != b.Import.OriginalID || ev.Merged.Into != a.Import.OriginalID {
			t.Errorf("show %s: %+v merged %+v", id, ev.Entry, ev.Merged)
		}
	}
	if _, err := v.call(t, "show", map[string]any{"id": "33333333"}, now); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("show of an unknown id: %v", err)
	}
	res, err = v.call(t, "import", args, now)
	if err != nil {
		t.Fatal(err)
	}
	r = res.(app.KnowledgeImportResult)
	if r.Sent != 0 || r.Existing != 3 || r.Items[1].MergedInto != a.Import.OriginalID {
		t.Fatalf("re-import %+v", r)
	}
}
