package swarmtools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/importer/swarmtools"
)

func row(id int64, typ, data string) swarmtools.EventRow {
	return swarmtools.EventRow{ID: id, Type: typ, ProjectKey: "/src/web", Timestamp: 1759312800000, Data: json.RawMessage(data)}
}

func TestConvertEventRows(t *testing.T) {
	tests := []struct {
		name    string
		row     swarmtools.EventRow
		wantBad string // substring of the reason; "" when converted
		check   func(t *testing.T, it swarmtools.Item)
	}{
		{"success outcome keeps its fields and time", row(1, "subtask_outcome", `{"epic_id":"e","bead_id":"e.1","actual_files":["a.go"],"duration_ms":1500.6,"error_count":1,"retry_count":2,"success":true}`), "",
			func(t *testing.T, it swarmtools.Item) {
				var o events.OutcomeRecorded
				if err := json.Unmarshal(it.Data, &o); err != nil {
					t.Fatal(err)
				}
				if o.BeadID != "e.1" || o.DurationMs != 1501 || *o.ErrorCount != 1 || o.RetryCount != 2 || !o.Success ||
					o.FilesTouched[0] != "a.go" || o.Criteria[0] != swarmtools.OutcomeCriterion {
					t.Errorf("outcome %+v", o)
				}
				if !it.Time.Equal(time.Date(2025, 10, 1, 10, 0, 0, 0, time.UTC)) || it.Project != "web" {
					t.Errorf("time %v project %q", it.Time, it.Project)
				}
			}},
		{"missing counts default to 0 as zod does", row(2, "subtask_outcome", `{"bead_id":"b","duration_ms":1,"success":false}`), "",
			func(t *testing.T, it swarmtools.Item) {
				var o events.OutcomeRecorded
				_ = json.Unmarshal(it.Data, &o)
				if *o.ErrorCount != 0 || o.RetryCount != 0 {
					t.Errorf("outcome %+v", o)
				}
			}},
		{"missing success is a bad row", row(3, "subtask_outcome", `{"bead_id":"b","duration_ms":1}`), `"success"`, nil},
		{"missing duration is a bad row", row(4, "subtask_outcome", `{"bead_id":"b","success":true}`), `"duration_ms"`, nil},
		{"fractional retries are a bad row", row(5, "subtask_outcome", `{"bead_id":"b","duration_ms":1,"success":true,"retry_count":1.5}`), `"retry_count"`, nil},
		{"data that is not an object is a bad row", row(6, "human_feedback", `[1]`), "JSON object", nil},
		{"feedback without accepted is a bad row", row(7, "human_feedback", `{"epic_id":"e"}`), `"accepted"`, nil},
		{"timestamp 0 is a bad row", swarmtools.EventRow{ID: 8, Type: "human_feedback", Timestamp: 0, Data: json.RawMessage(`{"accepted":true}`)}, "timestamp", nil},
		{"rejected decomposition is harmful feedback", row(9, "human_feedback", `{"epic_id":"e","accepted":false,"notes":"too coarse"}`), "",
			func(t *testing.T, it swarmtools.Item) {
				var f events.FeedbackRecorded
				_ = json.Unmarshal(it.Data, &f)
				if f.Type != "harmful" || f.Criterion != swarmtools.FeedbackCriterion || f.BeadID != "e" || f.Context != "too coarse" || f.RawValue != 1 {
					t.Errorf("feedback %+v", f)
				}
			}},
		{"accepted after changes is neutral", row(10, "human_feedback", `{"epic_id":"e","accepted":true,"modified":true}`), "",
			func(t *testing.T, it swarmtools.Item) {
				var f events.FeedbackRecorded
				_ = json.Unmarshal(it.Data, &f)
				if f.Type != "neutral" {
					t.Errorf("feedback %+v", f)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := swarmtools.Convert(swarmtools.Rows{Events: []swarmtools.EventRow{tc.row}}, swarmtools.Options{})
			if tc.wantBad != "" {
				if len(c.Bad) != 1 || c.Bad[0].Ref != tc.row.Ref() || !strings.Contains(c.Bad[0].Reason, tc.wantBad) || len(c.Items) != 0 {
					t.Fatalf("bad = %+v, items %d; want %s named with %q", c.Bad, len(c.Items), tc.row.Ref(), tc.wantBad)
				}
				return
			}
			if len(c.Items) != 1 || len(c.Bad) != 0 {
				t.Fatalf("items %d bad %+v", len(c.Items), c.Bad)
			}
			again := swarmtools.Convert(swarmtools.Rows{Events: []swarmtools.EventRow{tc.row}}, swarmtools.Options{})
			if again.Items[0].ID != c.Items[0].ID || !strings.HasPrefix(c.Items[0].ID, swarmtools.IDPrefix) {
				t.Errorf("ids %q, %q: want the same id from the same row", c.Items[0].ID, again.Items[0].ID)
			}
			tc.check(t, c.Items[0])
		})
	}
}

func TestConvertJoinsDecompositionAndDeletions(t *testing.T) {
	rows := swarmtools.Rows{
		Events: []swarmtools.EventRow{
			row(1, "decomposition_generated", `{"epic_id":"e","task":"split by component","strategy":"feature-based","epic_title":"T","subtasks":[]}`),
			row(2, "subtask_outcome", `{"epic_id":"e","bead_id":"e.1","duration_ms":1,"success":true}`),
			row(3, "decomposition_generated", `{"epic_id":"lonely","task":"x","strategy":"risk-based","epic_title":"L","subtasks":[]}`),
			row(4, "memory_deleted", `{"memory_id":"mem-1"}`),
			row(5, "memory_found", `{"query":"q","result_count":0}`),
		},
		Memories: []swarmtools.MemoryRow{
			{Origin: swarmtools.OriginDB, ID: "mem-1", Content: "a deleted lesson about the build cache", CreatedAt: "2025-01-01 00:00:00"},
			{Origin: swarmtools.OriginDB, ID: "mem-2", Content: "Run the linter before pushing any commit", CreatedAt: "2025-01-02 03:04:05",
				Metadata: `{"confidence":0.4,"tags":["lint"]}`, Tags: []string{"ci"}, Category: "Authentication"},
			{Origin: swarmtools.OriginJSONL, Line: 1, ID: "mem-2", Content: "Run the linter before pushing any commit", CreatedAt: "2025-01-02T03:04:05Z"},
			{Origin: swarmtools.OriginDB, ID: "mem-3", Content: "old", CreatedAt: "2025-01-02 03:04:05", SupersededBy: "mem-2"},
			{Origin: swarmtools.OriginJSONL, Line: 4, ID: "mem-4", Content: "some lesson text here", CreatedAt: "yesterday"},
		},
	}
	c := swarmtools.Convert(rows, swarmtools.Options{Project: "p"})
	if len(c.Items) != 2 {
		t.Fatalf("items %+v", c.Items)
	}
	var o events.OutcomeRecorded
	_ = json.Unmarshal(c.Items[0].Data, &o)
	if o.Strategy != "feature-based" || !strings.Contains(o.Decomposition, "split by component") || c.Items[0].Joins[0] != "events#1" || c.Items[0].Project != "p" {
		t.Errorf("outcome %+v joins %v", o, c.Items[0].Joins)
	}
	var k events.KnowledgeSubmitted
	_ = json.Unmarshal(c.Items[1].Data, &k)
	if k.Category != "other" || *k.Confidence != 0.4 || strings.Join(k.Tags, ",") != "ci,lint,authentication" || k.Source != swarmtools.Source ||
		!c.Items[1].Time.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("memory %+v at %v", k, c.Items[1].Time)
	}
	notes := map[string]string{}
	for _, n := range c.NotImported {
		notes[n.Ref] = n.Reason
	}
	for ref, want := range map[string]string{"memories#mem-1": "deleted", "memories.jsonl:1": "read already", "memories#mem-3": "superseded", "events#5": "search"} {
		if !strings.Contains(notes[ref], want) {
			t.Errorf("not imported %s: %q, want %q", ref, notes[ref], want)
		}
	}
	if len(c.Bad) != 1 || c.Bad[0].Ref != "memories.jsonl:4" || !strings.Contains(c.Bad[0].Reason, "created_at") {
		t.Errorf("bad %+v", c.Bad)
	}
	if len(c.Decompositions) != 2 {
		t.Errorf("decompositions %v", c.Decompositions)
	}
}

