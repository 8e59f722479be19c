package conformance_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// The swarm_knowledge.json handlers registered in knowledge_cases_test.go:
// validation, sweeps, caps, promotion, migration and injection against lore.

func mustJSON(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

type skResult struct {
	Valid    bool    `json:"valid"`
	Layer    *int    `json:"layer"`
	Reason   *string `json:"reason"`
	Severity *string `json:"severity"`
}

func skResultOf(r knowledge.Result) skResult {
	out := skResult{Valid: r.Valid}
	if r.Layer != 0 {
		l, rs, sv := r.Layer, r.Reason, r.Severity
		out.Layer, out.Reason, out.Severity = &l, &rs, &sv
	}
	return out
}

// skValidateDeparts holds lore's verdict where it departs from v7.103.2.
var skValidateDeparts = map[string]struct {
	rule   string
	result knowledge.Result
}{
	"Run chmod 777 on the upload dir to fix permissions":      {"K1", knowledge.Result{Layer: 2, Reason: knowledge.ReasonDangerous, Severity: "error"}},
	"Run `make test` and disable the firewall for local runs": {"K2", knowledge.Result{Layer: 2, Reason: knowledge.ReasonSecurity, Severity: "error"}},
	"Never call eval(input) from a `node -e` one-liner":       {"K2", knowledge.Result{Layer: 2, Reason: knowledge.ReasonInjection, Severity: "error"}},
}

// skValidateSafetyDeparts holds lore's verdict where its content-safety
// rules depart from a case the reference calls conforming. A dangerous
// command in a clause that negates it ("never", "avoid", "don't", "is
// unsafe") is a warning to the reader, not an instruction: it passes, so
// that lessons about safe practice are not false alarms (docs/knowledge.md,
// "Content safety").
var skValidateSafetyDeparts = map[string]struct {
	rule   string
	result knowledge.Result
}{
	"Never chain rm  -rf in a cleanup script": {"negated command", knowledge.Result{Valid: true}},
}

func skValidate(t *testing.T, c Case) {
	var in struct {
		Candidate string   `json:"candidate"`
		Existing  []string `json:"existing_lessons"`
		Meta      struct {
			Category   string `json:"category"`
			Scope      string `json:"scope"`
			Confidence any    `json:"confidence"`
		} `json:"meta"`
	}
	mustJSON(t, c.Input, &in)
	conf := math.NaN()
	if f, ok := in.Meta.Confidence.(float64); ok {
		conf = f
	}
	var ex []knowledge.Existing
	for _, s := range in.Existing {
		ex = append(ex, knowledge.Existing{Text: s})
	}
	got := skResultOf(knowledge.Validate(in.Candidate, ex, knowledge.Meta{Category: in.Meta.Category, Scope: in.Meta.Scope, Confidence: conf}))
	var want skResult
	mustJSON(t, c.Expected, &want)
	if d, ok := skValidateSafetyDeparts[in.Candidate]; ok {
		want = skResultOf(d.result)
		t.Logf("departs (%s): lore gives valid=%v where v7.103.2 gives %s", d.rule, d.result.Valid, c.Expected)
	} else if c.Lore == "departs" {
		if d, ok := skValidateDeparts[in.Candidate]; ok {
			want = skResultOf(d.result)
			t.Logf("departs (%s): lore gives layer %d %q (%s) where v7.103.2 gives %s", d.rule, d.result.Layer, d.result.Reason, d.result.Severity, c.Expected)
		} else {
			t.Logf("departs (K1/K2): lore's value equals v7.103.2's here: %s", c.Expected)
		}
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("Validate(%q) = %s, want %s", in.Candidate, g, w)
	}
}

type skEntryIn struct {
	ID                string         `json:"id"`
	Status            string         `json:"status"`
	Category          string         `json:"category"`
	PhasesAlive       int            `json:"phases_alive"`
	MaxPhases         int            `json:"max_phases"`
	Lesson            string         `json:"lesson"`
	RetrievalOutcomes map[string]int `json:"retrieval_outcomes"`
}

func (s skEntryIn) entry(i int) *knowledge.Entry {
	st := s.Status
	if st == "" {
		st = knowledge.StatusCandidate
	}
	ro := s.RetrievalOutcomes
	return &knowledge.Entry{ID: s.ID, Status: st, Category: s.Category, PhasesAlive: s.PhasesAlive,
		MaxPhases: s.MaxPhases, Lesson: s.Lesson, CreatedSeq: uint64(i + 1), Tier: knowledge.TierSwarm,
		Outcomes: knowledge.Outcomes{Helpful: ro["applied_explicit_count"] + ro["succeeded_after_shown_count"],
			Harmful: ro["ignored_count"] + ro["violated_count"] + ro["contradicted_count"] + ro["failed_after_shown_count"]}}
}

type skAfter struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	PhasesAlive int    `json:"phases_alive"`
}

