package knowledge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness folds events into an in-memory store, one FoldEvents per step.
type harness struct {
	t   *testing.T
	st  *projector.Store
	m   *knowledge.Model
	seq uint64
	log []*events.Event
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &harness{t: t, st: st, m: knowledge.New()}
}

func (h *harness) event(typ, project string, at time.Time, p events.Payload) *events.Event {
	h.t.Helper()
	ev, err := events.New(typ, project, "test", at, p)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := events.ValidateData(typ, ev.Data); err != nil {
		h.t.Fatalf("%s: %v", typ, err)
	}
	return ev
}

func (h *harness) fold(evs ...*events.Event) {
	h.t.Helper()
	for _, ev := range evs {
		h.seq++
		ev.Seq = h.seq
	}
	h.log = append(h.log, evs...)
	poison, err := projector.FoldEvents(h.st, []projector.Model{h.m}, evs)
	if err != nil || len(poison) > 0 {
		h.t.Fatalf("fold: %v %v", err, poison)
	}
}

type sub struct {
	lesson, category string
	tags             []string
	phase            int
	confidence       float64
}

func (h *harness) submit(project string, at time.Time, s sub) *events.Event {
	h.t.Helper()
	if s.category == "" {
		s.category = "tooling"
	}
	p := &events.KnowledgeSubmitted{Lesson: s.lesson, Category: s.category, Tags: s.tags, Project: project, Phase: s.phase}
	if s.confidence > 0 {
		p.Confidence = &s.confidence
	}
	ev := h.event("knowledge.submitted/v1", project, at, p)
	h.fold(ev)
	return ev
}

func (h *harness) complete(project string, phase int, at time.Time) {
	h.t.Helper()
	h.fold(h.event("phase.completed/v1", project, at, &events.PhaseCompleted{Project: project, Phase: phase}))
}

func (h *harness) reader() projector.Reader { return h.st.Model(knowledge.ModelName) }

func (h *harness) entry(id string) *knowledge.Entry {
	h.t.Helper()
	e, ok, err := knowledge.GetEntry(h.reader(), id)
	if err != nil || !ok {
		h.t.Fatalf("entry %s: ok=%v err=%v", id, ok, err)
	}
	return e
}

func (h *harness) hive() []*knowledge.Entry {
	h.t.Helper()
	es, err := knowledge.HiveEntries(h.reader())
	if err != nil {
		h.t.Fatal(err)
	}
	return es
}

func idOf(ev *events.Event) string { return knowledge.DeriveID("knowledge", ev.ID) }

func day(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }

