package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

// The benchmarks of this file measure lore's side of each operation a
// reference implementation is compared with, one operation each, through
// lore's Go client over NATS as an agent's process calls it, on a store of
// N entries in one project (N swarm entries plus N/2 hive ones). The
// comparison itself (the reference code, run side by side) is outside.

// refSizes are the store sizes of the comparison.
var refSizes = []int{100, 1000, 10_000}

const refProject = "ref"

// refNode starts a node with its projector and API, seeds it with
// nKnowledge swarm entries (and half as many hive ones) of refProject and
// nPatterns registry patterns, and returns a client.
func refNode(b *testing.B, nKnowledge, nPatterns int) (*node.Node, *api.Client) {
	b.Helper()
	nd := startNode(b, node.Config{})
	runNode(b, nd)
	svc, err := nd.Serve(api.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop() })
	nc, _ := natstest.Connect(b, nd.ClientURL())
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, uint64(nKnowledge)))
	var evs []*events.Event
	for i := range nKnowledge + nKnowledge/2 {
		tier := "swarm"
		if i >= nKnowledge {
			tier = "hive"
		}
		conf := 0.7
		ev, err := events.New("knowledge.submitted/v1", refProject, "bench", benchkit.Epoch,
			&events.KnowledgeSubmitted{Lesson: fmt.Sprintf("lesson %d: %s", i, benchkit.Lesson(rng)), Category: "tooling",
				Confidence: &conf, Source: "agent", Tier: tier, Tags: []string{"bench"}})
		if err != nil {
			b.Fatal(err)
		}
		evs = append(evs, ev)
	}
	pevs, err := benchkit.SeedPatterns(11, nPatterns)
	if err != nil {
		b.Fatal(err)
	}
	evs = append(evs, pevs...)
	var last uint64
	for i := 0; i < len(evs); i += 1000 {
		res, err := nd.Appender.AppendBatch(ctx, evs[i:min(i+1000, len(evs))])
		if err != nil {
			b.Fatal(err)
		}
		last = res[len(res)-1].Seq
	}
	if last > 0 {
		if err := nd.Runtime.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
	}
	return nd, api.NewClient(nc)
}

// refCall calls group.name with args in refProject and decodes the reply.
func refCall(b *testing.B, cl *api.Client, group, name string, args any, noWait bool) map[string]any {
	b.Helper()
	req, err := api.NewRequest(args)
	if err != nil {
		b.Fatal(err)
	}
	req.Project, req.Source, req.NoWait = refProject, "bench", noWait
	raw, err := cl.CallRaw(context.Background(), group, name, req)
	if err != nil {
		b.Fatalf("%s.%s: %v", group, name, err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatalf("%s.%s reply %s: %v", group, name, raw, err)
	}
	return out
}

func refLesson(i int) map[string]any {
	return map[string]any{"lesson": fmt.Sprintf("Benchmark lesson %d: pin the toolchain version in CI so builds repeat", i),
		"category": "tooling", "phase": 1, "confidence": 0.8}
}

// BenchmarkRefAddLesson: knowledge.add, acknowledged (replied once folded).
func BenchmarkRefAddLesson(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, n, 0)
			b.ResetTimer()
			for i := range b.N {
				if r := refCall(b, cl, "knowledge", "add", refLesson(i), false); r["projected"] != true {
					b.Fatalf("add: %v", r)
				}
			}
		})
	}
}

// BenchmarkRefAddLessonUntilInjected: knowledge.add, then the next
// knowledge.inject for the lesson's task, which must show it.
func BenchmarkRefAddLessonUntilInjected(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, n, 0)
			b.ResetTimer()
			for i := range b.N {
				a := refLesson(i)
				refCall(b, cl, "knowledge", "add", a, false)
				r := refCall(b, cl, "knowledge", "inject", map[string]any{"task": a["lesson"], "headroom": 1.0}, true)
				if raw, _ := json.Marshal(r); !strings.Contains(string(raw), fmt.Sprintf("Benchmark lesson %d:", i)) {
					b.Fatalf("injection does not show lesson %d: %s", i, raw)
				}
			}
		})
	}
}

// BenchmarkRefInjectRead: knowledge.inject (no_wait: the reply returns
// once the injection record is stored).
func BenchmarkRefInjectRead(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, n, 0)
			rng := rand.New(rand.NewPCG(3, 4))
			b.ResetTimer()
			for range b.N {
				refCall(b, cl, "knowledge", "inject", map[string]any{"task": benchkit.KnowledgeTask(rng), "headroom": 0.5}, true)
			}
		})
	}
}