func skView(es []*knowledge.Entry) []skAfter {
	out := []skAfter{}
	for _, e := range es {
		if !knowledge.Removed(e) { // removed from view (archived ttl-todo, still in the log)
			out = append(out, skAfter{e.ID, e.Status, e.PhasesAlive})
		}
	}
	return out
}

func skSweep(t *testing.T, c Case, todos bool) {
	var in struct {
		MaxPhases int         `json:"max_phases_arg"`
		Times     int         `json:"times"`
		Entries   []skEntryIn `json:"entries"`
	}
	mustJSON(t, c.Input, &in)
	var want struct {
		Results []map[string]int `json:"results"`
		After   []skAfter        `json:"after"`
	}
	mustJSON(t, c.Expected, &want)
	var es []*knowledge.Entry
	for i, e := range in.Entries {
		es = append(es, e.entry(i))
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < in.Times; i++ {
		var r knowledge.SweepResult
		if todos {
			r = knowledge.SweepTodos(es, in.MaxPhases, now)
		} else {
			r = knowledge.SweepAged(es, in.MaxPhases, now, knowledge.DefaultConfig())
		}
		got := map[string]int{"scanned": r.Scanned, "aged": r.Aged, "archived": r.Archived, "removed": r.Removed, "skipped_promoted": r.SkippedPromoted}
		if !reflect.DeepEqual(got, want.Results[i]) {
			t.Errorf("run %d: %v, want %v", i+1, got, want.Results[i])
		}
	}
	if got := skView(es); !reflect.DeepEqual(got, want.After) {
		t.Errorf("after: %+v, want %+v", got, want.After)
	}
	for _, e := range es {
		if knowledge.Removed(e) && e.ArchiveReason != knowledge.ArchiveTTLTodo {
			t.Errorf("%s removed without reason ttl-todo", e.ID)
		}
	}
}

func skPhaseSweep(t *testing.T, c Case) {
	var in struct{ Entries []skEntryIn }
	mustJSON(t, c.Input, &in)
	var want []struct {
		AfterPhase int       `json:"after_phase"`
		Entries    []skAfter `json:"entries"`
	}
	mustJSON(t, c.Expected, &want)
	var es []*knowledge.Entry
	for i, e := range in.Entries {
		es = append(es, e.entry(i))
	}
	cfg := knowledge.DefaultConfig()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, w := range want {
		knowledge.SweepAged(es, cfg.DefaultMaxPhases, now, cfg)
		knowledge.SweepTodos(es, cfg.TodoMaxPhases, now)
		if got := skView(es); !reflect.DeepEqual(got, w.Entries) {
			t.Errorf("after phase %d: %+v, want %+v", w.AfterPhase, got, w.Entries)
		}
	}
}

// skCapLore is lore's expectation where the case is v6.81's FIFO (K4).
var skCapLore = map[int][]string{92: {"promoted-old", "positive"}}

func skCap(t *testing.T, c Case) {
	var in struct {
		Cap     int         `json:"cap"`
		Entries []skEntryIn `json:"entries"`
	}
	mustJSON(t, c.Input, &in)
	var want []string
	mustJSON(t, c.Expected, &want)
	if w, ok := skCapLore[c.Index]; ok {
		want = w
	}
	t.Logf("departs (K4): over the cap lore archives (never deletes) in v7.103.2's order; active entries: %v", want)
	var es []*knowledge.Entry
	archivedBefore := map[string]bool{}
	for i, e := range in.Entries {
		es = append(es, e.entry(i))
		archivedBefore[e.ID] = e.Status == knowledge.StatusArchived
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range knowledge.CapVictims(es, in.Cap) {
		knowledge.Archive(v, knowledge.ArchiveCap, now)
	}
	got := []string{}
	for _, e := range es {
		if e.Active() {
			got = append(got, e.ID)
		} else if !archivedBefore[e.ID] && e.ArchiveReason != knowledge.ArchiveCap {
			t.Errorf("%s archived with reason %q, want cap", e.ID, e.ArchiveReason)
		}
	}
	if len(es) != len(in.Entries) {
		t.Errorf("entries deleted")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("active after cap %d: %v, want %v", in.Cap, got, want)
	}
}

type skSwarmIn struct {
	Lesson       string   `json:"lesson"`
	Project      string   `json:"project_name"`
	Category     string   `json:"category"`
	Scope        string   `json:"scope"`
	Confidence   float64  `json:"confidence"`
	Status       string   `json:"status"`
	Tags         []string `json:"tags"`
	HiveEligible bool     `json:"hive_eligible"`
	Phases       []int    `json:"phases"`
	CreatedAt    string   `json:"created_at"`
}

func (s skSwarmIn) entry(id string) *knowledge.Entry {
	created, _ := time.Parse(time.RFC3339Nano, s.CreatedAt) // unparseable: zero, age 0
	e := &knowledge.Entry{ID: id, Tier: knowledge.TierSwarm, Lesson: s.Lesson, Project: s.Project, Category: s.Category,
		Scope: s.Scope, Confidence: s.Confidence, Status: s.Status, Tags: s.Tags, HiveEligible: s.HiveEligible, CreatedAt: created}
	if e.Category == "" {
		e.Category = "process"
	}
	if e.Scope == "" {
		e.Scope = "global"
	}
	for _, p := range s.Phases {
		e.ConfirmedBy = append(e.ConfirmedBy, knowledge.Confirmation{Project: s.Project, Phase: p})
	}
	return e
}

type skHiveOut struct {
	ID             string   `json:"id,omitempty"`
	Status         string   `json:"status"`
	Confidence     *float64 `json:"confidence,omitempty"`
	EncounterScore float64  `json:"encounter_score"`
	Confirmed      []string `json:"confirmed_by_projects"`
	SourceProject  string   `json:"source_project,omitempty"`
}

// skCheckHive runs lore's promotion checks over swarm entries then the
// encounters of every hive entry, as the fold does.
func skCheckHive(now time.Time, cfg knowledge.Config, swarm []*knowledge.Entry, hive []*knowledge.Entry) (map[string]int, []*knowledge.Entry) {
	sum := map[string]int{"new_promotions": 0, "encounters_incremented": 0, "advancements": 0}
	for _, e := range swarm {
		route := knowledge.HiveRoute(e, now, cfg)
		if route == "" {
			continue
		}
		dup := false
		for _, h := range hive {
			if knowledge.NearDuplicate(e.Lesson, h.Lesson, cfg.DedupThreshold) {
				dup = true
			}
		}
		if dup {
			continue
		}
		h := knowledge.NewHiveEntry(e, knowledge.HiveIDFor(e.ID), route, now, cfg)
		hive = append(hive, &h)
		sum["new_promotions"]++
	}
	for _, h := range hive {
		for _, e := range swarm {
			if !e.Active() || !knowledge.NearDuplicate(e.Lesson, h.Lesson, cfg.DedupThreshold) {
				continue
			}
			counted, advanced := knowledge.Encounter(h, e.Project, now, cfg)
			if counted {
				sum["encounters_incremented"]++
			}
			if advanced {
				sum["advancements"]++
			}
			break
		}
	}
	sum["total_hive_entries"] = len(hive)
	return sum, hive
}

func skHiveView(hive []*knowledge.Entry, withConfidence, withID bool) []skHiveOut {
	out := []skHiveOut{}
	for _, h := range hive {
		o := skHiveOut{Status: h.Status, EncounterScore: h.EncounterScore, Confirmed: h.DistinctProjects(), SourceProject: h.SourceProject}
		if o.Confirmed == nil {
			o.Confirmed = []string{}
		}
		if withConfidence {
			c := h.Confidence
			o.Confidence = &c
		}
		if withID {
			o.ID, o.SourceProject = h.ID, ""
		}
		out = append(out, o)
	}
	return out
}

func skRoute(t *testing.T, c Case) {
	var in struct {
		Now   time.Time `json:"now"`
		Days  int       `json:"auto_promote_days"`
		Entry skSwarmIn `json:"entry"`
	}
	mustJSON(t, c.Input, &in)
	var want struct {
		NewPromotions int         `json:"new_promotions"`
		Encounters    int         `json:"encounters_incremented"`
		Hive          []skHiveOut `json:"hive"`
	}
	mustJSON(t, c.Expected, &want)
	cfg := knowledge.DefaultConfig()
	cfg.AutoPromoteDays = in.Days
	sum, hive := skCheckHive(in.Now, cfg, []*knowledge.Entry{in.Entry.entry("e1")}, nil)
	if want.NewPromotions > 0 {
		// K3: the promotion is not an encounter; the source project is the
		// first confirming project and the score starts at 1.0.
		want.Encounters = 0
		for i := range want.Hive {
			want.Hive[i].EncounterScore = cfg.InitialEncounterScore
		}
		t.Logf("K3 (SPEC §5): a new hive entry starts at encounter_score 1.0 with no encounter counted (v7.103.2: 1.1, one encounter)")
	}
	if sum["new_promotions"] != want.NewPromotions || sum["encounters_incremented"] != want.Encounters {
		t.Errorf("summary %v, want new_promotions=%d encounters_incremented=%d", sum, want.NewPromotions, want.Encounters)
	}
	if got := skHiveView(hive, true, false); !reflect.DeepEqual(got, want.Hive) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want.Hive)
		t.Errorf("hive %s, want %s", g, w)
	}
}