func TestChunksKeepJoinedRowsTogether(t *testing.T) {
	var rows swarmtools.Rows
	for i := int64(1); i <= 9; i++ {
		epic := []string{"a", "b", "c"}[i%3]
		rows.Events = append(rows.Events, row(i, "subtask_outcome", `{"epic_id":"`+epic+`","bead_id":"x","duration_ms":1,"success":true}`))
	}
	rows.Events = append(rows.Events, row(10, "memory_deleted", `{"memory_id":"m"}`))
	rows.Memories = []swarmtools.MemoryRow{{ID: "m"}, {ID: "n"}}
	chunks := swarmtools.Chunks(rows, 4)
	where := map[string]int{}
	total := 0
	for i, ch := range chunks {
		total += ch.Len()
		for _, e := range ch.Events {
			var d struct {
				EpicID   string `json:"epic_id"`
				MemoryID string `json:"memory_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			k := d.EpicID + d.MemoryID
			if j, ok := where[k]; ok && j != i {
				t.Errorf("rows of %s in chunks %d and %d", k, j, i)
			}
			where[k] = i
		}
		for _, m := range ch.Memories {
			if j, ok := where[m.ID]; ok && j != i {
				t.Errorf("memory %s in chunk %d, its event in %d", m.ID, i, j)
			}
		}
	}
	if total != rows.Len() {
		t.Errorf("chunks hold %d rows, want %d", total, rows.Len())
	}
}

func TestProjectOf(t *testing.T) {
	for in, want := range map[string]string{"/home/a/web app": "web-app", "/home/a/api/": "api", `C:\src\svc`: "svc", "": "", "/": ""} {
		if got := swarmtools.ProjectOf(in, ""); got != want {
			t.Errorf("ProjectOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := swarmtools.ProjectOf("/x/y", "over"); got != "over" {
		t.Errorf("override: %q", got)
	}
}

func TestChunksStayUnderTheByteBound(t *testing.T) {
	big := strings.Repeat("x", swarmtools.ChunkBytes/3)
	var rows swarmtools.Rows
	for _, id := range []string{"a", "b", "c", "d"} {
		rows.Memories = append(rows.Memories, swarmtools.MemoryRow{ID: id, Content: big})
	}
	chunks := swarmtools.Chunks(rows, swarmtools.ChunkRows)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks of 4 memories of %d bytes, want each chunk under %d bytes", len(chunks), len(big), swarmtools.ChunkBytes)
	}
	for i, ch := range chunks {
		b, _ := json.Marshal(ch)
		if len(ch.Memories) > 1 && len(b) > swarmtools.ChunkBytes {
			t.Errorf("chunk %d: %d bytes", i, len(b))
		}
	}
}

// TestConvertMemoryTagsAsTheyAre: a memory's metadata tags that are
// neither a list of strings nor a comma-separated string make its row
// bad, naming the field; tags beyond a lesson's bounds are passed on as
// they are (the door's schema refuses the row, naming them), never dropped.
func TestConvertMemoryTagsAsTheyAre(t *testing.T) {
	long := strings.Repeat("t", 101)
	rows := swarmtools.Rows{Memories: []swarmtools.MemoryRow{
		{Origin: swarmtools.OriginDB, ID: "mem-1", Content: "Run the linter before pushing any commit", CreatedAt: "2025-01-02 03:04:05", Metadata: `{"tags":7}`},
		{Origin: swarmtools.OriginDB, ID: "mem-2", Content: "Pin the toolchain so builds repeat", CreatedAt: "2025-01-02 03:04:05", Metadata: `{"tags":{"a":1}}`},
		{Origin: swarmtools.OriginDB, ID: "mem-3", Content: "Cache the module downloads in CI", CreatedAt: "2025-01-02 03:04:05", Metadata: `{"tags":null}`, Tags: []string{long}},
	}}
	c := swarmtools.Convert(rows, swarmtools.Options{Project: "p"})
	if len(c.Bad) != 2 || c.Bad[0].Ref != "memories#mem-1" || c.Bad[1].Ref != "memories#mem-2" ||
		!strings.Contains(c.Bad[0].Reason, `"metadata.tags"`) || !strings.Contains(c.Bad[1].Reason, `"metadata.tags"`) {
		t.Fatalf("bad %+v", c.Bad)
	}
	var k events.KnowledgeSubmitted
	if len(c.Items) != 1 || json.Unmarshal(c.Items[0].Data, &k) != nil || len(k.Tags) != 1 || k.Tags[0] != long {
		t.Fatalf("items %+v", c.Items)
	}
	if err := events.ValidateData("knowledge.submitted/v1", c.Items[0].Data); err == nil || !strings.Contains(err.Error(), "data.tags") {
		t.Fatalf("the door's check of a 101-byte tag: %v", err)
	}
}
