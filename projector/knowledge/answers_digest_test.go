package knowledge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// answersDigest is the digest of the answers of agingWorkload(5, 1500)
// (every entry of every pool, the rejected records and injections, after
// every step), as the fold that rewrote every aging entry at each sweep
// gave them (with max_phases set on new entries and the seed's categories;
// the same digest from both storage layouts). A change of how entries are
// stored must keep it; a change of the rules changes it, on purpose.
const answersDigest = "17522527fa8a57862c9c7ecb9830e01aa350f414d43b8cb938f49a4f95513846"

// agingWorkload is randomWorkload with what ages: todo lessons, short
// TTLs, many phase completions, outcomes that make entries evergreen and
// configuration changes of the sweep's and lifecycle's settings.
func agingWorkload(t testing.TB, seed uint64, n int) []wlStep {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 78))
	var steps []wlStep
	var step wlStep
	var lessons, ids []string
	phase := map[string]int{}
	for i := range n {
		project := wlProjects[rng.IntN(len(wlProjects))]
		at := t0.Add(time.Duration(i) * 11 * time.Hour)
		var typ string
		var p events.Payload
		switch k := rng.IntN(100); {
		case k < 45:
			conf := float64(rng.IntN(11)) / 10
			d := &events.KnowledgeSubmitted{Lesson: wlLesson(rng, lessons), Category: []string{"tooling", "todo", "debugging"}[rng.IntN(3)],
				Tags: []string{wlWords[rng.IntN(len(wlWords))]}, Confidence: &conf, Phase: 1 + rng.IntN(6), Source: "agent"}
			if rng.IntN(6) == 0 {
				d.Tier = knowledge.TierHive
			}
			if rng.IntN(3) == 0 {
				yes := true
				d.HiveEligible = &yes
			}
			if rng.IntN(10) == 0 {
				d.Tags = append(d.Tags, knowledge.FastTrackTag)
			}
			if rng.IntN(8) == 0 {
				created := at.Add(-time.Duration(rng.IntN(200)) * 24 * time.Hour)
				d.Import = &events.KnowledgeImport{Format: knowledge.FormatSwarm, Digest: fmt.Sprintf("%064x", i), CreatedAt: &created,
					PhasesAlive: rng.IntN(6), MaxPhases: rng.IntN(4), Status: []string{"candidate", "established", "archived"}[rng.IntN(3)]}
			}
			lessons = append(lessons, d.Lesson)
			typ, p = "knowledge.submitted/v1", d
		case k < 60 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			if rng.IntN(3) == 0 {
				id = knowledge.HiveIDFor(id)
			}
			typ, p = "knowledge.outcome/v1", &events.KnowledgeOutcome{EntryID: id, Outcome: []string{"applied", "helpful", "helpful", "harmful"}[rng.IntN(4)]}
		case k < 66 && len(ids) > 0:
			var shown []string
			for range 1 + rng.IntN(4) {
				shown = append(shown, ids[rng.IntN(len(ids))])
			}
			typ, p = "knowledge.injected/v1", &events.KnowledgeInjected{Task: "task", Headroom: 0.9, Regime: knowledge.RegimeFull, EntryIDs: shown, Chars: 100, BudgetChars: 2000}
		case k < 68 && len(ids) > 0:
			typ, p = "knowledge.quarantined/v1", &events.KnowledgeQuarantined{EntryID: ids[rng.IntN(len(ids))], Reason: "bad"}
		case k < 70 && len(ids) > 0:
			typ, p = "knowledge.restored/v1", &events.KnowledgeRestored{EntryID: ids[rng.IntN(len(ids))]}
		case k < 71 && len(ids) > 0:
			typ, p = "knowledge.promoted/v1", &events.KnowledgePromoted{EntryID: ids[rng.IntN(len(ids))], Reason: "useful"}
		case k < 73:
			typ, p = "knowledge.curated/v1", &events.KnowledgeCurated{Project: project}
		case k < 75:
			cfgs := []string{`{"default_max_phases":3}`, `{"default_max_phases":10}`, `{"todo_max_phases":1}`, `{"todo_max_phases":3}`,
				`{"evergreen_confidence":0.5,"evergreen_utility":0.3}`, `{"evergreen_confidence":0.9,"evergreen_utility":0.8}`,
				`{"auto_promote_days":5}`, `{"auto_promote_days":90}`, `{"sweep_enabled":false}`, `{"sweep_enabled":true}`,
				`{"hive_enabled":false}`, `{"hive_enabled":true}`, `{"swarm_max_entries":15,"hive_max_entries":9}`,
				`{"min_retrievals_for_utility":1}`, `{"dedup_threshold":0.6}`}
			typ, p = "knowledge.configured/v1", &events.KnowledgeConfigured{Config: json.RawMessage(cfgs[rng.IntN(len(cfgs))])}
		default:
			phase[project]++
			typ, p = "phase.completed/v1", &events.PhaseCompleted{Project: project, Phase: phase[project]}
		}
		ev, err := events.New(typ, project, "test", at, p)
		if err != nil {
			t.Fatal(err)
		}
		ev.ID = fmt.Sprintf("ag-%d-%07d", seed, i)
		ev.Seq = uint64(i + 1)
		if d, ok := p.(*events.KnowledgeSubmitted); ok {
			ids = append(ids, knowledge.SubmissionID(ev.ID, project, d))
		}
		step = append(step, ev)
		if rng.IntN(6) == 0 {
			steps, step = append(steps, step), nil
		}
	}
	if len(step) > 0 {
		steps = append(steps, step)
	}
	return steps
}