func skEncounter(t *testing.T, c Case) {
	var in struct {
		Now  time.Time `json:"now"`
		Hive []struct {
			ID             string   `json:"id"`
			Lesson         string   `json:"lesson"`
			Status         string   `json:"status"`
			SourceProject  string   `json:"source_project"`
			EncounterScore float64  `json:"encounter_score"`
			Confirmed      []string `json:"confirmed_by_projects"`
		} `json:"hive_before"`
		Swarm    []skSwarmIn     `json:"swarm"`
		Override json.RawMessage `json:"config_override"`
	}
	mustJSON(t, c.Input, &in)
	cfg, err := knowledge.ParseConfig(in.Override)
	if err != nil {
		t.Fatal(err)
	}
	var hive []*knowledge.Entry
	for _, h := range in.Hive {
		e := &knowledge.Entry{ID: h.ID, Tier: knowledge.TierHive, Lesson: h.Lesson, Status: h.Status,
			SourceProject: h.SourceProject, EncounterScore: h.EncounterScore, Scope: "global", Category: "process"}
		for _, p := range h.Confirmed {
			e.ConfirmedBy = append(e.ConfirmedBy, knowledge.Confirmation{Project: p})
		}
		hive = append(hive, e)
	}
	var swarm []*knowledge.Entry
	for i, s := range in.Swarm {
		swarm = append(swarm, s.entry("s"+string(rune('1'+i))))
	}
	var want struct {
		Summary map[string]int `json:"summary"`
		Hive    []skHiveOut    `json:"hive"`
	}
	mustJSON(t, c.Expected, &want)
	withID := len(in.Hive) > 0
	if !withID {
		// K3: the fresh promotion is not encountered by its own source.
		want.Summary["encounters_incremented"] = 0
		for i := range want.Hive {
			want.Hive[i].EncounterScore = cfg.InitialEncounterScore
		}
		t.Logf("departs (K3): a fresh hive entry keeps encounter_score %v and counts no encounter", cfg.InitialEncounterScore)
	} else {
		t.Logf("departs (K3): later confirmations from a new project add 0.1 × weight as v7.103.2 does")
	}
	sum, hive := skCheckHive(in.Now, cfg, swarm, hive)
	if !reflect.DeepEqual(sum, want.Summary) {
		t.Errorf("summary %v, want %v", sum, want.Summary)
	}
	got := skHiveView(hive, false, withID)
	for i := range got {
		if !withID {
			got[i].SourceProject = ""
		}
	}
	if !reflect.DeepEqual(got, want.Hive) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want.Hive)
		t.Errorf("hive %s, want %s", g, w)
	}
}

