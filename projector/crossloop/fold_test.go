package crossloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

var t0 = time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)

type builder struct {
	t   *testing.T
	evs []*events.Event
	at  time.Time
}

func (b *builder) add(typ string, p events.Payload) {
	b.t.Helper()
	b.at = b.at.Add(time.Minute)
	ev, err := events.New(typ, "default", "test", b.at, p)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := events.ValidateData(typ, ev.Data); err != nil {
		b.t.Fatalf("%s: %v", typ, err)
	}
	ev.Seq = uint64(len(b.evs) + 1)
	b.evs = append(b.evs, ev)
}

func ip(n int) *int { return &n }

func fold(t *testing.T, evs []*events.Event) (*projector.Store, projector.Reader) {
	t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	poison, err := projector.FoldEvents(st, []projector.Model{crossloop.New(crossloop.Config{})}, evs)
	if err != nil || len(poison) > 0 {
		t.Fatalf("fold: %v %v", err, poison)
	}
	return st, st.Model(crossloop.ModelName)
}

// TestTenLoops: patterns from the first loops are injected into later
// ones, applications move success rates, a bad approach becomes an
// anti-pattern, prune archives, export → import reproduces the registry.
func TestTenLoops(t *testing.T) {
	b := &builder{t: t, at: t0}
	var injectedInto []string
	for i := 0; i < 10; i++ {
		id := crossloop.LoopIDWith(fmt.Sprintf("fix null user in validation %d", i), [4]byte{byte(i), 1, 2, 3})
		b.add("loop.started/v1", &events.LoopStarted{LoopID: id, Task: "Fix TypeError in user validation", Category: "debugging", Agent: "debugger"})
		switch {
		case i < 3: // learn the null-check fix
			b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 1, ErrorType: "TypeError",
				ErrorMessage: "Cannot read property 'email' of null", Location: "src/auth/validate.ts:42", TestsPassed: ip(3), TestsFailed: ip(2)})
			b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 2, FixDescription: "Added null check for user object",
				FixDiff: "+ if (user == null) {\n+   throw new ValidationError(\"User is required\");\n+ }", TestsPassed: ip(12), TestsFailed: ip(0), ToolsUsed: []string{"Edit"}})
			b.add("loop.completed/v1", &events.LoopCompleted{LoopID: id, Outcome: "success", Iterations: 4})
		case i < 6: // a bad approach: the same error three times, loop fails
			for n := 1; n <= 3; n++ {
				b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: n, ErrorType: "TimeoutError",
					ErrorMessage: "Request timed out after 5000 ms", FixDescription: "Increased the timeout again", TestsPassed: ip(1), TestsFailed: ip(4)})
			}
			b.add("loop.completed/v1", &events.LoopCompleted{LoopID: id, Outcome: "failure", Iterations: 3, Approach: "Increase timeouts until the test passes"})
		default: // later loops get the null-check pattern injected and apply it
			injectedInto = append(injectedInto, id)
			b.add("loop.injected/v1", &events.LoopInjected{LoopID: id, PatternIDs: []string{"pat-error-null-check-001"}})
			b.add("pattern.applied/v1", &events.PatternApplied{LoopID: id, PatternID: "pat-error-null-check-001", Success: i != 9, Iteration: 1})
			b.add("loop.completed/v1", &events.LoopCompleted{LoopID: id, Outcome: "success", Iterations: 2})
		}
	}
	_, r := fold(t, b.evs)

	p, ok, err := crossloop.LoadPattern(r, "pat-error-null-check-001")
	if err != nil || !ok {
		t.Fatalf("null-check pattern: %v %v", ok, err)
	}
	// 3 discoveries/merges + 3 successful + 1 failed application
	if p.UsageCount != 7 || p.Successful != 6 || p.Failed != 1 || len(p.Trend) != 7 {
		t.Errorf("null check: usage %d %d/%d trend %d", p.UsageCount, p.Successful, p.Failed, len(p.Trend))
	}
	if p.ErrorPattern != `Cannot read property '.*' of null` || p.LocationHints[0] != "*.ts:validate*" || p.FixCategory != "add_null_check" {
		t.Errorf("signature: %+v", p)
	}
	if !strings.Contains(p.CodeTemplate, "{{variable}} == null") || !strings.Contains(p.CodeTemplate, `"{{message}}"`) {
		t.Errorf("template %q", p.CodeTemplate)
	}
	anti, err := crossloop.List(r, crossloop.ListFilter{Type: crossloop.TypeAnti})
	if err != nil || len(anti) != 2 {
		t.Fatalf("anti-patterns: %v %v", anti, err)
	}
	for _, a := range anti {
		if a.FailureRate() != 1 || a.OccurrenceCount != 3 {
			t.Errorf("anti %s: failure rate %v occurrences %d", a.ID, a.FailureRate(), a.OccurrenceCount)
		}
	}

	// injection for a new similar task ranks the null-check fix first
	rs, err := crossloop.Rank(context.Background(), r, crossloop.DefaultConfig(),
		crossloop.InjectRequest{Task: "Fix TypeScript type errors in user validation: property of null", Category: "debugging"}, nil)
	if err != nil || len(rs) == 0 {
		t.Fatalf("rank: %v %v", rs, err)
	}
	if rs[0].Pattern.ID != "pat-error-null-check-001" {
		t.Errorf("first injected = %s", rs[0].Pattern.ID)
	}
	md := crossloop.FormatInjection(rs)
	if !strings.HasPrefix(md, "## Cross-Loop Learning Context\n") || !strings.Contains(md, "### Error Patterns") {
		t.Errorf("markdown:\n%s", md)
	}

	m, err := crossloop.ReadMetrics(r)
	if err != nil {
		t.Fatal(err)
	}
	if m.Benefit.With != 4 || m.Benefit.Without != 6 || m.Usage.Total != 4 || m.Usage.Successful != 3 {
		t.Errorf("metrics %+v", m)
	}

	// prune: the null-check pattern fails from now on; the timeout
	// anti-pattern ages out after 90 days
	b.add("pattern.applied/v1", &events.PatternApplied{LoopID: injectedInto[0], PatternID: "pat-error-null-check-001", Success: false})
	_, r = fold(t, b.evs)
	now := b.at.Add(91 * 24 * time.Hour)
	plan, month, err := crossloop.PrunePlan(r, crossloop.DefaultPrunePolicy(), now)
	if err != nil || len(plan) == 0 || month != "2026-05" {
		t.Fatalf("plan %v %s %v", plan, month, err)
	}
	var pruned []events.PrunedPattern
	for _, c := range plan {
		pruned = append(pruned, events.PrunedPattern{PatternID: c.PatternID, Reason: c.Reason})
	}
	b.at = now
	b.add("registry.pruned/v1", &events.RegistryPruned{Month: month, Patterns: pruned})
	_, r = fold(t, b.evs)
	arch, _ := crossloop.List(r, crossloop.ListFilter{Archived: true})
	for _, a := range arch {
		if !a.Archived || a.ArchiveMonth != "2026-05" {
			t.Errorf("%s not archived under 2026-05", a.ID)
		}
	}
	if rs, _ := crossloop.Rank(context.Background(), r, crossloop.DefaultConfig(), crossloop.InjectRequest{Task: "user validation null"}, nil); len(rs) != 0 {
		t.Errorf("archived patterns injected: %v", rs)
	}

	// export → import into a fresh store reproduces the registry
	doc, err := crossloop.Export(r, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	if errs, err := crossloop.ValidateDoc("", raw); err != nil || len(errs) > 0 {
		t.Fatalf("export invalid: %v %v", errs, err)
	}
	// In parts of every size, each after the last id of the one before,
	// joined: the same document (active and archived patterns alike).
	all, _ := crossloop.List(r, crossloop.ListFilter{Archived: true})
	if len(doc.Archive) == 0 || len(all) < 3 {
		t.Fatalf("the registry exported has %d patterns and %d archive months: too few to cut in parts", len(all), len(doc.Archive))
	}
	for size := 1; size <= len(all); size++ {
		var parts []*crossloop.RegistryDoc
		for after := ""; ; {
			part, err := crossloop.Export(r, after, size)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, part)
			ids, err := crossloop.ExportIDs(part)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) < size {
				break
			}
			after = ids[len(ids)-1]
		}
		joined, _ := json.Marshal(crossloop.MergeExports(parts))
		if string(joined) != string(raw) {
			t.Fatalf("export in parts of %d differs from the whole:\n%s\n%s", size, joined, raw)
		}
	}
	ps, err := crossloop.ParseRegistry(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	var rawPs []json.RawMessage
	for _, p := range ps {
		x, _ := json.Marshal(p)
		rawPs = append(rawPs, x)
	}
	b2 := &builder{t: t, at: now}
	b2.add("registry.imported/v1", &events.RegistryImported{Source: "test", Patterns: rawPs})
	_, r2 := fold(t, b2.evs)
	before, _ := crossloop.List(r, crossloop.ListFilter{Archived: true})
	after, _ := crossloop.List(r2, crossloop.ListFilter{Archived: true})
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	if string(bj) != string(aj) {
		t.Errorf("import differs:\n%s\n%s", bj, aj)
	}
}

