package knowledge_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// BenchmarkKnowledgeOps measures each knowledge operation on one project
// pool of N swarm entries plus N/2 hive entries (caps raised to hold
// them), at N = 100, 1 000 and 10 000, so the growth with the pool shows
// as a ratio between sizes of the same run:
//
//   - add: one knowledge.submitted folded (what knowledge.add waits for);
//   - add+inject: the same, then the project's injection (the lesson
//     acknowledged and visible);
//   - inject: Model.InjectFrom for the project and a random task;
//   - phase: one phase.completed folded with nothing to archive;
//   - add+inject/recorded: add+inject as the API does it, the injection
//     recorded (knowledge.injected folded), so every step writes the pool
//     (the figure `lore bench --pool` measures over NATS);
//   - inject/recorded: inject, the previous injection's record folded
//     before it (not timed): every injection finds its pool changed, as
//     one agent's injections over the API do.
//
// Each reports p50 and p99 latencies besides ns/op.
func BenchmarkKnowledgeOps(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, op := range []string{"add", "add+inject", "inject", "phase", "add+inject/recorded", "inject/recorded"} {
			b.Run(fmt.Sprintf("%s/N=%d", strings.ReplaceAll(op, "/", "-"), n), func(b *testing.B) { benchOp(b, op, n) })
		}
	}
}

const opsProject = "ops"

type opsPool struct {
	st    *projector.Store
	m     *knowledge.Model
	rng   *rand.Rand
	seq   uint64
	phase int
}

func (p *opsPool) fold(b *testing.B, typ string, data events.Payload) {
	p.seq++
	ev, err := events.New(typ, opsProject, "bench", t0.Add(time.Duration(p.seq)*time.Second), data)
	if err != nil {
		b.Fatal(err)
	}
	ev.Seq = p.seq
	poison, err := projector.FoldEvents(p.st, []projector.Model{p.m}, []*events.Event{ev})
	if err == nil && len(poison) > 0 {
		err = poison[0]
	}
	if err != nil {
		b.Fatal(err)
	}
}

func (p *opsPool) submit(b *testing.B, tier string) {
	conf := float64(3+p.rng.IntN(7)) / 10
	p.fold(b, "knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: benchLesson(p.rng), Category: "debugging",
		Confidence: &conf, Tags: []string{benchWord(p.rng)}, Tier: tier, Source: "agent"})
}

// newOpsPool seeds a pool of n swarm and h hive entries, in batches of
// 1000 events.
func newOpsPool(b *testing.B, n, h int) *opsPool {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	p := &opsPool{st: st, m: knowledge.New(), rng: rand.New(rand.NewPCG(uint64(n), 7))}
	cfg, _ := json.Marshal(map[string]any{"swarm_max_entries": n, "hive_max_entries": max(n, h),
		"default_max_phases": 1 << 30})
	p.fold(b, "knowledge.configured/v1", &events.KnowledgeConfigured{Config: cfg})
	var batch []*events.Event
	flush := func() {
		if poison, err := projector.FoldEvents(st, []projector.Model{p.m}, batch); err != nil || len(poison) > 0 {
			b.Fatal(err, poison)
		}
		batch = batch[:0]
	}
	for i := range n + h {
		tier := ""
		if i >= n {
			tier = knowledge.TierHive
		}
		conf := float64(3+p.rng.IntN(7)) / 10
		p.seq++
		ev, err := events.New("knowledge.submitted/v1", opsProject, "bench", t0.Add(time.Duration(p.seq)*time.Second),
			&events.KnowledgeSubmitted{Lesson: benchLesson(p.rng), Category: "debugging", Confidence: &conf,
				Tags: []string{benchWord(p.rng)}, Tier: tier, Source: "agent"})
		if err != nil {
			b.Fatal(err)
		}
		ev.Seq = p.seq
		batch = append(batch, ev)
		if len(batch) == 1000 {
			flush()
		}
	}
	flush()
	return p
}

func (p *opsPool) inject(b *testing.B) knowledge.Injection {
	o := knowledge.InjectOptions{
		Task:     fmt.Sprintf("fix the %s %s when the %s %s fails", benchWord(p.rng), benchWord(p.rng), benchWord(p.rng), benchWord(p.rng)),
		Headroom: 0.9, Project: opsProject,
	}
	inj, err := p.m.InjectFrom(p.st.Model(knowledge.ModelName), knowledge.DefaultConfig(), o, t0)
	if err != nil {
		b.Fatal(err)
	}
	if len(inj.Entries) == 0 {
		b.Fatal("the injection showed nothing")
	}
	return inj
}

// record folds the record of inj, as knowledge.inject appends it.
func (p *opsPool) record(b *testing.B, inj knowledge.Injection) {
	ids := make([]string, len(inj.Entries))
	for i, s := range inj.Entries {
		ids[i] = s.ID
	}
	p.fold(b, "knowledge.injected/v1", &events.KnowledgeInjected{Task: inj.Task, Headroom: inj.Headroom,
		Regime: inj.Regime, EntryIDs: ids, Chars: inj.Chars, BudgetChars: inj.MaxChars})
}

func benchOp(b *testing.B, op string, n int) { benchOpOn(b, op, newOpsPool(b, n, n/2)) }

// benchOpOn times op on the pool p.
func benchOpOn(b *testing.B, op string, p *opsPool) {
	p.inject(b) // warm the caches, as a serving node's are
	var lat []time.Duration
	var last knowledge.Injection
	b.ResetTimer()
	for b.Loop() {
		if op == "inject/recorded" && last.Entries != nil {
			p.record(b, last)
		}
		start := time.Now()
		switch op {
		case "add":
			p.submit(b, "")
		case "add+inject":
			p.submit(b, "")
			p.inject(b)
		case "inject":
			p.inject(b)
		case "inject/recorded":
			last = p.inject(b)
		case "add+inject/recorded":
			p.submit(b, "")
			p.record(b, p.inject(b))
		case "phase":
			p.phase++
			p.fold(b, "phase.completed/v1", &events.PhaseCompleted{Phase: p.phase})
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