func skAutoPromotion(t *testing.T, c Case) {
	var in struct {
		Now   time.Time `json:"now"`
		Days  int       `json:"auto_promote_days"`
		Runs  int       `json:"runs"`
		Entry skSwarmIn `json:"entry"`
	}
	mustJSON(t, c.Input, &in)
	var want []struct {
		Status       string `json:"status"`
		HiveEligible *bool  `json:"hive_eligible"`
	}
	mustJSON(t, c.Expected, &want)
	cfg := knowledge.DefaultConfig()
	cfg.AutoPromoteDays = in.Days
	in.Entry.Project = "p"
	e := in.Entry.entry("e1")
	for i := 0; i < in.Runs; i++ {
		knowledge.AutoPromote(e, in.Now, cfg)
		wantElig := want[i].HiveEligible != nil && *want[i].HiveEligible
		if e.Status != want[i].Status || e.HiveEligible != wantElig {
			t.Errorf("run %d: status %s hive_eligible %v, want %s %v", i+1, e.Status, e.HiveEligible, want[i].Status, wantElig)
		}
	}
}

// skFold folds payloads as events of one project into a fresh store.
type skFold struct {
	t   *testing.T
	st  *projector.Store
	m   *knowledge.Model
	seq uint64
}

func newSKFold(t *testing.T) *skFold {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &skFold{t: t, st: st, m: knowledge.New()}
}

