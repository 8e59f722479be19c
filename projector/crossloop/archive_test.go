package crossloop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// nullLoop adds a loop that discovers (or meets again) the null-check fix
// and then applies pattern id with the given successes.
func nullLoop(b *builder, i int, apply string, success bool) string {
	id := crossloop.LoopIDWith(fmt.Sprintf("fix null user %d", i), [4]byte{byte(i), 9, 9, 9})
	b.add("loop.started/v1", &events.LoopStarted{LoopID: id, Task: "Fix TypeError in user validation", Category: "debugging"})
	b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 1, ErrorType: "TypeError",
		ErrorMessage: "Cannot read property 'email' of null", Location: "src/auth/validate.ts:42", TestsPassed: ip(3), TestsFailed: ip(2)})
	b.add("loop.iteration/v1", &events.LoopIteration{LoopID: id, Iteration: 2, FixDescription: "Added null check for user object",
		TestsPassed: ip(12), TestsFailed: ip(0)})
	if apply != "" {
		b.add("pattern.applied/v1", &events.PatternApplied{LoopID: id, PatternID: apply, Success: success, Iteration: 1})
	}
	b.add("loop.completed/v1", &events.LoopCompleted{LoopID: id, Outcome: "success", Iterations: 2})
	return id
}

// TestPrunedSignatureStaysKnown: after a prune, extract --all finds the
// archived record of every signature and creates no new pattern; a new
// loop with the same error reinforces the archived record, and restores
// it (announced) once the prune rule no longer holds.
func TestPrunedSignatureStaysKnown(t *testing.T) {
	const id = "pat-error-null-check-001"
	b := &builder{t: t, at: t0}
	nullLoop(b, 0, "", false)
	for i := 1; i <= 6; i++ { // 1 discovery + 6 applications, 3 of them good: 4/7 → then failures
		nullLoop(b, i, id, i <= 2)
	}
	b.add("registry.pruned/v1", &events.RegistryPruned{Month: "2026-02", Patterns: []events.PrunedPattern{{PatternID: id, Reason: crossloop.ReasonLowSuccess}}})
	b.add("registry.extract_requested/v1", &events.ExtractRequested{All: true})
	_, r := fold(t, b.evs)
	all, err := crossloop.AllPatterns(r, func(p *crossloop.Pattern) bool { return p.Type == crossloop.TypeError })
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != id || !all[0].Archived {
		for _, p := range all {
			t.Logf("%s archived=%v rate=%v usage=%d", p.ID, p.Archived, p.SuccessRate, p.UsageCount)
		}
		t.Fatalf("after prune and extract --all: %d error patterns, want the archived %s alone", len(all), id)
	}
	before := *all[0]
	if before.Successful != 3 || before.Failed != 4 {
		t.Fatalf("archived counts %d/%d, want 3/4", before.Successful, before.Failed)
	}

	// A new loop meets the same error: the archived record is reinforced
	// (4/8 = 0.5, no longer below 0.5) and restored, saying so.
	fresh := nullLoop(b, 20, "", false)
	var emitted []projector.Derived
	r = foldWith(t, b.evs, recorder{crossloop.New(crossloop.Config{}), &emitted})
	p, ok, err := crossloop.LoadPattern(r, id)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if p.Archived || p.Successful != 4 || p.Failed != 4 || !p.HasLoop(fresh) {
		t.Errorf("after a new loop: archived=%v %d/%d lineage has loop %v", p.Archived, p.Successful, p.Failed, p.HasLoop(fresh))
	}
	l, _, err := crossloop.LoadLoop(r, fresh)
	if err != nil || len(l.Extracted) == 0 || l.Extracted[0].PatternID != id || !l.Extracted[0].Restored || l.Extracted[0].New {
		t.Errorf("loop's extracted patterns: %+v %v", l.Extracted, err)
	}
	restored := 0
	for _, d := range emitted {
		if d.Type == "registry.pattern_restored/v1" {
			restored++
		}
	}
	if restored != 1 {
		t.Errorf("%d registry.pattern_restored/v1 announcements, want 1", restored)
	}
	errs, err := crossloop.List(r, crossloop.ListFilter{Type: crossloop.TypeError})
	if err != nil || len(errs) != 1 {
		t.Errorf("active error patterns after restore: %d %v", len(errs), err)
	}
}

