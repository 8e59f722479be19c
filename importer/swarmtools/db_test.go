package swarmtools_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/importer/swarmtools"
)

func TestReadDBNamesBadRowsAndMissingTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, project_key TEXT NOT NULL,
			timestamp INTEGER NOT NULL, sequence INTEGER GENERATED ALWAYS AS (id) STORED, data TEXT NOT NULL)`,
		`INSERT INTO events (type, project_key, timestamp, data) VALUES ('subtask_outcome', '/p', 1759312800000, '{"bead_id":"b"}')`,
		`INSERT INTO events (type, project_key, timestamp, data) VALUES ('subtask_outcome', '/p', 'yesterday', '{}')`,
		`INSERT INTO events (type, project_key, timestamp, data) VALUES ('human_feedback', '/p', 1759312800000, '{oops')`,
		`INSERT INTO events (type, project_key, timestamp, data) VALUES ('agent_registered', '/p', 1759312800000, '{}')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	r, err := swarmtools.ReadDB(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows.Events) != 1 || r.Rows.Events[0].ID != 1 || r.Rows.Events[0].Timestamp != 1759312800000 {
		t.Errorf("events %+v", r.Rows.Events)
	}
	bad := map[string]string{}
	for _, b := range r.Bad {
		bad[b.Ref] = b.Reason
	}
	if !strings.Contains(bad["events#2"], "timestamp") || !strings.Contains(bad["events#3"], "not JSON") || len(bad) != 2 {
		t.Errorf("bad %v", r.Bad)
	}
	if len(r.Missing) != 1 || r.Missing[0] != "memories" {
		t.Errorf("missing %v", r.Missing)
	}

	notDB := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notDB, []byte("hello, this is not a database at all, just text"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(t.TempDir(), "none.db"), notDB} {
		if _, err := swarmtools.ReadDB(context.Background(), p); !errors.Is(err, swarmtools.ErrNoDatabase) {
			t.Errorf("ReadDB(%s) = %v, want ErrNoDatabase", p, err)
		}
	}
}

func TestReadMemoriesJSONL(t *testing.T) {
	in := `{"id":"mem-1","information":"Lesson one about caching builds","metadata":"{\"k\":1}","tags":"a, b","confidence":0.9,"created_at":"2025-01-01T00:00:00Z"}

not json
{"id":"mem-2","information":"x","tags":7,"created_at":"2025-01-01T00:00:00Z"}
`
	mems, bad, err := swarmtools.ReadMemoriesJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(mems) != 1 || mems[0].Line != 1 || strings.Join(mems[0].Tags, "|") != "a|b" || mems[0].Metadata != `{"k":1}` || *mems[0].Confidence != 0.9 {
		t.Errorf("memories %+v", mems)
	}
	if len(bad) != 2 || bad[0].Ref != "memories.jsonl:3" || bad[1].Ref != "memories.jsonl:4" {
		t.Errorf("bad %+v", bad)
	}
}