// TestAnswersDigest folds agingWorkload and hashes what the queries answer
// after every step: every entry (phases_alive included) of every pool,
// the rejected records and a few injections. With
// LORE_KNOWLEDGE_ANSWERS=<file> it writes them to the file.
func TestAnswersDigest(t *testing.T) {
	t.Parallel() // the longest tests of the package, on a core each
	if got := answersOf(t, knowledge.New(), false); got != answersDigest {
		t.Fatalf("answers digest %s, want %s", got, answersDigest)
	}
}

// TestAnswersDigestPrepared: the same history with each step's events
// prepared (Model.Prepare, as the runtime's decoders do) before they fold,
// from empty text memos, gives the same answers.
func TestAnswersDigestPrepared(t *testing.T) {
	knowledge.ClearTextMemos()
	if got := answersOf(t, knowledge.New(), true); got != answersDigest {
		t.Fatalf("answers digest %s with every event prepared first, want %s", got, answersDigest)
	}
}

// TestAnswersWithinTinyCacheBudgets: caches of one byte hold only the
// pools the last fold or query read; every other read is a reload from
// the store, and the answers are the same.
func TestAnswersWithinTinyCacheBudgets(t *testing.T) {
	t.Parallel()
	m := knowledge.New()
	m.SetBudgets(knowledge.Budgets{Fold: 1, Query: 1})
	if got := answersOf(t, m, false); got != answersDigest {
		t.Fatalf("answers digest %s with one-byte cache budgets, want %s", got, answersDigest)
	}
	foldPools, foldBytes, queryPools, queryBytes := knowledge.CachedPools(m)
	// A query reads a project's swarm and the hive: both stay cached
	// together whatever the budget (poolCache.store).
	if foldPools > 2 || queryPools > 2 {
		t.Fatalf("one-byte budgets hold %d fold pool states (%d bytes) and %d query pools (%d bytes); want at most the pools of the last fold (2) and query (2)",
			foldPools, foldBytes, queryPools, queryBytes)
	}
	if foldBytes <= 0 || queryBytes <= 0 {
		t.Fatalf("estimated cache bytes %d and %d: want the held pools counted", foldBytes, queryBytes)
	}
}

// answersOf folds agingWorkload(5, 1500) into m and returns the digest of
// the answers after every step (TestAnswersDigest); with prepare, m
// prepares each step's events before they fold.
func answersOf(t *testing.T, m *knowledge.Model, prepare bool) string {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := st.Model(knowledge.ModelName)
	h := sha256.New()
	out := os.Getenv("LORE_KNOWLEDGE_ANSWERS")
	var f *os.File
	if out != "" {
		if f, err = os.Create(out); err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	write := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		h.Write([]byte(s))
		if f != nil {
			f.WriteString(s)
		}
	}
	rng := rand.New(rand.NewPCG(11, 11))
	archived := 0
	for _, step := range agingWorkload(t, 5, 1500) {
		for _, ev := range step {
			if !prepare {
				break
			}
			data, err := events.DecodeData(ev)
			if err != nil {
				t.Fatal(err)
			}
			m.Prepare(data)
		}
		if poison, err := projector.FoldEvents(st, []projector.Model{m}, step); err != nil || len(poison) > 0 {
			t.Fatalf("fold: %v %v", err, poison)
		}
		write("after %d\n", step[len(step)-1].Seq)
		all, err := knowledge.AllSwarmEntries(r)
		if err != nil {
			t.Fatal(err)
		}
		hive, err := knowledge.HiveEntries(r)
		if err != nil {
			t.Fatal(err)
		}
		rej, err := knowledge.RejectedRecords(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range append(all, hive...) {
			if e.ArchiveReason == knowledge.ArchiveTTL || e.ArchiveReason == knowledge.ArchiveTTLTodo {
				archived++
			}
			got, ok, err := knowledge.GetEntry(r, e.ID)
			if err != nil || !ok {
				t.Fatalf("entry %s: %v %v", e.ID, ok, err)
			}
			if a, b := mustJSON(t, got), mustJSON(t, e); a != b {
				t.Fatalf("GetEntry %s\n%s\nscan\n%s", e.ID, a, b)
			}
		}
		write("%s\n%s\n%s\n", mustJSON(t, all), mustJSON(t, hive), mustJSON(t, rej))
		for _, o := range wlQueries(rng) {
			inj, err := m.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
			if err != nil {
				t.Fatal(err)
			}
			write("%s\n", mustJSON(t, inj))
		}
	}
	if archived == 0 {
		t.Fatal("no sweep archived anything")
	}
	return hex.EncodeToString(h.Sum(nil))
}
