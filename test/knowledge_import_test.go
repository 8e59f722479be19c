package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/test/natstest"
)

// trickyJSONL is a knowledge.jsonl of n lines mixing what an import's
// report distinguishes: new lessons, near-duplicates of earlier ones
// (dropped), lessons the validator rejects, lines repeated in the same
// request and in a later one, an original id reused with other content,
// and old lessons (promoted to the hive by age, over the caps).
func trickyJSONL(n int) []byte {
	rng := rand.New(rand.NewPCG(11, uint64(n)))
	var lines [][]byte
	for i := range n {
		id := fmt.Sprintf("t-%05d", i)
		lesson := fmt.Sprintf("lesson %d: %s", i, benchkit.Lesson(rng))
		switch {
		case i%17 == 5 && i > 20: // a near-duplicate of an earlier lesson
			lesson = fmt.Sprintf("lesson %d: %s", i-15, "use the same words as before to make a near duplicate here")
		case i%23 == 7: // rejected: too short
			lesson = "too short"
		case i%29 == 3: // rejected: a dangerous command
			lesson = fmt.Sprintf("lesson %d: clean the disk with rm -rf / before every run", i)
		case i%31 == 11 && i > 40: // an original id used before, other content
			id = fmt.Sprintf("t-%05d", i-37)
		}
		if i%17 == 4 && i+1 < n { // the template the near-duplicates follow
			lesson = fmt.Sprintf("lesson %d: %s", i-14, "use the same words as before to make a near duplicate here")
		}
		created := "2026-11-01T00:00:00Z"
		if i%3 == 0 {
			created = "2025-01-02T03:04:05Z" // old: promoted to the hive by age
		}
		line, _ := json.Marshal(map[string]any{"id": id, "lesson": lesson, "category": "debugging",
			"tags": []string{"import"}, "confidence": 0.7, "status": "candidate", "created_at": created})
		lines = append(lines, line)
		if i%41 == 9 { // the same line again, in the same request
			lines = append(lines, line)
		}
		if i%53 == 13 && len(lines) > 300 { // a line of an earlier request again
			lines = append(lines, lines[len(lines)-250])
		}
	}
	return append(bytes.Join(lines, []byte("\n")), '\n')
}

// servedClient starts a node with its projector and API for the test and
// returns a client of it.
func servedClient(t *testing.T) *api.Client {
	t.Helper()
	nd := startNode(t, node.Config{})
	runNode(t, nd)
	svc, err := nd.Serve(api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, _ := natstest.Connect(t, nd.ClientURL())
	return api.NewClient(nc)
}

// importFile imports file into a fresh node: with window < 0 each
// request waits for its reply (the reference), else api.ImportKnowledge
// with that window.
func importFile(t *testing.T, file []byte, window int) app.KnowledgeImportResult {
	cl := servedClient(t)
	subs := swarmSubmissions(t, file)
	args := app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Project: "imp", Submissions: subs}
	if window >= 0 {
		res, err := api.ImportKnowledge(context.Background(), cl, args, api.ImportOptions{Window: window})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := app.KnowledgeImportResult{Items: []app.KnowledgeImportItem{}, Promoted: []knowledge.Promotion{}, Archived: []string{}}
	for i := 0; i < len(subs); i += app.KnowledgeImportChunk {
		part := args
		part.Submissions = subs[i:min(i+app.KnowledgeImportChunk, len(subs))]
		req, err := api.NewRequest(part)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			Projected bool                      `json:"projected"`
			Result    app.KnowledgeImportResult `json:"result"`
		}
		if err := cl.Call(context.Background(), "knowledge", "import", req, &reply); err != nil || !reply.Projected {
			t.Fatalf("import: projected %v, %v", reply.Projected, err)
		}
		res.Add(reply.Result, i)
	}
	return res
}

// TestKnowledgeImportPipelinedReport: the report of an import whose
// requests do not wait for their fold (api.ImportKnowledge with a window)
// and of the CLI's (window 0) is the one requests that each waited give,
// item by item, with the promotions and cap archives in the same order.
func TestKnowledgeImportPipelinedReport(t *testing.T) {
	t.Parallel()
	file := trickyJSONL(1100)
	want := importFile(t, file, -1)
	for _, window := range []int{0, 1, 8} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			checkSameReport(t, want, importFile(t, file, window))
		})
	}
}

