package knowledge_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// A randomized knowledge history, deterministic for a seed (event ids
// included), for differential checks: near-duplicates, contradictions,
// caps, hive promotions and encounters, outcomes, quarantines, sweeps and
// configuration changes all happen in it.

var wlWords = strings.Fields(`cache retry timeout lock query index parser worker queue schema token deploy
	always never must should enable disable use avoid test build`)

var wlProjects = []string{"alpha", "beta", "gamma", "p/ü"}

func wlLesson(rng *rand.Rand, prev []string) string {
	if len(prev) > 0 && rng.IntN(4) == 0 {
		// A variant of an earlier lesson: a near-duplicate or not.
		p := prev[rng.IntN(len(prev))]
		switch rng.IntN(3) {
		case 0:
			return p
		case 1:
			return p + " " + wlWords[rng.IntN(len(wlWords))]
		}
		return wlWords[rng.IntN(len(wlWords))] + " " + p
	}
	var b strings.Builder
	b.WriteString("Always")
	for range 3 + rng.IntN(9) {
		b.WriteString(" " + wlWords[rng.IntN(len(wlWords))])
	}
	return b.String()
}

// wlStep is one FoldEvents call of the workload.
type wlStep []*events.Event

func randomWorkload(t testing.TB, seed uint64, n int) []wlStep {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	var steps []wlStep
	var step wlStep
	var lessons, ids []string
	phase := map[string]int{}
	for i := range n {
		project := wlProjects[rng.IntN(len(wlProjects))]
		at := t0.Add(time.Duration(i) * 37 * time.Minute)
		var typ string
		var p events.Payload
		switch k := rng.IntN(100); {
		case k < 60:
			conf := float64(rng.IntN(11)) / 10
			d := &events.KnowledgeSubmitted{Lesson: wlLesson(rng, lessons), Category: []string{"tooling", "testing", "debugging"}[rng.IntN(3)],
				Tags: []string{wlWords[rng.IntN(len(wlWords))]}, Confidence: &conf, Phase: 1 + rng.IntN(12), Source: "agent"}
			if rng.IntN(5) == 0 {
				d.Scope = "stack:go"
			}
			if rng.IntN(6) == 0 {
				d.Tier = knowledge.TierHive
			}
			if rng.IntN(3) == 0 {
				yes := true
				d.HiveEligible = &yes
			}
			lessons = append(lessons, d.Lesson)
			typ, p = "knowledge.submitted/v1", d
		case k < 72 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			if rng.IntN(3) == 0 {
				id = knowledge.HiveIDFor(id)
			}
			typ, p = "knowledge.outcome/v1", &events.KnowledgeOutcome{EntryID: id, Outcome: []string{"applied", "helpful", "harmful"}[rng.IntN(3)]}
		case k < 80 && len(ids) > 0:
			var shown []string
			for range 1 + rng.IntN(4) {
				shown = append(shown, ids[rng.IntN(len(ids))])
			}
			typ, p = "knowledge.injected/v1", &events.KnowledgeInjected{Task: "task", Headroom: 0.9, Regime: knowledge.RegimeFull, EntryIDs: shown, Chars: 100, BudgetChars: 2000}
		case k < 83 && len(ids) > 0:
			typ, p = "knowledge.quarantined/v1", &events.KnowledgeQuarantined{EntryID: ids[rng.IntN(len(ids))], Reason: "bad"}
		case k < 86 && len(ids) > 0:
			typ, p = "knowledge.restored/v1", &events.KnowledgeRestored{EntryID: ids[rng.IntN(len(ids))]}
		case k < 88 && len(ids) > 0:
			typ, p = "knowledge.promoted/v1", &events.KnowledgePromoted{EntryID: ids[rng.IntN(len(ids))], Reason: "useful"}
		case k < 89:
			typ, p = "knowledge.curated/v1", &events.KnowledgeCurated{Project: project}
		case k < 90:
			cfgs := []string{`{"dedup_threshold":0.4}`, `{"dedup_threshold":0.6}`, `{"dedup_threshold":0}`, `{"dedup_threshold":1}`,
				`{"hive_enabled":false}`, `{"hive_enabled":true}`, `{"scope_filter":["global","stack:go"]}`, `{"scope_filter":["global"]}`,
				`{"swarm_max_entries":12,"hive_max_entries":9}`, `{"swarm_max_entries":100,"hive_max_entries":200}`, `{"max_inject_count":20}`}
			typ, p = "knowledge.configured/v1", &events.KnowledgeConfigured{Config: json.RawMessage(cfgs[rng.IntN(len(cfgs))])}
		default:
			phase[project]++
			typ, p = "phase.completed/v1", &events.PhaseCompleted{Project: project, Phase: phase[project]}
		}
		ev, err := events.New(typ, project, "test", at, p)
		if err != nil {
			t.Fatal(err)
		}
		ev.ID = fmt.Sprintf("wl-%d-%07d", seed, i)
		ev.Seq = uint64(i + 1)
		if typ == "knowledge.submitted/v1" {
			ids = append(ids, knowledge.DeriveID("knowledge", ev.ID))
		}
		step = append(step, ev)
		if rng.IntN(8) == 0 {
			steps, step = append(steps, step), nil
		}
	}
	if len(step) > 0 {
		steps = append(steps, step)
	}
	return steps
}

