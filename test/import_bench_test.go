package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/test/natstest"
)

// importSizes are the store sizes of the import benchmarks.
var importSizes = []int{100, 1000, 10_000}

// knowledgeJSONLAt is an opencode-swarm knowledge.jsonl of n distinct
// lessons, every one created at created. The files of different runs
// share no lesson text: the process's text memos (a lesson's safety
// verdict, its features) answer no lesson of a later run from an earlier
// one, as in a process that imports a file once.
func knowledgeJSONLAt(n int, created string, run int) []byte {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	var b bytes.Buffer
	cats := []string{"debugging", "testing", "tooling", "architecture", "performance"}
	for i := range n {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("k-%06d", i),
			"lesson":   fmt.Sprintf("lesson %d.%d: %s", run, i, benchkit.Lesson(rng)),
			"category": cats[i%len(cats)], "tags": []string{"bench"}, "confidence": 0.7,
			"status": "candidate", "created_at": created})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkKnowledgeImport is lore knowledge import of an N-lesson
// knowledge.jsonl into one project: the file read, then sent in requests
// of the CLI's size by api.ImportKnowledge. mode=pipelined is the CLI's
// way (up to api.ImportWindow requests sent ahead of the fold without
// waiting, one wait at the end, the report read back from the fold's
// decisions); mode=wait-each sends each request once the one before is
// folded (each replied once its entries are folded).
//
// store=aged is the worst case: every lesson is old enough to be promoted
// to the hive as it is imported, into pools at their default caps, so
// each lesson past the caps archives one entry per tier. store=fresh is
// a store of recent lessons imported under caps raised to hold it (the
// comparison's N-lesson store): each lesson is added, nothing promoted or
// archived.
func BenchmarkKnowledgeImport(b *testing.B) {
	for _, n := range importSizes {
		for _, store := range []string{"aged", "fresh"} {
			for _, mode := range []string{"pipelined", "wait-each"} {
				b.Run(fmt.Sprintf("N=%d/store=%s/mode=%s", n, store, mode), func(b *testing.B) { benchKnowledgeImport(b, n, store, mode) })
			}
		}
	}
}