func checkSameReport(t *testing.T, want, got app.KnowledgeImportResult) {
	t.Helper()
	if want.Pending != 0 || want.Added == 0 || want.Merged == 0 || want.Rejected == 0 || want.Existing == 0 ||
		len(want.Promoted) == 0 || len(want.Archived) == 0 {
		t.Fatalf("the file does not exercise the report: %+v", struct {
			Added, Merged, Rejected, Existing, Pending, Promoted, Archived int
		}{want.Added, want.Merged, want.Rejected, want.Existing, want.Pending, len(want.Promoted), len(want.Archived)})
	}
	t.Logf("added %d merged %d rejected %d existing %d promoted %d archived %d", want.Added, want.Merged, want.Rejected, want.Existing, len(want.Promoted), len(want.Archived))
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		for i := range min(len(want.Items), len(got.Items)) {
			if a, b := fmt.Sprint(want.Items[i]), fmt.Sprint(got.Items[i]); a != b {
				t.Errorf("item %d: waiting for each request %s, pipelined %s", i, a, b)
				break
			}
		}
		t.Fatalf("reports differ:\nwaiting for each request: added %d merged %d rejected %d existing %d pending %d promoted %d archived %d\npipelined: added %d merged %d rejected %d existing %d pending %d promoted %d archived %d",
			want.Added, want.Merged, want.Rejected, want.Existing, want.Pending, len(want.Promoted), len(want.Archived),
			got.Added, got.Merged, got.Rejected, got.Existing, got.Pending, len(got.Promoted), len(got.Archived))
	}
}

// TestKnowledgeDecisions: knowledge.decisions answers, for each event id
// asked, what the fold decided (pending for one it never folded), and
// refuses a request without ids or with too many with code 400 naming
// the field.
func TestKnowledgeDecisions(t *testing.T) {
	t.Parallel()
	cl := servedClient(t)
	ctx := context.Background()
	req, _ := api.NewRequest(events.KnowledgeSubmitted{Lesson: "use context deadlines when a worker calls the queue", Category: "debugging"})
	var added struct {
		Result app.KnowledgeAddResult `json:"result"`
	}
	if err := cl.Call(ctx, "knowledge", "add", req, &added); err != nil || added.Result.Outcome != knowledge.OutcomeAdded {
		t.Fatalf("add: %+v, %v", added.Result, err)
	}
	req, _ = api.NewRequest(app.KnowledgeDecisionsArgs{EventIDs: []string{added.Result.EventID, "never-appended"}})
	var got app.KnowledgeDecisionsResult
	if err := cl.Call(ctx, "knowledge", "decisions", req, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Decisions) != 2 || got.Decisions[0].Outcome != knowledge.OutcomeAdded || got.Decisions[0].ID != added.Result.ID ||
		got.Decisions[1].Outcome != app.OutcomePending || got.Decisions[1].EventID != "never-appended" {
		t.Fatalf("decisions = %+v", got.Decisions)
	}
	for _, bad := range []map[string]any{{}, {"event_ids": []string{}}, {"event_ids": make([]string, app.MaxDecisionsPerRequest+1)},
		{"event_ids": []string{""}}, {"event_ids": []string{"x"}, "ids": 1}} {
		req, _ := api.NewRequest(bad)
		err := cl.Call(ctx, "knowledge", "decisions", req, nil)
		if !errors.Is(err, app.ErrBadRequest) || !strings.Contains(err.Error(), "event_ids") && !strings.Contains(err.Error(), "\"ids\"") {
			t.Errorf("decisions %v: err %v, want a bad request naming the field", bad, err)
		}
	}
}

// TestKnowledgeImportRepeatedLines: a line repeating an earlier one (the
// same content: the same event) is reported existing whether the earlier
// line came in the same request or an earlier one, leads where the
// earlier one was merged, and no event is counted twice: the lines
// reported added are as many as the distinct events added.
func TestKnowledgeImportRepeatedLines(t *testing.T) {
	t.Parallel()
	file := trickyJSONL(1100)
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	for _, window := range []int{-1, 8} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			res := importFile(t, file, window)
			if len(res.Items) != len(lines) {
				t.Fatalf("%d items for %d lines", len(res.Items), len(lines))
			}
			first := map[string]int{}
			addedEvents := map[string]bool{}
			var sameRequest, merged int
			for i, it := range res.Items {
				if it.Outcome == knowledge.OutcomeAdded {
					addedEvents[it.EventID] = true
				}
				j, seen := first[string(lines[i])]
				if !seen {
					first[string(lines[i])] = i
					continue
				}
				if it.Outcome != knowledge.OutcomeExisting {
					t.Errorf("line %d repeats line %d: outcome %s, want existing", i, j, it.Outcome)
				}
				if e := res.Items[j]; e.Outcome == app.OutcomeMerged || e.Outcome == knowledge.OutcomeReinforced {
					merged++
					if it.MergedInto != e.MergedInto {
						t.Errorf("line %d repeats line %d merged into %s: merged_into %q", i, j, e.MergedInto, it.MergedInto)
					}
				}
				if i/app.KnowledgeImportChunk == j/app.KnowledgeImportChunk {
					sameRequest++
				}
			}
			if sameRequest == 0 || merged == 0 {
				t.Fatalf("the file repeats %d lines in their request, %d of merged lines: exercise both", sameRequest, merged)
			}
			if res.Added != len(addedEvents) {
				t.Fatalf("%d lines reported added for %d events added", res.Added, len(addedEvents))
			}
		})
	}
}

