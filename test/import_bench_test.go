package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/test/natstest"
)

// importSizes are the store sizes of the import benchmarks.
var importSizes = []int{100, 1000, 10_000}

// knowledgeJSONL is an opencode-swarm knowledge.jsonl of n distinct
// lessons.
func knowledgeJSONL(n int) []byte {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	var b bytes.Buffer
	cats := []string{"debugging", "testing", "tooling", "architecture", "performance"}
	for i := range n {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("k-%06d", i),
			"lesson":   fmt.Sprintf("lesson %d: %s", i, benchkit.Lesson(rng)),
			"category": cats[i%len(cats)], "tags": []string{"bench"}, "confidence": 0.7,
			"status": "candidate", "created_at": "2026-01-02T03:04:05Z"})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkKnowledgeImport is lore knowledge import of an N-lesson
// knowledge.jsonl into one project: the file read, then sent in requests
// of the CLI's size, each replied once its entries are folded.
func BenchmarkKnowledgeImport(b *testing.B) {
	for _, n := range importSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			file := knowledgeJSONL(n)
			for range b.N {
				b.StopTimer()
				nd := startNode(b, node.Config{})
				runNode(b, nd)
				svc, err := nd.Serve(api.Options{})
				if err != nil {
					b.Fatal(err)
				}
				nc, _ := natstest.Connect(b, nd.ClientURL())
				cl := api.NewClient(nc)
				b.StartTimer()
				recs, bad := knowledge.ReadJSONL(bytes.NewReader(file), knowledge.FormatSwarm, "imp")
				if len(bad) > 0 || len(recs) != n {
					b.Fatalf("read %d records, %d bad", len(recs), len(bad))
				}
				sent := 0
				for i := 0; i < n; i += app.KnowledgeImportChunk {
					part := make([]events.KnowledgeSubmitted, 0, app.KnowledgeImportChunk)
					for _, r := range recs[i:min(i+app.KnowledgeImportChunk, n)] {
						part = append(part, r.Submission)
					}
					req, err := api.NewRequest(app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Project: "imp", Submissions: part})
					if err != nil {
						b.Fatal(err)
					}
					raw, err := cl.CallRaw(context.Background(), "knowledge", "import", req)
					if err != nil {
						b.Fatal(err)
					}
					var reply struct {
						Projected bool                      `json:"projected"`
						Result    app.KnowledgeImportResult `json:"result"`
					}
					if err := json.Unmarshal(raw, &reply); err != nil || !reply.Projected {
						b.Fatalf("import reply %s: %v", raw, err)
					}
					sent += reply.Result.Sent
				}
				b.StopTimer()
				if sent != n {
					b.Fatalf("sent %d of %d", sent, n)
				}
				_ = svc.Stop()
				nc.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lessons/s")
		})
	}
}