// BenchmarkRefPhaseSweep: phase.complete (the sweep of aged entries),
// replied once folded.
func BenchmarkRefPhaseSweep(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, n, 0)
			b.ResetTimer()
			for i := range b.N {
				if r := refCall(b, cl, "phase", "complete", map[string]any{"phase": i + 1}, false); r["projected"] != true {
					b.Fatalf("phase.complete: %v", r)
				}
			}
		})
	}
}

// BenchmarkRefLoopStart: loop.start then patterns.inject {loop_id} on a
// registry of N patterns.
func BenchmarkRefLoopStart(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, 0, n)
			rng := rand.New(rand.NewPCG(5, 6))
			b.ResetTimer()
			for range b.N {
				r := refCall(b, cl, "loop", "start", map[string]any{"task": benchkit.PatternTask(rng), "category": "debugging"}, false)
				res, _ := r["result"].(map[string]any)
				id, _ := res["loop_id"].(string)
				if id == "" {
					b.Fatalf("loop.start: no loop_id in %v", r)
				}
				refCall(b, cl, "patterns", "inject", map[string]any{"loop_id": id}, true)
			}
		})
	}
}

// BenchmarkRefLoopStartInject: the row of BenchmarkRefLoopStart in one
// request: loop.start {inject: true} (replied once both its events are
// folded), which answers the patterns patterns.inject {loop_id} would.
func BenchmarkRefLoopStartInject(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, 0, n)
			rng := rand.New(rand.NewPCG(5, 6))
			b.ResetTimer()
			for range b.N {
				r := refCall(b, cl, "loop", "start", map[string]any{"task": benchkit.PatternTask(rng), "category": "debugging", "inject": true}, false)
				res, _ := r["result"].(map[string]any)
				if id, _ := res["loop_id"].(string); id == "" || res["injection"] == nil {
					b.Fatalf("loop.start with inject: %v", r)
				}
			}
		})
	}
}

