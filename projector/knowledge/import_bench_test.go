package knowledge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/benchkit/cputime"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// importFile is an opencode-swarm knowledge.jsonl of n distinct lessons
// created long ago (so each is promoted to the hive by age as it is
// imported), the file BenchmarkKnowledgeImport in test/ imports.
func importFile(n int) []byte {
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

// importEvents are the events an import of file sends: one
// knowledge.submitted/v1 per lesson, named by its content.
func importEvents(b testing.TB, file []byte, project string) []*events.Event {
	recs, bad := knowledge.ReadJSONL(bytes.NewReader(file), knowledge.FormatSwarm, project)
	if len(bad) > 0 {
		b.Fatal(bad)
	}
	at := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	evs := make([]*events.Event, len(recs))
	for i := range recs {
		d := recs[i].Submission
		ev, err := events.New("knowledge.submitted/v1", project, "import", at, &d)
		if err != nil {
			b.Fatal(err)
		}
		ev.ID = knowledge.ImportEventID(d.Import.Format, project, d.Import.Digest)
		ev.Seq = uint64(i + 2)
		evs[i] = ev
	}
	return evs
}

// BenchmarkFoldImport folds the events of an N-lesson import, committed
// in batches of a request's size (app.KnowledgeImportChunk): the fold's
// share of lore knowledge import.
func BenchmarkFoldImport(b *testing.B) {
	for _, n := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			evs := importEvents(b, importFile(n), "imp")
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
				if err != nil {
					b.Fatal(err)
				}
				m := knowledge.New()
				c0 := cputime.Used()
				b.StartTimer()
				for i := 0; i < len(evs); i += 200 {
					poison, err := projector.FoldEvents(st, []projector.Model{m}, evs[i:min(i+200, len(evs))])
					if err != nil || len(poison) > 0 {
						b.Fatal(err, poison)
					}
				}
				b.StopTimer()
				cpu += cputime.Used() - c0
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lessons/s")
			// The process's CPU time (fold, commits, garbage collection):
			// what the fold costs, whatever else the machine runs.
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/lesson")
		})
	}
}