// TestImportAfterAMerge: an imported pattern that merges into a similar
// one does not stop the import: the patterns after it in the same event are
// folded too.
func TestImportAfterAMerge(t *testing.T) {
	pat := func(id, errType, msg string) json.RawMessage {
		raw, err := json.Marshal(crossloop.Pattern{ID: id, Type: crossloop.TypeError, Title: msg,
			ErrorType: errType, ErrorPattern: msg, FixDescription: "fix " + msg,
			Successful: 2, SuccessRate: 1, UsageCount: 2})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	b := &builder{t: t, at: t0}
	b.add("registry.imported/v1", &events.RegistryImported{Source: "team-a", Patterns: []json.RawMessage{
		pat("pat-error-null-user-001", "TypeError", "Cannot read properties of undefined reading user name"),
	}})
	b.add("registry.imported/v1", &events.RegistryImported{Source: "team-b", Patterns: []json.RawMessage{
		pat("pat-error-null-user-007", "TypeError", "Cannot read properties of undefined reading user name"),
		pat("pat-error-timeout-db-002", "timeout", "connection to the database timed out after 30 seconds"),
	}})
	_, r := fold(t, b.evs)
	ps, err := crossloop.List(r, crossloop.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*crossloop.Pattern{}
	for _, p := range ps {
		got[p.ID] = p
	}
	if len(got) != 2 {
		t.Fatalf("registry holds %d patterns, want the first and the one after the merge: %v", len(got), ps)
	}
	if p, ok := got["pat-error-null-user-001"]; !ok || p.UsageCount != 4 {
		t.Errorf("the similar import did not merge into pat-error-null-user-001: %+v", p)
	}
	if _, ok := got["pat-error-timeout-db-002"]; !ok {
		t.Error("the pattern imported after a merge was dropped")
	}
}
