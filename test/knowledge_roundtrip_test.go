package test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// kcall calls a knowledge endpoint in project and decodes its result
// (a command's result, or a query's answer) into out.
func kcall(t *testing.T, cl *api.Client, project, name string, args map[string]any, out any) {
	t.Helper()
	req, err := api.NewRequest(args)
	if err != nil {
		t.Fatal(err)
	}
	req.Project = project
	raw, err := cl.CallRaw(context.Background(), "knowledge", name, req)
	if err != nil {
		t.Fatalf("knowledge.%s %v: %v", name, args, err)
	}
	var reply struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(raw, &reply) == nil && len(reply.Result) > 0 {
		raw = reply.Result
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("knowledge.%s reply %s: %v", name, raw, err)
		}
	}
}

// jsonlFileFields are the fields of an entry that opencode-swarm's JSONL
// carries (and lore's export writes), by their names in
// knowledge.Entry's JSON; the times at the file's precision (ms).
var jsonlFileFields = []string{"id", "tier", "lesson", "category", "tags", "scope", "confidence", "status", "project_name",
	"confirmed_by", "source_project", "encounter_score", "phases_alive", "max_phases", "hive_eligible", "auto_generated",
	"outcomes", "original_status", "quarantine_reason", "quarantined_at", "reported_by", "created_at"}

// TestKnowledgeExportImportRoundTrip: a project's swarm store and the
// hive, exported (lore knowledge export) and imported into a new node
// (lore knowledge import), hold the same entries with the same value of
// every field the file format carries: nothing the export writes is
// dropped by the import.
func TestKnowledgeExportImportRoundTrip(t *testing.T) {
	src := servedClient(t)
	const p = "web"
	var a, b, c app.KnowledgeAddResult
	kcall(t, src, p, "add", map[string]any{"lesson": "Pin the docker base image digest so CI builds stay reproducible", "category": "tooling",
		"tags": []string{"ci", "docker"}, "confidence": 0.8}, &a)
	kcall(t, src, p, "add", map[string]any{"lesson": "Run the race detector on every pull request before merging", "category": "testing"}, &b)
	kcall(t, src, p, "add", map[string]any{"lesson": "Keep the release checklist in the repository root directory", "category": "process",
		"scope": "stack:go"}, &c)
	kcall(t, src, p, "quarantine", map[string]any{"id": c.ID, "reason": "too vague to act on"}, nil)
	kcall(t, src, p, "outcome", map[string]any{"id": b.ID, "outcome": "helpful"}, nil)
	kcall(t, src, p, "promote", map[string]any{"entry_id": b.ID}, nil)
	req, _ := api.NewRequest(map[string]any{"phase": 1})
	req.Project = p
	if _, err := src.CallRaw(context.Background(), "phase", "complete", req); err != nil {
		t.Fatal(err)
	}

	export := func(cl *api.Client, tier string) []knowledge.FileEntry {
		var out app.KnowledgeExportResult
		kcall(t, cl, p, "export", map[string]any{"tier": tier, "all": true}, &out)
		return out.Entries
	}
	swarm, hive := export(src, knowledge.TierSwarm), export(src, knowledge.TierHive)
	if len(swarm) != 3 || len(hive) != 1 {
		t.Fatalf("exported %d swarm and %d hive entries, want 3 and 1", len(swarm), len(hive))
	}

	dst := servedClient(t)
	for _, f := range []struct {
		format  string
		entries []knowledge.FileEntry
	}{{knowledge.FormatSwarm, swarm}, {knowledge.FormatHive, hive}} {
		var file bytes.Buffer
		if err := knowledge.WriteJSONL(&file, f.entries); err != nil {
			t.Fatal(err)
		}
		recs, bad := knowledge.ReadJSONL(&file, f.format, p)
		if len(bad) > 0 || len(recs) != len(f.entries) {
			t.Fatalf("%s: read %d of %d, bad %+v", f.format, len(recs), len(f.entries), bad)
		}
		subs := make([]events.KnowledgeSubmitted, len(recs))
		for i, r := range recs {
			subs[i] = r.Submission
		}
		res, err := api.ImportKnowledge(context.Background(), dst, app.KnowledgeImportArgs{Format: f.format, Project: p, Submissions: subs}, api.ImportOptions{})
		if err != nil || res.Added != len(recs) {
			t.Fatalf("%s: import %+v: %v", f.format, res, err)
		}
	}

	entries := func(cl *api.Client) map[string]map[string]any {
		var es []map[string]any
		kcall(t, cl, p, "list", map[string]any{"all": true}, &es)
		m := map[string]map[string]any{}
		for _, e := range es {
			m[e["id"].(string)] = e
		}
		return m
	}
	before, after := entries(src), entries(dst)
	if len(before) != 4 || len(after) != len(before) {
		t.Fatalf("listed %d entries before, %d after the round trip", len(before), len(after))
	}
	for id, e := range before {
		got, ok := after[id]
		if !ok {
			t.Errorf("%s (%s) missing after the round trip", id, e["lesson"])
			continue
		}
		for _, f := range jsonlFileFields {
			want, have := atFilePrecision(e[f]), atFilePrecision(got[f])
			if w, h := mustJSON(t, want), mustJSON(t, have); w != h {
				t.Errorf("%s %s: %s before, %s after", id, f, w, h)
			}
		}
	}
}

// atFilePrecision is v with every RFC 3339 time in it cut to the
// milliseconds the file format writes, and an empty list as null (the
// file writes "tags": [] for an entry without tags).
func atFilePrecision(v any) any {
	switch x := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i := range x {
			out[i] = atFilePrecision(x[i])
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k := range x {
			out[k] = atFilePrecision(x[k])
		}
		return out
	}
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
