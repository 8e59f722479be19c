package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	loremcp "github.com/loredev/lore/mcp"
)

// TestMCPImportSwarmToolsAndExport: an agent sends swarm-tools rows to the
// import tool (the conversion and validation of every door), imports them
// again (nothing appended), and reads them back in swarm-tools' shapes.
func TestMCPImportSwarmToolsAndExport(t *testing.T) {
	cs := session(t, loremcp.Config{Project: "default"})
	args := map[string]any{
		"project": "mcp",
		"events": []map[string]any{
			{"id": 3, "type": "human_feedback", "project_key": "/src/api", "timestamp": 1759312800000,
				"data": map[string]any{"epic_id": "api-1", "accepted": false, "notes": "too many subtasks"}},
			{"id": 4, "type": "subtask_outcome", "project_key": "/src/api", "timestamp": 1759312800000,
				"data": map[string]any{"bead_id": "api-1.1", "duration_ms": 5}},
		},
		"memories": []map[string]any{
			{"origin": "jsonl", "line": 1, "id": "mem-9", "content": "Cache the Go module download directory in CI",
				"created_at": "2025-09-01T00:00:00Z", "confidence": 0.7},
		},
	}
	type report struct {
		Imported map[string]int `json:"imported"`
		Skipped  map[string]int `json:"skipped"`
		Bad      []struct {
			Row    string `json:"row"`
			Reason string `json:"reason"`
		} `json:"bad"`
	}
	importOnce := func() report {
		t.Helper()
		out, isErr := call(t, cs, "import_swarm_tools", args)
		if isErr {
			t.Fatalf("import_swarm_tools: %s", out)
		}
		var reply struct {
			Result report `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &reply); err != nil {
			t.Fatalf("reply %s: %v", out, err)
		}
		return reply.Result
	}
	r := importOnce()
	if r.Imported["feedback"] != 1 || r.Imported["knowledge"] != 1 || len(r.Bad) != 1 || r.Bad[0].Row != "events#4" || !strings.Contains(r.Bad[0].Reason, `"success"`) {
		t.Fatalf("first import: %+v", r)
	}
	r = importOnce()
	if r.Imported["feedback"] != 0 || r.Skipped["feedback"] != 1 || r.Skipped["knowledge"] != 1 {
		t.Fatalf("second import: %+v", r)
	}
	out, isErr := call(t, cs, "learning_export", map[string]any{"project": "mcp", "kind": "feedback"})
	if isErr || !strings.Contains(out, `"criterion":"human_feedback"`) || !strings.Contains(out, `"type":"harmful"`) ||
		!strings.Contains(out, `"timestamp":"2025-10-01T10:00:00.000Z"`) {
		t.Fatalf("learning_export: error=%v %s", isErr, out)
	}
	out, isErr = call(t, cs, "learning_export", map[string]any{"kind": "everything"})
	if !isErr || !strings.Contains(out, "kind") {
		t.Fatalf("bad kind: error=%v %s", isErr, out)
	}
}