// BenchmarkRefObservations: N observations of one decomposition pattern
// appended in requests of 1 000 (without waiting, the last one waits for
// the fold), then the query showing N. Three doors, in the same run:
// learning.observe_patterns (one pattern.observations/v1 per request),
// record.event with one pattern.observations/v1 envelope per request, and
// record.event with one pattern.observed/v1 envelope per observation (one
// message per observation: the baseline).
func BenchmarkRefObservations(b *testing.B) {
	type observation struct {
		Content string `json:"content"`
		Success bool   `json:"success"`
	}
	doors := []struct {
		name string
		send func(b *testing.B, cl *api.Client, content string, from, to int, noWait bool)
	}{
		{"observe_patterns", func(b *testing.B, cl *api.Client, content string, from, to int, noWait bool) {
			obs := make([]observation, 0, to-from)
			for j := from; j < to; j++ {
				obs = append(obs, observation{content, j%4 != 0})
			}
			refCall(b, cl, "learning", "observe_patterns", map[string]any{"observations": obs}, noWait)
		}},
		{"record.event-observations", func(b *testing.B, cl *api.Client, content string, from, to int, noWait bool) {
			obs := make([]observation, 0, to-from)
			for j := from; j < to; j++ {
				obs = append(obs, observation{content, j%4 != 0})
			}
			ev := map[string]any{"type": "pattern.observations/v1", "data": map[string]any{"observations": obs}}
			refCall(b, cl, "record", "event", map[string]any{"events": []any{ev}}, noWait)
		}},
		{"record.event", func(b *testing.B, cl *api.Client, content string, from, to int, noWait bool) {
			evs := make([]map[string]any, 0, to-from)
			for j := from; j < to; j++ {
				evs = append(evs, map[string]any{"type": "pattern.observed/v1",
					"data": map[string]any{"content": content, "success": j%4 != 0}})
			}
			refCall(b, cl, "record", "event", map[string]any{"events": evs}, noWait)
		}},
	}
	for _, n := range []int{1000, 10_000} {
		for _, door := range doors {
			b.Run(fmt.Sprintf("%s/N=%d", door.name, n), func(b *testing.B) {
				_, cl := refNode(b, 0, 0)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cputime.Used()
				for i := range b.N {
					content := fmt.Sprintf("split run %d by file type", i)
					const chunk = 1000
					for k := 0; k < n; k += chunk {
						door.send(b, cl, content, k, min(k+chunk, n), k+chunk < n)
					}
					r := refCall(b, cl, "learning", "pattern", map[string]any{"content": content}, false)
					got, _ := r["success_count"].(float64)
					failed, _ := r["failure_count"].(float64)
					if int(got+failed) != n {
						b.Fatalf("pattern after %d observations: %v", n, r)
					}
				}
				// The process's CPU time (client, server, JetStream, folds
				// and Pebble alike): steadier than wall time on shared cores.
				b.ReportMetric(float64((cputime.Used()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkReadYourWrites: commands that reply once their events are
// folded, called one after another on an otherwise idle node holding N
// entries in the project (and N registry patterns); one op is one command,
// in turn observe_pattern, record_outcome, loop.start, knowledge.add and
// phase.complete (nothing to archive: a project of its own).
func BenchmarkReadYourWrites(b *testing.B) {
	for _, n := range refSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			_, cl := refNode(b, n, n)
			cmds := []struct {
				group, name, project string
				args                 func(i int) map[string]any
			}{
				{"learning", "observe_pattern", refProject, func(i int) map[string]any {
					return map[string]any{"content": fmt.Sprintf("pattern %d: split by file", i), "success": true}
				}},
				{"learning", "record_outcome", refProject, func(i int) map[string]any {
					return map[string]any{"bead_id": fmt.Sprintf("b-%d", i), "duration_ms": 1000, "retry_count": 0, "success": true}
				}},
				{"loop", "start", refProject, func(i int) map[string]any {
					return map[string]any{"task": fmt.Sprintf("task %d: fix the parser", i), "category": "debugging"}
				}},
				{"knowledge", "add", refProject, refLesson},
				{"phase", "complete", "ryw-empty", func(i int) map[string]any { return map[string]any{"phase": i + 1} }},
			}
			all := make([]time.Duration, 0, b.N)
			each := make([][]time.Duration, len(cmds))
			b.ResetTimer()
			for i := range b.N {
				c := cmds[i%len(cmds)]
				req, err := api.NewRequest(c.args(i))
				if err != nil {
					b.Fatal(err)
				}
				req.Project, req.Source = c.project, "bench"
				start := time.Now()
				raw, err := cl.CallRaw(context.Background(), c.group, c.name, req)
				if err != nil {
					b.Fatalf("%s.%s: %v", c.group, c.name, err)
				}
				d := time.Since(start)
				if !strings.Contains(string(raw), `"projected":true`) {
					b.Fatalf("%s.%s: not projected: %s", c.group, c.name, raw)
				}
				all = append(all, d)
				each[i%len(cmds)] = append(each[i%len(cmds)], d)
			}
			// The goal is stated in percentiles, over every command and
			// for each one (its p50: which command holds the rest back).
			l := benchkit.Summarise(all)
			b.ReportMetric(l.P50us, "p50-us")
			b.ReportMetric(l.P99us, "p99-us")
			for j, c := range cmds {
				if len(each[j]) > 0 {
					b.ReportMetric(benchkit.Summarise(each[j]).P50us, c.name+"-p50-us")
				}
			}
		})
	}
}

// BenchmarkObservePatternPhases: where one learning.observe_pattern round
// trip spends its time, on a node holding 100 entries and 100 registry
// patterns. One op is one observation appended and waited for in-process
// (node.Append, then WaitFor: the append's round trip to JetStream, then
// the fold and commit), next to, in the same run, the same command through
// the API over NATS (client, request, pipeline, reply read back). Reported:
// the in-process phases' means and the p50 / p99 of both paths.
func BenchmarkObservePatternPhases(b *testing.B) {
	nd, cl := refNode(b, 100, 100)
	ctx := context.Background()
	var tAppend, tFold time.Duration
	inproc := make([]time.Duration, 0, b.N)
	viaAPI := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		ev, err := events.New("pattern.observed/v1", refProject, "bench", t0, &events.PatternObserved{Content: fmt.Sprintf("pattern %d: split by file", i), Success: true})
		if err != nil {
			b.Fatal(err)
		}
		res, err := nd.Append(ctx, []*events.Event{ev}, nil)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := nd.WaitFor(ctx, res[0].Seq); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		tAppend, tFold = tAppend+t1.Sub(t0), tFold+t2.Sub(t1)
		inproc = append(inproc, t2.Sub(t0))
		r := refCall(b, cl, "learning", "observe_pattern", map[string]any{"content": fmt.Sprintf("pattern %d: split by API", i), "success": true}, false)
		viaAPI = append(viaAPI, time.Since(t2))
		if r["projected"] != true {
			b.Fatalf("observe_pattern: not projected: %v", r)
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[(len(d)-1)*p/100].Microseconds())
	}
	b.ReportMetric(float64(tAppend.Microseconds())/float64(b.N), "append-us")
	b.ReportMetric(float64(tFold.Microseconds())/float64(b.N), "fold-us")
	b.ReportMetric(pct(inproc, 50), "inproc-p50-us")
	b.ReportMetric(pct(inproc, 99), "inproc-p99-us")
	b.ReportMetric(pct(viaAPI, 50), "api-p50-us")
	b.ReportMetric(pct(viaAPI, 99), "api-p99-us")
}
