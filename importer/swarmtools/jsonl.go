package swarmtools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// memoryLine is a line of .hive/memories.jsonl (swarm-mail memory/sync.ts):
// {id, information, metadata (a JSON string), tags (comma-separated),
// confidence, created_at (ISO 8601)}.
type memoryLine struct {
	ID          string          `json:"id"`
	Information string          `json:"information"`
	Metadata    json.RawMessage `json:"metadata"`
	Tags        json.RawMessage `json:"tags"`
	Confidence  *float64        `json:"confidence"`
	CreatedAt   string          `json:"created_at"`
}

// ReadMemoriesJSONL reads memories.jsonl. Blank lines are skipped; a line
// that is not a JSON object of that shape is returned in bad, named by its
// line number. Unknown fields are ignored.
func ReadMemoriesJSONL(r io.Reader) (mems []MemoryRow, bad []Note, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ref := fmt.Sprintf("memories.jsonl:%d", n)
		var l memoryLine
		if err := json.Unmarshal(line, &l); err != nil {
			bad = append(bad, Note{Ref: ref, Reason: fmt.Sprintf("not a memory: %v", err)})
			continue
		}
		m := MemoryRow{Origin: OriginJSONL, Line: n, ID: l.ID, Content: l.Information, Confidence: l.Confidence, CreatedAt: l.CreatedAt}
		if len(l.Metadata) > 0 && string(l.Metadata) != "null" {
			var s string
			if json.Unmarshal(l.Metadata, &s) == nil {
				m.Metadata = s
			} else {
				m.Metadata = string(l.Metadata) // an object written as is
			}
		}
		if len(l.Tags) > 0 && string(l.Tags) != "null" {
			var s string
			var list []string
			switch {
			case json.Unmarshal(l.Tags, &s) == nil:
				m.Tags = SplitTags(s)
			case json.Unmarshal(l.Tags, &list) == nil:
				m.Tags = list
			default:
				bad = append(bad, Note{Ref: ref, Reason: "field \"tags\": must be a comma-separated string"})
				continue
			}
		}
		mems = append(mems, m)
	}
	if err := sc.Err(); err != nil {
		return mems, bad, fmt.Errorf("read memories.jsonl: %w", err)
	}
	return mems, bad, nil
}