func (f *skFold) fold(evs ...*events.Event) {
	for _, ev := range evs {
		f.seq++
		ev.Seq = f.seq
	}
	poison, err := projector.FoldEvents(f.st, []projector.Model{f.m}, evs)
	if err != nil || len(poison) > 0 {
		f.t.Fatalf("fold: %v %v", err, poison)
	}
}

func skMigrate(t *testing.T, c Case) {
	var in struct {
		MD      string `json:"context_md"`
		Package string `json:"package_json_name"`
	}
	mustJSON(t, c.Input, &in)
	var want struct {
		FirstRun struct {
			Migrated int `json:"entriesMigrated"`
			Dropped  int `json:"entriesDropped"`
			Total    int `json:"entriesTotal"`
		} `json:"first_run"`
		Entries []struct {
			Lesson     string   `json:"lesson"`
			Tags       []string `json:"tags"`
			Confidence float64  `json:"confidence"`
			Status     string   `json:"status"`
			Scope      string   `json:"scope"`
			Project    string   `json:"project_name"`
			Auto       bool     `json:"auto_generated"`
		} `json:"entries"`
	}
	mustJSON(t, c.Expected, &want)
	t.Logf("departs (K5): the section picks the category (lesson, pattern, domain, decision); the refused bullet is kept in the rejected read model")
	wantCategories := []string{"lesson", "lesson", "pattern", "domain", "decision", "lesson"}

	items := knowledge.ParseContextMD(in.MD)
	if len(items) != want.FirstRun.Total {
		t.Fatalf("parsed %d bullets, want %d", len(items), want.FirstRun.Total)
	}
	f := newSKFold(t)
	run := func() {
		var evs []*events.Event
		for _, it := range items {
			sub := it.Submission(in.Package)
			ev, err := events.New("knowledge.submitted/v1", in.Package, "migration", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), &sub)
			if err != nil {
				t.Fatal(err)
			}
			if err := events.ValidateData(ev.Type, ev.Data); err != nil {
				t.Fatal(err)
			}
			ev.ID = knowledge.ImportEventID(knowledge.FormatContextMD, in.Package, it.Digest)
			evs = append(evs, ev)
		}
		f.fold(evs...)
	}
	run()
	check := func(label string) {
		es, err := knowledge.List(f.st.Model(knowledge.ModelName), knowledge.ListOptions{Project: in.Package, Tier: knowledge.TierSwarm})
		if err != nil {
			t.Fatal(err)
		}
		rj, err := knowledge.Rejections(f.st.Model(knowledge.ModelName), in.Package, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != want.FirstRun.Migrated || len(rj) != want.FirstRun.Dropped {
			t.Fatalf("%s: %d entries, %d rejected; want %d, %d", label, len(es), len(rj), want.FirstRun.Migrated, want.FirstRun.Dropped)
		}
		if !strings.Contains(rj[0].Lesson, "rm -rf") || rj[0].Reason != knowledge.ReasonDangerous {
			t.Errorf("%s: rejected %+v", label, rj[0])
		}
		for i, w := range want.Entries {
			e := es[i]
			lesson := w.Lesson
			if strings.HasSuffix(lesson, "...(len 280)") {
				if knowledge.UTF16Len(e.Lesson) != 280 || !strings.HasSuffix(e.Lesson, "...") {
					t.Errorf("%s: long bullet %q not cut to 280", label, e.Lesson)
				}
				lesson = e.Lesson
			}
			if e.Lesson != lesson || e.Category != wantCategories[i] || !reflect.DeepEqual(e.Tags, w.Tags) ||
				e.Confidence != w.Confidence || e.Status != w.Status || e.Scope != w.Scope || e.Project != w.Project || e.AutoGenerated != w.Auto {
				t.Errorf("%s: entry %d = %+v, want %+v category %s", label, i, e, w, wantCategories[i])
			}
		}
	}
	check("first run")
	run() // importing the same content again adds nothing
	check("second run")
}