// recorder is a crossloop model whose announcements are kept in got.
type recorder struct {
	*crossloop.Model
	got *[]projector.Derived
}

type recTx struct {
	projector.Tx
	got *[]projector.Derived
}

func (t recTx) Emit(d projector.Derived) { *t.got = append(*t.got, d); t.Tx.Emit(d) }

func (r recorder) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	return r.Model.Fold(recTx{tx, r.got}, ev, data)
}

// foldWith folds evs into a fresh in-memory store with model m.
func foldWith(t *testing.T, evs []*events.Event, m projector.Model) projector.Reader {
	t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	poison, err := projector.FoldEvents(st, []projector.Model{m}, evs)
	if err != nil || len(poison) > 0 {
		t.Fatalf("fold: %v %v", err, poison)
	}
	return st.Model(crossloop.ModelName)
}

// TestArchivedPatternAppliedAgainIsRestored: a pattern pruned as unused
// that a loop applies again is restored (the prune rule no longer holds);
// one applied without success while its rate stays low stays archived.
func TestArchivedPatternAppliedAgainIsRestored(t *testing.T) {
	const id = "pat-error-null-check-001"
	b := &builder{t: t, at: t0}
	nullLoop(b, 0, "", false)
	b.add("registry.pruned/v1", &events.RegistryPruned{Month: "2026-05", Patterns: []events.PrunedPattern{{PatternID: id, Reason: crossloop.ReasonUnused}}})
	other := crossloop.LoopIDWith("apply again", [4]byte{1, 2, 3, 4})
	b.add("loop.started/v1", &events.LoopStarted{LoopID: other, Task: "Fix the user validation", Category: "debugging"})
	b.add("pattern.applied/v1", &events.PatternApplied{LoopID: other, PatternID: id, Success: true, Iteration: 1})
	var emitted []projector.Derived
	r := foldWith(t, b.evs, recorder{crossloop.New(crossloop.Config{}), &emitted})
	p, ok, err := crossloop.LoadPattern(r, id)
	if err != nil || !ok || p.Archived || p.ArchiveMonth != "" {
		t.Fatalf("applied again: %+v %v %v", p, ok, err)
	}
	n := 0
	for _, d := range emitted {
		if d.Type == "registry.pattern_restored/v1" {
			n++
			if r, ok := d.Data.(events.PatternRestored); !ok || r.Month != "2026-05" || r.PrunedFor != crossloop.ReasonUnused || r.Cause != other {
				t.Errorf("announcement %+v", d.Data)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d restore announcements, want 1", n)
	}
}

// TestImportDigestSurvivesTheLog: the digest the import command computes
// on a parsed pattern is the one the fold computes on the pattern read
// back from the event, for every pattern of the seed-shaped fixtures, so
// a re-import is recognised even for a pattern merged at import.
func TestImportDigestSurvivesTheLog(t *testing.T) {
	dir := "../../cmd/lore/testdata/aiwg/shared"
	files := map[string]string{"patterns/error-patterns.json": crossloop.TypeError, "patterns/success-patterns.json": crossloop.TypeSuccess,
		"patterns/anti-patterns.json": crossloop.TypeAnti, "patterns/code-templates.json": crossloop.TypeTemplate, "archive/2026-01-patterns.json": ""}
	n := 0
	for name, typ := range files {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := crossloop.ParseRegistry(raw, typ)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range ps {
			d1, err := crossloop.ImportDigest(p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(p)
			var back crossloop.Pattern
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if d2, _ := crossloop.ImportDigest(&back); d1 != d2 {
				t.Errorf("%s %s: digest %s before the log, %s after", name, p.ID, d1, d2)
			}
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d patterns in the fixtures, want 10", n)
	}
}