// TestKnowledgeImportWaitsPastTheServersWait: a request whose fold the
// server stopped waiting for (the projector not running: the reply says
// projected false, its lessons pending) is waited for by the client as
// long as the fold progresses, and the report is the one requests that
// each waited give.
func TestKnowledgeImportWaitsPastTheServersWait(t *testing.T) {
	t.Parallel()
	file := trickyJSONL(700)
	want := importFile(t, file, -1)

	nd := startNode(t, node.Config{})
	var once sync.Once
	behind := make(chan bool, 1)
	svc, err := nd.Serve(api.Options{FoldWait: 100 * time.Millisecond, Observe: func(subject string, _ time.Duration, _ error) {
		if !strings.HasSuffix(subject, ".knowledge.import") {
			return
		}
		once.Do(func() {
			// The first request replied without its fold: start the
			// projector only now.
			_, last := lastSeq(t, nd.JS, events.LogStream)
			behind <- nd.Runtime.Seq() < last
			runNode(t, nd)
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, _ := natstest.Connect(t, nd.ClientURL())
	subs := swarmSubmissions(t, file)
	got, err := api.ImportKnowledge(context.Background(), api.NewClient(nc),
		app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Project: "imp", Submissions: subs}, api.ImportOptions{Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-behind:
		if !b {
			t.Fatal("the first request was folded before the projector started")
		}
	default:
		t.Fatal("no knowledge.import request was observed")
	}
	checkSameReport(t, want, got)
}

// swarmSubmissions reads file, a swarm knowledge JSONL export, as the
// submissions of project "imp", failing on any bad line.
func swarmSubmissions(tb testing.TB, file []byte) []events.KnowledgeSubmitted {
	tb.Helper()
	recs, bad := knowledge.ReadJSONL(bytes.NewReader(file), knowledge.FormatSwarm, "imp")
	if len(bad) > 0 {
		tb.Fatal(bad)
	}
	subs := make([]events.KnowledgeSubmitted, len(recs))
	for i, r := range recs {
		subs[i] = r.Submission
	}
	return subs
}

// TestKnowledgeImportIDsPrefixingOthers: a line whose original id is a
// prefix of a stored entry's id (or of a rejected line's) is a lesson of
// its own: it is added, never reported as imported before; a line whose
// id is stored exactly is. At every window, in requests of their own.
func TestKnowledgeImportIDsPrefixingOthers(t *testing.T) {
	t.Parallel()
	line := func(id, lesson string) []byte {
		b, _ := json.Marshal(map[string]any{"id": id, "lesson": lesson, "category": "testing",
			"confidence": 0.7, "status": "candidate", "created_at": "2026-11-01T00:00:00Z"})
		return append(b, '\n')
	}
	first := bytes.Join([][]byte{
		line("k-10", "Run the race detector on every package before a release"),
		line("uuid-4f1c2a7e-9b3d", "Pin the toolchain version in CI so that builds repeat exactly"),
		line("short-rejected-1", "too short"),
	}, nil)
	second := bytes.Join([][]byte{
		line("k-1", "Keep fixtures next to the tests that read them in testdata"),
		line("uuid-4f1c", "Prefer table-driven tests for parsers with many edge cases"),
		line("short-rejected", "Log the seed of every randomized test so that failures replay"),
		line("k-10", "Run the race detector on every package before a release"),
	}, nil)
	for _, window := range []int{0, api.ImportWindow} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			cl := servedClient(t)
			imp := func(file []byte) app.KnowledgeImportResult {
				res, err := api.ImportKnowledge(context.Background(), cl, app.KnowledgeImportArgs{Format: knowledge.FormatSwarm,
					Project: "imp", Submissions: swarmSubmissions(t, file)}, api.ImportOptions{Window: window})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := imp(first); res.Added != 2 || res.Rejected != 1 {
				t.Fatalf("first file: added %d, rejected %d, want 2 and 1: %+v", res.Added, res.Rejected, res.Items)
			}
			res := imp(second)
			want := []string{knowledge.OutcomeAdded, knowledge.OutcomeAdded, knowledge.OutcomeAdded, knowledge.OutcomeExisting}
			for i, it := range res.Items {
				if it.Outcome != want[i] {
					t.Errorf("second file, line %d (%s): %s, want %s", i+1, it.ID, it.Outcome, want[i])
				}
			}
			lessons := map[string]string{"k-1": "Keep fixtures next to", "uuid-4f1c": "Prefer table-driven tests",
				"short-rejected": "Log the seed of every"}
			for id, lesson := range lessons {
				req, _ := api.NewRequest(map[string]any{"id": id})
				req.Project = "imp"
				raw, err := cl.CallRaw(context.Background(), "knowledge", "show", req)
				if err != nil || !bytes.Contains(raw, []byte(`"id":"`+id+`"`)) || !bytes.Contains(raw, []byte(lesson)) {
					t.Errorf("knowledge.show %s: %s, %v", id, raw, err)
				}
			}
		})
	}
}