// TestTwelvePhasesThreeProjects folds a realistic history: three projects
// submit lessons over 12 phases (a phase every 7 days).
func TestTwelvePhasesThreeProjects(t *testing.T) {
	h := newHarness(t)
	A, B, C := "alpha", "beta", "gamma"
	at := func(phase int) time.Time { return day(7 * phase) }

	// Phase 1.
	l1 := h.submit(A, at(1), sub{lesson: "Run bun test with the coverage flag before every merge to catch schema drift", phase: 1})
	fast := h.submit(B, at(1), sub{lesson: "Pin the docker base image digest so that CI builds stay reproducible", tags: []string{knowledge.FastTrackTag}, phase: 1})
	stale := h.submit(B, at(1), sub{lesson: "Check the grpc endpoint health before deploying the api gateway", phase: 1})
	todo := h.submit(C, at(1), sub{lesson: "TODO: remember to rotate the staging API keys after the release", category: "todo", phase: 1})
	bad := h.submit(A, at(1), sub{lesson: "Use rm -rf node_modules whenever the lockfile looks wrong", phase: 1})

	if _, ok, _ := knowledge.GetEntry(h.reader(), idOf(bad)); ok {
		t.Fatal("dangerous lesson became an entry")
	}
	rj, err := knowledge.Rejections(h.reader(), A, 0)
	if err != nil || len(rj) != 1 || rj[0].Layer != 2 || rj[0].Reason != knowledge.ReasonDangerous || rj[0].ID != idOf(bad) {
		t.Fatalf("rejected model = %+v (%v), want the rm -rf lesson at layer 2", rj, err)
	}
	// Fast-track: promoted to the hive at once, exactly one hive entry.
	hv := h.hive()
	if len(hv) != 1 || hv[0].PromotionRoute != knowledge.RouteFastTrack || hv[0].SourceProject != B || hv[0].EncounterScore != 1 {
		t.Fatalf("hive after fast-track = %+v", hv)
	}
	fastHive := hv[0].ID
	if got := h.entry(idOf(fast)).PromotedTo; got != fastHive {
		t.Fatalf("swarm entry promoted_to %q, want %q", got, fastHive)
	}
	for _, p := range []string{A, B, C} {
		h.complete(p, 1, at(1))
	}

	// Phase 2: a near-duplicate reinforces instead of adding.
	dup := h.submit(A, at(2), sub{lesson: "Run bun test with the coverage flag before every merge to catch schema drift early", phase: 2})
	if _, ok, _ := knowledge.GetEntry(h.reader(), idOf(dup)); ok {
		t.Fatal("near-duplicate added an entry")
	}
	e1 := h.entry(idOf(l1))
	if e1.DistinctPhases() != 2 || e1.PhasesAlive != 0 || e1.Status != knowledge.StatusCandidate {
		t.Fatalf("reinforced entry: phases %d alive %d status %s", e1.DistinctPhases(), e1.PhasesAlive, e1.Status)
	}
	for _, p := range []string{A, B, C} {
		h.complete(p, 2, at(2))
	}

	// Phase 3: third distinct phase → established; the phase completion
	// promotes it (hive-eligible) and the explicit route sends it to the hive.
	h.submit(A, at(3), sub{lesson: "run bun test with the coverage flag before every merge to catch schema drift!", phase: 3})
	if s := h.entry(idOf(l1)).Status; s != knowledge.StatusEstablished {
		t.Fatalf("after 3 phases status %s, want established", s)
	}
	// Cross-project encounter: alpha learns beta's fast-tracked lesson.
	h.submit(A, at(3), sub{lesson: "Pin the docker base image digest so that CI builds stay reproducible everywhere", phase: 3})
	if fh := h.entry(fastHive); fh.EncounterScore != 1.05 || len(fh.DistinctProjects()) != 2 {
		t.Fatalf("hive entry after alpha's encounter: score %v projects %v", fh.EncounterScore, fh.DistinctProjects())
	}
	for _, p := range []string{A, B, C} {
		h.complete(p, 3, at(3))
	}
	e1 = h.entry(idOf(l1))
	if e1.Status != knowledge.StatusPromoted || !e1.HiveEligible || e1.PromotedTo == "" {
		t.Fatalf("after phase 3 completion: %+v", e1)
	}
	if he := h.entry(e1.PromotedTo); he.PromotionRoute != knowledge.RouteExplicit || he.Tier != knowledge.TierHive {
		t.Fatalf("explicit promotion: %+v", he)
	}

	// Phase 4: gamma confirms too → the hive entry has 3 projects → established.
	h.submit(C, at(4), sub{lesson: "Pin the docker base image digest so that CI builds stay reproducible", phase: 4})
	if fh := h.entry(fastHive); fh.Status != knowledge.StatusEstablished || fh.EncounterScore != 1.1 {
		t.Fatalf("hive entry after gamma: status %s score %v", fh.Status, fh.EncounterScore)
	}
	// Age route: an imported lesson created 95 days ago goes to the hive.
	imp := h.event("knowledge.submitted/v1", C, at(4), &events.KnowledgeSubmitted{
		Lesson: "Prefer table driven tests for every parser function in the config module", Category: "testing",
		Project: C, Import: &events.KnowledgeImport{Format: knowledge.FormatSwarm, Digest: strings.Repeat("ab", 32),
			OriginalID: "3f1c2b8e-0000-4000-8000-000000000001", Status: knowledge.StatusCandidate, CreatedAt: ptr(at(4).Add(-95 * 24 * time.Hour))}})
	h.fold(imp)
	if ie := h.entry("3f1c2b8e-0000-4000-8000-000000000001"); ie.PromotedTo == "" || h.entry(ie.PromotedTo).PromotionRoute != knowledge.RouteAge {
		t.Fatalf("age promotion: %+v", ie)
	}
	quar := h.submit(B, at(4), sub{lesson: "Always use the staging database when running integration checks for the api", phase: 4})
	qid := idOf(quar)
	h.fold(h.event("knowledge.quarantined/v1", B, at(4), &events.KnowledgeQuarantined{EntryID: qid[:8], Reason: "wrong"}))
	if h.entry(qid).Status == knowledge.StatusQuarantined {
		t.Fatal("a prefix must be resolved before the event: the fold takes exact ids")
	}
	h.fold(h.event("knowledge.quarantined/v1", B, at(4), &events.KnowledgeQuarantined{EntryID: qid, Reason: "wrong db"}))
	if e := h.entry(qid); e.Status != knowledge.StatusQuarantined || e.QuarantineReason != "wrong db" {
		t.Fatalf("quarantine: %+v", e)
	}
	for _, p := range []string{A, B, C} {
		h.complete(p, 4, at(4))
	}
	// Todo TTL: past 3 phases it is removed from view (archived ttl-todo).
	if e := h.entry(idOf(todo)); e.Status != knowledge.StatusArchived || e.ArchiveReason != knowledge.ArchiveTTLTodo {
		t.Fatalf("todo after 4 phases: %s %s", e.Status, e.ArchiveReason)
	}

	// Phase 5: beta has plenty to inject.
	for i, l := range []string{
		"Use golangci-lint with the errcheck linter enabled in every repository",
		"Prefer context deadlines over sleeps when waiting for the nats server",
		"Check pebble iterator errors after the loop, not only inside it",
		"Avoid global config in the parser module so tests can run in parallel",
		"Ensure every api handler validates the request schema before use",
		"Write golden files for the projector fold and review the diff",
	} {
		h.submit(B, at(5), sub{lesson: l, phase: 5, confidence: 0.5 + 0.05*float64(i)})
	}
	task := "add schema validation to the api handler and its tests"
	var prev knowledge.Injection
	for _, tc := range []struct {
		headroom          float64
		regime            string
		maxEntries, chars int
	}{{0.7, knowledge.RegimeFull, 5, 2000}, {0.3, knowledge.RegimeHalf, 2, 1000}, {0.1, knowledge.RegimeQuarter, 1, 500}, {0.03, knowledge.RegimeNone, 0, 0}} {
		inj, err := knowledge.InjectFrom(h.reader(), knowledge.DefaultConfig(), knowledge.InjectOptions{Task: task, Headroom: tc.headroom, Project: B}, at(5))
		if err != nil {
			t.Fatal(err)
		}
		if inj.Regime != tc.regime || inj.MaxEntries != tc.maxEntries || inj.MaxChars != tc.chars {
			t.Errorf("headroom %v: budget %+v, want %s %d/%d", tc.headroom, inj.Budget, tc.regime, tc.maxEntries, tc.chars)
		}
		if len(inj.Entries) > tc.maxEntries || inj.Chars > tc.chars || knowledge.UTF16Len(inj.Text) != inj.Chars {
			t.Errorf("headroom %v: %d entries %d chars over budget", tc.headroom, len(inj.Entries), inj.Chars)
		}
		if tc.maxEntries > 0 && len(inj.Entries) == 0 {
			t.Errorf("headroom %v: nothing injected", tc.headroom)
		}
		for _, s := range inj.Entries {
			if s.ID == qid {
				t.Errorf("headroom %v: quarantined entry injected", tc.headroom)
			}
		}
		if tc.headroom == 0.7 {
			if inj.Entries[0].Lesson != "Ensure every api handler validates the request schema before use" {
				t.Errorf("most relevant first: got %q", inj.Entries[0].Lesson)
			}
			prev = inj
		}
	}
	// Record the injection and outcomes: utility counts once shown >= 3.
	top := prev.Entries[0].ID
	for range 3 {
		h.fold(h.event("knowledge.injected/v1", B, at(5), &events.KnowledgeInjected{Task: task, Headroom: 0.7, Regime: "full", EntryIDs: []string{top}, Chars: prev.Chars, BudgetChars: 2000}))
		h.fold(h.event("knowledge.outcome/v1", B, at(5), &events.KnowledgeOutcome{EntryID: top, Outcome: knowledge.OutcomeHelpful}))
	}
	if e := h.entry(top); e.Outcomes.Shown != 3 || e.Outcomes.Helpful != 3 {
		t.Fatalf("outcomes %+v", e.Outcomes)
	}

	// Phases 5..12: the stale beta entry (never confirmed) is archived by TTL.
	for ph := 5; ph <= 12; ph++ {
		for _, p := range []string{A, B, C} {
			h.complete(p, ph, at(ph))
		}
		if ph == 10 && h.entry(idOf(stale)).Status == knowledge.StatusArchived {
			t.Fatalf("stale entry archived too early (phase %d)", ph)
		}
	}
	if e := h.entry(idOf(stale)); e.Status != knowledge.StatusArchived || e.ArchiveReason != knowledge.ArchiveTTL || e.PhasesAlive != 11 {
		t.Fatalf("stale entry: %s %s alive %d", e.Status, e.ArchiveReason, e.PhasesAlive)
	}
	// Promoted swarm entries are exempt from sweeps.
	if e := h.entry(idOf(l1)); e.Status != knowledge.StatusPromoted {
		t.Fatalf("promoted entry swept: %s", e.Status)
	}
	// The quarantined entry is still never injected, and listing hides it.
	inj, _ := knowledge.InjectFrom(h.reader(), knowledge.DefaultConfig(), knowledge.InjectOptions{Task: "staging database integration checks api", Headroom: 0.9, Project: B}, at(12))
	for _, s := range inj.Entries {
		if s.ID == qid {
			t.Fatal("quarantined entry injected")
		}
	}
	ls, _ := knowledge.List(h.reader(), knowledge.ListOptions{Project: B})
	for _, e := range ls {
		if e.ID == qid || !e.Active() {
			t.Fatalf("listing shows %s (%s)", e.ID, e.Status)
		}
	}
	// Hive promotions happened once each: replaying the whole log into a
	// fresh store gives the same read model.
	assertReplaySame(t, h)
}

