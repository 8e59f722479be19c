// Package swarmtools reads what swarm-tools keeps on disk — its
// libSQL/SQLite database (~/.config/swarm-tools/swarm.db: the events table
// and the memories table) and the git-synced .hive/memories.jsonl — and
// converts the rows into lore events.
//
// Reading (ReadDB, ReadMemoriesJSONL) happens where the files are, on the
// client; the rows travel as JSON to lore.api.import.swarm_tools, where
// Convert turns them into events: every door converts and validates the
// same way. Convert is a pure function of the rows.
package swarmtools

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Source event types of swarm-tools' events table that the importer reads.
// NB: must not change: they are swarm-tools' names.
const (
	TypeSubtaskOutcome = "subtask_outcome"
	TypeHumanFeedback  = "human_feedback"
	TypeDecomposition  = "decomposition_generated"
	TypeMemoryStored   = "memory_stored"
	TypeMemoryFound    = "memory_found"
	TypeMemoryUpdated  = "memory_updated"
	TypeMemoryValid    = "memory_validated"
	TypeMemoryDeleted  = "memory_deleted"
)

// EventTypes are the event types ReadDB selects, in a fixed order.
var EventTypes = []string{TypeDecomposition, TypeSubtaskOutcome, TypeHumanFeedback,
	TypeMemoryStored, TypeMemoryFound, TypeMemoryUpdated, TypeMemoryValid, TypeMemoryDeleted}

// EventRow is one row of swarm-tools' events table
// (id INTEGER PK, type, project_key, timestamp Unix ms, data JSON text:
// the event less type, project_key and timestamp).
type EventRow struct {
	ID         int64           `json:"id"`
	Type       string          `json:"type"`
	ProjectKey string          `json:"project_key"`
	Timestamp  int64           `json:"timestamp"`
	Data       json.RawMessage `json:"data"`
}

// Ref names the row in reports: "events#<id>".
func (r EventRow) Ref() string { return fmt.Sprintf("events#%d", r.ID) }

// Memory origins.
const (
	OriginDB    = "db"    // the memories table
	OriginJSONL = "jsonl" // .hive/memories.jsonl
)

// MemoryRow is one memory, from the memories table or from a line of
// memories.jsonl ({id, information, metadata, tags, confidence, created_at}).
type MemoryRow struct {
	// Origin is OriginDB or OriginJSONL; Line is the JSONL line (1-based).
	Origin string `json:"origin"`
	Line   int    `json:"line,omitempty"`
	ID     string `json:"id"`
	// Content is the memory's text ("information" in the JSONL).
	Content string `json:"content"`
	// Metadata is the metadata JSON object as stored (a string in the
	// JSONL, text in the table); tags and confidence may be inside.
	Metadata   string   `json:"metadata,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	// DecayFactor is the table's decay_factor column, where swarm-tools
	// stores a memory's confidence.
	DecayFactor  *float64 `json:"decay_factor,omitempty"`
	Category     string   `json:"category,omitempty"`
	Status       string   `json:"status,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
	Collection   string   `json:"collection,omitempty"`
	CreatedAt    string   `json:"created_at,omitempty"`
}

// Ref names the row in reports: "memories#<id>" or "memories.jsonl:<line>".
func (m MemoryRow) Ref() string {
	if m.Origin == OriginJSONL {
		return fmt.Sprintf("memories.jsonl:%d", m.Line)
	}
	return "memories#" + m.ID
}

// Rows are what a client read and sends.
type Rows struct {
	Events   []EventRow  `json:"events,omitempty"`
	Memories []MemoryRow `json:"memories,omitempty"`
}

// Len is the number of rows.
func (r Rows) Len() int { return len(r.Events) + len(r.Memories) }

// ChunkRows bounds the rows of one request (the CLI's size: a request stays
// well under NATS's payload limit for ordinary rows).
const ChunkRows = 200

// ChunkBytes bounds the JSON size of one request's rows (NATS's default
// payload limit is 1 MiB).
const ChunkBytes = 512 << 10

// size is about the JSON size of a row.
func (r EventRow) size() int { return 96 + len(r.Type) + len(r.ProjectKey) + len(r.Data) }
func (m MemoryRow) size() int {
	return 160 + 2*len(m.Content) + len(m.Metadata) + 8*len(m.Tags) + len(m.ID)
}

// Chunks splits rows into requests of about max rows (and ChunkBytes)
// each, keeping
// together the rows Convert joins: an epic's decomposition, outcomes and
// feedback (by project key and epic id), and a memory with the memory_*
// events naming it (by memory id). A group larger than max is one chunk.
func Chunks(rows Rows, max int) []Rows {
	type group struct {
		first int // order of first appearance
		rows  Rows
		bytes int
	}
	groups := map[string]*group{}
	var order []string
	add := func(k string) *group {
		g, ok := groups[k]
		if !ok {
			g = &group{first: len(order)}
			groups[k] = g
			order = append(order, k)
		}
		return g
	}
	for _, e := range rows.Events {
		g := add(eventGroup(e))
		g.rows.Events = append(g.rows.Events, e)
		g.bytes += e.size()
	}
	for _, m := range rows.Memories {
		g := add("mem\x00" + m.ID)
		g.rows.Memories = append(g.rows.Memories, m)
		g.bytes += m.size()
	}
	sort.SliceStable(order, func(i, j int) bool { return groups[order[i]].first < groups[order[j]].first })
	var out []Rows
	var cur Rows
	curBytes := 0
	for _, k := range order {
		g := groups[k].rows
		if cur.Len() > 0 && (cur.Len()+g.Len() > max || curBytes+groups[k].bytes > ChunkBytes) {
			out = append(out, cur)
			cur, curBytes = Rows{}, 0
		}
		curBytes += groups[k].bytes
		cur.Events = append(cur.Events, g.Events...)
		cur.Memories = append(cur.Memories, g.Memories...)
	}
	if cur.Len() > 0 {
		out = append(out, cur)
	}
	return out
}

// eventGroup is the join key of an event row (see Chunks).
func eventGroup(e EventRow) string {
	var ref struct {
		EpicID   string `json:"epic_id"`
		MemoryID string `json:"memory_id"`
	}
	_ = json.Unmarshal(e.Data, &ref) // a bad row is reported by Convert
	switch {
	case ref.MemoryID != "":
		return "mem\x00" + ref.MemoryID
	case ref.EpicID != "":
		return "epic\x00" + e.ProjectKey + "\x00" + ref.EpicID
	}
	return fmt.Sprintf("row\x00%d", e.ID)
}