// wlQueries are the injections asked after each step.
func wlQueries(rng *rand.Rand) []knowledge.InjectOptions {
	var out []knowledge.InjectOptions
	for range 3 {
		o := knowledge.InjectOptions{Project: wlProjects[rng.IntN(len(wlProjects))],
			Headroom: []float64{1, 0.9, 0.6, 0.5, 0.2, 0.1, 0.05, 0.01}[rng.IntN(8)]}
		for range rng.IntN(6) {
			o.Task += wlWords[rng.IntN(len(wlWords))] + "s "
		}
		if rng.IntN(4) == 0 {
			o.Scopes = []string{"stack:go"}
		}
		out = append(out, o)
	}
	return out
}

// isPoolVersionKey tells the pool version keys (x/h/a, x/s/<token>/a)
// apart from the rest of the read model.
func isPoolVersionKey(k string) bool {
	return k == "x/h/a" || strings.HasPrefix(k, "x/s/") && strings.Count(k, "/") == 3 && strings.HasSuffix(k, "/a")
}

// TestCachedInjectIsReference folds a random history and, after every
// step, checks that the model's cached injection (which the fold's model
// also uses) gives exactly the reference injection. With
// LORE_KNOWLEDGE_DIFF=<file> it also writes the read model (pool versions
// aside) and every injection to the file, for comparing two builds.
func TestCachedInjectIsReference(t *testing.T) {
	n := 1500
	out := os.Getenv("LORE_KNOWLEDGE_DIFF")
	if out != "" {
		n = 30000
	}
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := knowledge.New()
	r := st.Model(knowledge.ModelName)
	rng := rand.New(rand.NewPCG(9, 9))
	crng := rand.New(rand.NewPCG(10, 10))
	var log strings.Builder
	injections := 0
	for i, step := range randomWorkload(t, 1, n) {
		poison, err := projector.FoldEvents(st, []projector.Model{m}, step)
		if err != nil || len(poison) > 0 {
			t.Fatalf("fold: %v %v", err, poison)
		}
		if i%10 == 0 {
			// The fold's pool states against the store, for new lessons and
			// for this step's (near-duplicates, contradictions).
			lessons := []string{wlLesson(crng, nil), wlLesson(crng, nil)}
			for _, ev := range step {
				if ev.Type != "knowledge.submitted/v1" {
					continue
				}
				d, err := events.DecodeData(ev)
				if err != nil {
					t.Fatal(err)
				}
				lessons = append(lessons, d.(*events.KnowledgeSubmitted).Lesson)
			}
			if err := knowledge.CheckPools(m, r, wlProjects, lessons, []float64{0, 0.6, 1}[i%3]); err != nil {
				t.Fatalf("after seq %d: %v", step[len(step)-1].Seq, err)
			}
		}
		for _, o := range wlQueries(rng) {
			want, err := knowledge.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
			if err != nil {
				t.Fatal(err)
			}
			wb, _ := json.Marshal(want)
			if out != "" {
				fmt.Fprintf(&log, "inject %+v\n%s\n", o, wb)
			}
			got, err := m.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
			if err != nil {
				t.Fatal(err)
			}
			if gb, _ := json.Marshal(got); string(gb) != string(wb) {
				t.Fatalf("after seq %d, %+v:\ncached    %s\nreference %s", step[len(step)-1].Seq, o, gb, wb)
			}
			injections += len(want.Entries)
		}
	}
	if injections == 0 {
		t.Fatal("no injection showed anything")
	}
	if out == "" {
		return
	}
	err = r.Scan(nil, func(k, v []byte) error {
		if !isPoolVersionKey(string(k)) {
			fmt.Fprintf(&log, "%q=%q\n", k, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInjectWhileFolding injects from the live store while the same model
// folds into it, as the API does during projection: no error, every entry
// shown exists, and once the folds end the cached injection is the
// reference. Run with -race, it checks the caches' sharing.
func TestInjectWhileFolding(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := knowledge.New()
	r := st.Model(knowledge.ModelName)
	steps := randomWorkload(t, 2, 600)
	stop := make(chan struct{})
	var foldErr error
	go func() {
		defer close(stop)
		for _, step := range steps {
			if poison, err := projector.FoldEvents(st, []projector.Model{m}, step); err != nil || len(poison) > 0 {
				foldErr = fmt.Errorf("fold: %v %v", err, poison)
				return
			}
		}
	}()
	errs := make(chan error, 2)
	for g := range 2 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				for _, o := range wlQueries(rng) {
					inj, err := m.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
					if err != nil {
						errs <- err
						return
					}
					for _, e := range inj.Entries {
						if _, ok, err := knowledge.GetEntry(r, e.ID); err != nil || !ok {
							errs <- fmt.Errorf("shown entry %s: ok=%v err=%v", e.ID, ok, err)
							return
						}
					}
				}
			}
		}()
	}
	var injectErr error
	for range 2 {
		if err := <-errs; err != nil && injectErr == nil {
			injectErr = err
		}
	}
	<-stop
	if err := errors.Join(foldErr, injectErr); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 50 {
		for _, o := range wlQueries(rng) {
			want, err := knowledge.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.InjectFrom(r, knowledge.DefaultConfig(), o, t0)
			if err != nil {
				t.Fatal(err)
			}
			if wb, gb := mustJSON(t, want), mustJSON(t, got); wb != gb {
				t.Fatalf("%+v:\ncached    %s\nreference %s", o, gb, wb)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