func ptr[T any](v T) *T { return &v }

func dump(t *testing.T, r projector.Reader) string {
	t.Helper()
	var b strings.Builder
	err := r.Scan(nil, func(k, v []byte) error {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func assertReplaySame(t *testing.T, h *harness) {
	t.Helper()
	h2 := newHarness(t)
	var evs []*events.Event
	for _, ev := range h.log {
		cp := *ev
		evs = append(evs, &cp)
	}
	h2.fold(evs...)
	if a, b := dump(t, h.reader()), dump(t, h2.reader()); a != b {
		t.Fatalf("replay differs:\n%s\n---\n%s", a, b)
	}
}

// TestPromotionIsAtomic: many racing submissions and repeated events give
// one hive entry per lesson.
func TestPromotionIsAtomic(t *testing.T) {
	h := newHarness(t)
	var evs []*events.Event
	for i, p := range []string{"a", "b", "c", "a", "b"} {
		evs = append(evs, h.event("knowledge.submitted/v1", p, day(1).Add(time.Duration(i)*time.Second), &events.KnowledgeSubmitted{
			Lesson: "Pin the docker base image digest so that CI builds stay reproducible", Category: "tooling",
			Tags: []string{knowledge.FastTrackTag}, Phase: 1}))
	}
	redelivered := *evs[0]
	evs = append(evs, &redelivered) // the same event id again
	h.fold(evs...)
	hv := h.hive()
	if len(hv) != 1 {
		t.Fatalf("%d hive entries, want 1", len(hv))
	}
	if got := hv[0].DistinctProjects(); strings.Join(got, ",") != "a,b,c" || hv[0].Status != knowledge.StatusEstablished {
		t.Fatalf("hive entry projects %v status %s", got, hv[0].Status)
	}
	swarmA, _ := knowledge.SwarmEntries(h.reader(), "a")
	if len(swarmA) != 1 || len(swarmA[0].ConfirmedBy) != 1 {
		t.Fatalf("project a: %d entries, confirmations %+v (same phase twice is one confirmation)", len(swarmA), swarmA[0].ConfirmedBy)
	}
}

// TestContradictionLinksBoth: a contradiction is a warning and links both
// entries; neither is deleted.
func TestContradictionLinksBoth(t *testing.T) {
	h := newHarness(t)
	a := h.submit("p", day(1), sub{lesson: "always use typescript strict mode", category: "architecture", phase: 1})
	b := h.submit("p", day(1), sub{lesson: "never use typescript for small scripts", category: "architecture", phase: 1})
	ea, eb := h.entry(idOf(a)), h.entry(idOf(b))
	if len(eb.Warnings) == 0 || eb.Warnings[0].Reason != knowledge.ReasonContradiction {
		t.Fatalf("warnings %+v", eb.Warnings)
	}
	if len(ea.Conflicts) != 1 || ea.Conflicts[0] != eb.ID || len(eb.Conflicts) != 1 || eb.Conflicts[0] != ea.ID {
		t.Fatalf("links a=%v b=%v", ea.Conflicts, eb.Conflicts)
	}
}

// TestQuarantineRestoreFold: restore re-validates; the quarantine
// fingerprint stays in the rejected model only while quarantined.
func TestQuarantineRestoreFold(t *testing.T) {
	h := newHarness(t)
	ev := h.submit("p", day(1), sub{lesson: "Use the config schema to validate plugin options", phase: 1})
	id := idOf(ev)
	h.fold(h.event("knowledge.quarantined/v1", "p", day(2), &events.KnowledgeQuarantined{EntryID: id, Reason: "false\a positive"}))
	rj, _ := knowledge.Rejections(h.reader(), "", 0)
	if len(rj) != 1 || rj[0].Reason != "false positive" || rj[0].Kind != knowledge.RejectedQuarantine {
		t.Fatalf("rejected %+v", rj)
	}
	inj, _ := knowledge.InjectFrom(h.reader(), knowledge.DefaultConfig(), knowledge.InjectOptions{Task: "config schema", Headroom: 1, Project: "p"}, day(2))
	if len(inj.Entries) != 0 {
		t.Fatalf("quarantined entry injected: %+v", inj.Entries)
	}
	h.fold(h.event("knowledge.restored/v1", "p", day(3), &events.KnowledgeRestored{EntryID: id}))
	if e := h.entry(id); e.Status != knowledge.StatusCandidate || e.QuarantineReason != "" {
		t.Fatalf("restored %+v", e)
	}
	rj, _ = knowledge.Rejections(h.reader(), "", 0)
	if len(rj) != 0 {
		t.Fatalf("rejected after restore %+v", rj)
	}
}

// TestConfiguredEvent: configuration is folded from the log.
func TestConfiguredEvent(t *testing.T) {
	h := newHarness(t)
	raw, _ := json.Marshal(map[string]any{"swarm_max_entries": 2})
	h.fold(h.event("knowledge.configured/v1", "p", day(0), &events.KnowledgeConfigured{Config: raw}))
	var ids []string
	for i, l := range []string{
		"Use golangci-lint with the errcheck linter enabled in every repository",
		"Prefer context deadlines over sleeps when waiting for the nats server",
		"Check pebble iterator errors after the loop, not only inside it",
	} {
		ids = append(ids, idOf(h.submit("p", day(1+i), sub{lesson: l, phase: 1})))
	}
	if e := h.entry(ids[0]); e.Status != knowledge.StatusArchived || e.ArchiveReason != knowledge.ArchiveCap {
		t.Fatalf("oldest entry over cap 2: %s %s", e.Status, e.ArchiveReason)
	}
	if e := h.entry(ids[2]); !e.Active() {
		t.Fatalf("newest entry archived")
	}
}