func skQuarantine(t *testing.T, c Case) {
	var in struct {
		Entries    []skEntryIn `json:"entries"`
		Quarantine struct {
			ID, Reason string
			By         string `json:"reported_by"`
		} `json:"quarantine"`
		Restore string `json:"then_restore"`
	}
	mustJSON(t, c.Input, &in)
	var want struct {
		AfterQ struct {
			IDs         []string `json:"knowledge_ids"`
			Quarantined []struct {
				ID, Status string
				Original   string `json:"original_status"`
				Reason     string `json:"quarantine_reason"`
				By         string `json:"reported_by"`
			} `json:"quarantined"`
			Rejected []struct {
				ID     string `json:"id"`
				Reason string `json:"rejection_reason"`
				Layer  int    `json:"rejection_layer"`
			} `json:"rejected"`
		} `json:"after_quarantine"`
		AfterR struct {
			Knowledge []struct {
				ID, Status string
				HasQ       bool `json:"has_quarantine_fields"`
			} `json:"knowledge"`
		} `json:"after_restore"`
	}
	mustJSON(t, c.Expected, &want)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	byID := map[string]*knowledge.Entry{}
	var es []*knowledge.Entry
	for i, e := range in.Entries {
		x := e.entry(i)
		if x.Category == "" {
			x.Category, x.Scope, x.Confidence = "other", "global", 0.5
		}
		es = append(es, x)
		byID[x.ID] = x
	}
	rejected := map[string]knowledge.Rejected{}
	q := byID[in.Quarantine.ID]
	rec, ok := knowledge.Quarantine(q, in.Quarantine.Reason, in.Quarantine.By, now)
	if !ok {
		t.Fatal("quarantine did nothing")
	}
	rejected[rec.ID] = rec
	var ids []string
	for _, e := range es {
		if e.Status != knowledge.StatusQuarantined {
			ids = append(ids, e.ID)
		}
	}
	if !reflect.DeepEqual(ids, want.AfterQ.IDs) {
		t.Errorf("visible after quarantine %v, want %v", ids, want.AfterQ.IDs)
	}
	wq := want.AfterQ.Quarantined[0]
	if q.Status != wq.Status || q.OriginalStatus != wq.Original || q.QuarantineReason != wq.Reason || q.ReportedBy != wq.By {
		t.Errorf("quarantined %+v, want %+v", q, wq)
	}
	wr := want.AfterQ.Rejected[0]
	if rec.ID != wr.ID || rec.Reason != wr.Reason || rec.Layer != wr.Layer {
		t.Errorf("rejected %+v, want %+v", rec, wr)
	}
	if _, ok := knowledge.Restore(byID[in.Restore], nil, knowledge.DefaultConfig(), now); !ok {
		t.Fatal("restore refused")
	}
	delete(rejected, in.Restore) // the fold drops the quarantine fingerprint on restore
	for _, w := range want.AfterR.Knowledge {
		e := byID[w.ID]
		hasQ := e.QuarantineReason != "" || e.OriginalStatus != "" || !e.QuarantinedAt.IsZero() || e.ReportedBy != ""
		if e.Status != w.Status || hasQ != w.HasQ {
			t.Errorf("after restore %s: status %s quarantine fields %v, want %s %v", w.ID, e.Status, hasQ, w.Status, w.HasQ)
		}
	}
	if len(rejected) != 0 {
		t.Errorf("rejected after restore: %v", rejected)
	}
}

func skRestoreRevalidation(t *testing.T, c Case) {
	var in struct {
		Q struct {
			ID, Lesson string
			Original   string `json:"original_status"`
		} `json:"quarantined_entry"`
	}
	mustJSON(t, c.Input, &in)
	e := &knowledge.Entry{ID: in.Q.ID, Lesson: in.Q.Lesson, Status: knowledge.StatusQuarantined, OriginalStatus: in.Q.Original,
		Category: "other", Scope: "global", Confidence: 0.5}
	res, ok := knowledge.Restore(e, nil, knowledge.DefaultConfig(), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if ok || e.Status != knowledge.StatusQuarantined {
		t.Errorf("restore of %q: ok=%v status %s, want it kept quarantined", in.Q.Lesson, ok, e.Status)
	}
	if res.Reason != knowledge.ReasonDangerous || e.RestoreError != knowledge.ReasonDangerous {
		t.Errorf("restore reason %q / %q, want %q", res.Reason, e.RestoreError, knowledge.ReasonDangerous)
	}
}