func benchKnowledgeImport(b *testing.B, n int, store, mode string) {
	var cpu time.Duration
	for run := range b.N {
		b.StopTimer()
		created := "2026-01-02T03:04:05Z" // long enough ago that each lesson is promoted to the hive by age
		if store == "fresh" {
			created = time.Now().UTC().Format(time.RFC3339)
		}
		file := knowledgeJSONLAt(n, created, run)
		nd := startNode(b, node.Config{})
		runNode(b, nd)
		svc, err := nd.Serve(api.Options{})
		if err != nil {
			b.Fatal(err)
		}
		nc, _ := natstest.Connect(b, nd.ClientURL())
		cl := api.NewClient(nc)
		if store == "fresh" {
			req, err := api.NewRequest(map[string]any{"config": map[string]any{
				"swarm_max_entries": max(n, 100), "hive_max_entries": max(n, 200)}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cl.CallRaw(context.Background(), "knowledge", "configure", req); err != nil {
				b.Fatal(err)
			}
		}
		c0 := cputime.Used()
		b.StartTimer()
		subs := swarmSubmissions(b, file)
		if len(subs) != n {
			b.Fatalf("read %d records, want %d", len(subs), n)
		}
		window := api.ImportWindow // the CLI's way
		if mode == "wait-each" {
			window = 0
		}
		res, err := api.ImportKnowledge(context.Background(), cl,
			app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Project: "imp", Submissions: subs}, api.ImportOptions{Window: window})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cputime.Used() - c0
		if res.Sent != n || res.Pending != 0 || res.Added+res.Merged+res.Rejected+res.Reinforced != n {
			b.Fatalf("import of %d: sent %d, pending %d, added %d, merged %d, rejected %d", n, res.Sent, res.Pending, res.Added, res.Merged, res.Rejected)
		}
		if store == "fresh" && (len(res.Promoted) > 0 || len(res.Archived) > 0) {
			b.Fatalf("import of %d fresh lessons: promoted %d, archived %d", n, len(res.Promoted), len(res.Archived))
		}
		_ = svc.Stop()
		nc.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lessons/s")
	// The CPU time of the whole process (client, server, folds).
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/lesson")
}

// registryDoc is a shared-patterns root document of n error patterns.
func registryDoc(n int) []byte {
	rng := rand.New(rand.NewPCG(9, uint64(n)))
	ps := make([]map[string]any, n)
	for i := range ps {
		ok := 3 + rng.IntN(5)
		ps[i] = map[string]any{
			"pattern_id": fmt.Sprintf("pat-error-imp%d-%03d", i/1000, i%1000), "type": "error_pattern",
			"error_signature":         map[string]any{"error_type": "TypeError", "error_pattern": benchkit.Lesson(rng), "error_location_hints": []string{}},
			"fix_approach":            map[string]any{"description": "fix " + benchkit.Lesson(rng), "fix_category": "other"},
			"successful_applications": ok, "failed_applications": 8 - ok, "usage_count": 8, "success_rate": float64(ok) / 8,
			"first_discovered": "2025-12-31T23:00:00Z", "last_used": "2025-12-31T23:00:00Z",
			"effectiveness_trend": []any{}, "source_loops": []any{}, "tags": []string{},
		}
	}
	raw, _ := json.Marshal(map[string]any{"version": "1.0.0", "pattern_registry": map[string]any{"error_patterns": ps}})
	return raw
}

// BenchmarkPatternsImport is lore patterns import of a registry document
// of N error patterns into a fresh node: as the CLI sends it (parts of
// 2 000 patterns, each replied once stored but the last, replied once
// folded: "parts"), in parts each replied once folded ("waited"), and in
// one request replied once its events are folded ("one").
func BenchmarkPatternsImport(b *testing.B) {
	// What the process does once (schemas compiled) is not the import's.
	if _, err := crossloop.ParseRegistry(registryDoc(2), ""); err != nil {
		b.Fatal(err)
	}
	if ev, err := events.New("registry.imported/v1", "", "bench", time.Now(), &events.RegistryImported{Patterns: []json.RawMessage{json.RawMessage(`{}`)}}); err != nil {
		b.Fatal(err)
	} else {
		_, _ = events.Check(ev) // the payload is not a pattern: only the schemas are wanted
	}
	for _, n := range importSizes {
		for _, mode := range []string{"parts", "waited", "one"} {
			b.Run(fmt.Sprintf("N=%d/%s", n, mode), func(b *testing.B) {
				raw := registryDoc(n)
				b.ResetTimer()
				var cpu time.Duration
				for range b.N {
					b.StopTimer()
					nd, dst := refNode(b, 0, 0)
					c0 := cputime.Used()
					b.StartTimer()
					docs := [][]byte{raw}
					if mode != "one" {
						if parts := crossloop.SplitRegistry(raw, "", importPart); parts != nil {
							docs = docs[:0]
							for _, p := range parts {
								docs = append(docs, p.Raw)
							}
						}
					}
					var last float64
					got := 0
					for i, doc := range docs {
						r := refCall(b, dst, "patterns", "import", map[string]any{"document": json.RawMessage(doc)}, mode == "parts" && i < len(docs)-1)
						app, _ := r["appended"].([]any)
						if len(app) == 0 {
							b.Fatalf("import of %d patterns: nothing appended: %v", n, r)
						}
						last, _ = app[len(app)-1].(map[string]any)["seq"].(float64)
						res, _ := r["result"].(map[string]any)
						p, _ := res["patterns"].(float64)
						got += int(p)
					}
					// A reply that gave up waiting (pending) is followed by
					// the wait for the fold of its last event: the import is
					// done once its patterns can be queried.
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
					err := nd.Runtime.WaitFor(ctx, uint64(last))
					cancel()
					b.StopTimer()
					cpu += cputime.Used() - c0
					if err != nil {
						b.Fatal(err)
					}
					if got != n {
						b.Fatalf("import of %d patterns: %d new", n, got)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "patterns/s")
				// The CPU time of the whole process (client, server, folds):
				// what the import costs, whatever else the machine runs.
				b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/pattern")
			})
		}
	}
}

// importPart is the CLI's part of a long patterns import (cmd/lore).
const importPart = 2000
