package swarmtools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// Lore kinds an import produces, as reports count them.
const (
	KindOutcome       = "outcome"       // outcome.recorded/v1 from subtask_outcome
	KindFeedback      = "feedback"      // feedback.recorded/v1 from human_feedback
	KindDecomposition = "decomposition" // decomposition_generated, joined into its epic's outcomes
	KindKnowledge     = "knowledge"     // knowledge.submitted/v1 from a memory
)

// FeedbackCriterion is the criterion human_feedback rows are feedback on.
// NB: must not change: imported feedback is stored under it.
const FeedbackCriterion = "human_feedback"

// OutcomeCriterion is the criterion an imported outcome scores, as
// swarm-tools' swarm_complete does. NB: must not change.
const OutcomeCriterion = "task_completion"

// Source is the source of every imported event.
const Source = "swarm-tools"

// IDPrefix starts the id of every event an import appends (see
// projector/imported: events with this prefix are indexed by id, so a
// re-import finds them). NB: must not change.
const IDPrefix = "imp-swt-"

// Item is one lore event converted from a row.
type Item struct {
	// Ref is the source row ("events#12", "memories#mem-…", "memories.jsonl:3").
	Ref  string
	Kind string
	// Type is the lore event type; Data its data as the row gave it (the
	// caller validates it against the type's schema).
	Type string
	Data json.RawMessage
	// Project is the lore project ("" for the request's).
	Project string
	// Time is when it happened in swarm-tools: the event's timestamp, the
	// memory's created_at.
	Time time.Time
	// ID is the event id, derived from the source row: the same row always
	// gives the same id.
	ID string
	// Joins are the refs of decomposition rows joined into this outcome.
	Joins []string
}

// Note is a row with what became of it.
type Note struct {
	Ref    string `json:"row"`
	Reason string `json:"reason"`
}

// Conversion is what Convert made of some rows.
type Conversion struct {
	Items []Item
	// Bad are rows that cannot be converted, with the reason.
	Bad []Note
	// NotImported are rows read that by design give no event (a memory
	// deleted in swarm-tools, a memory_found search record...), with the reason.
	NotImported []Note
	// Read counts the rows read by source kind (event type, "memories").
	Read map[string]int
	// Decompositions are the refs of the decomposition rows read.
	Decompositions []string
}

// Options shape a conversion.
type Options struct {
	// Project, when set, is the lore project of every event; otherwise an
	// event row's project is the base name of its project_key, and a memory
	// goes to MemoryProject.
	Project string
	// MemoryProject is the lore project of memories when Project is empty.
	MemoryProject string
}

// EventID derives an event id from the parts naming a source row.
func EventID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return IDPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// ProjectOf maps a swarm-tools project_key (usually an absolute path) to a
// lore project: the override when set, else the key's base name with
// whitespace replaced by "-" (at most 128 bytes); "" when nothing is left.
func ProjectOf(projectKey, override string) string {
	if override != "" {
		return override
	}
	k := strings.TrimRight(strings.ReplaceAll(projectKey, "\\", "/"), "/")
	if k == "" {
		return ""
	}
	b := path.Base(k)
	if b == "." || b == "/" {
		return ""
	}
	b = strings.Join(strings.Fields(b), "-")
	if len(b) > 128 {
		b = b[:128]
	}
	return b
}

type decomposition struct {
	ref      string
	strategy string
	text     string
}

type rawDecomposition struct {
	EpicID    string `json:"epic_id"`
	Task      string `json:"task"`
	Context   string `json:"context"`
	Strategy  string `json:"strategy"`
	EpicTitle string `json:"epic_title"`
}

type rawOutcome struct {
	EpicID      string   `json:"epic_id"`
	BeadID      string   `json:"bead_id"`
	ActualFiles []string `json:"actual_files"`
	DurationMs  *float64 `json:"duration_ms"`
	ErrorCount  *float64 `json:"error_count"`
	RetryCount  *float64 `json:"retry_count"`
	Success     *bool    `json:"success"`
}

type rawFeedback struct {
	EpicID   string `json:"epic_id"`
	Accepted *bool  `json:"accepted"`
	Modified bool   `json:"modified"`
	Notes    string `json:"notes"`
}

type rawMemoryEvent struct {
	MemoryID  string `json:"memory_id"`
	Operation string `json:"operation"`
	Reason    string `json:"reason"`
}

// decodeObject decodes a row's data, which must be a JSON object.
func decodeObject(data json.RawMessage, v any) error {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return fmt.Errorf("field \"data\": must be a JSON object")
	}
	if err := json.Unmarshal(d, v); err != nil {
		return fmt.Errorf("field \"data\": %v", err)
	}
	return nil
}

// count is a non-negative whole count from a JSON number (zod's default 0
// when absent). A fraction or a negative value is refused, naming field.
func count(field string, v *float64) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 || *v != math.Trunc(*v) || *v > math.MaxInt32 {
		return 0, fmt.Errorf("field %q: %v: must be a whole number >= 0", field, *v)
	}
	return int(*v), nil
}

// Convert turns rows into lore events. Rows are independent except for
// the joins Chunks keeps together: an outcome takes its epic's strategy
// and decomposition text (task and context) from the epic's
// decomposition_generated row, so the strategies it names are scored; a
// memory deleted in swarm-tools (memory_deleted, memory_updated DELETE) is
// not imported. Items are in row order: events, then memories.
func Convert(rows Rows, o Options) Conversion {
	c := Conversion{Read: map[string]int{}}
	bad := func(ref, format string, a ...any) {
		c.Bad = append(c.Bad, Note{Ref: ref, Reason: fmt.Sprintf(format, a...)})
	}
	skip := func(ref, format string, a ...any) {
		c.NotImported = append(c.NotImported, Note{Ref: ref, Reason: fmt.Sprintf(format, a...)})
	}
	epicKey := func(e EventRow, epic string) string { return e.ProjectKey + "\x00" + epic }

	// Pass 1: the rows others join with.
	decs := map[string]decomposition{}
	deleted := map[string]string{} // memory id -> ref of the row deleting it
	for _, e := range rows.Events {
		switch e.Type {
		case TypeDecomposition:
			var d rawDecomposition
			if decodeObject(e.Data, &d) != nil || d.EpicID == "" {
				continue // reported in pass 2
			}
			text := strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{d.EpicTitle, d.Task, d.Context},
				func(s string) bool { return strings.TrimSpace(s) == "" }), "\n"))
			decs[epicKey(e, d.EpicID)] = decomposition{ref: e.Ref(), strategy: d.Strategy, text: text}
		case TypeMemoryDeleted, TypeMemoryUpdated:
			var m rawMemoryEvent
			if decodeObject(e.Data, &m) == nil && m.MemoryID != "" && (e.Type == TypeMemoryDeleted || m.Operation == "DELETE") {
				deleted[m.MemoryID] = e.Ref()
			}
		}
	}

	for _, e := range rows.Events {
		c.Read[e.Type]++
		ref := e.Ref()
		if e.Timestamp <= 0 {
			bad(ref, "field \"timestamp\": %d: must be Unix milliseconds > 0", e.Timestamp)
			continue
		}
		at := time.UnixMilli(e.Timestamp).UTC()
		project := ProjectOf(e.ProjectKey, o.Project)
		id := EventID("events", e.ProjectKey, strconv.FormatInt(e.ID, 10), e.Type, strconv.FormatInt(e.Timestamp, 10))
		switch e.Type {
		case TypeDecomposition:
			var d rawDecomposition
			if err := decodeObject(e.Data, &d); err != nil {
				bad(ref, "%v", err)
				continue
			}
			if d.EpicID == "" {
				bad(ref, "field \"epic_id\": is required")
				continue
			}
			c.Decompositions = append(c.Decompositions, ref)
		case TypeSubtaskOutcome:
			var r rawOutcome
			if err := decodeObject(e.Data, &r); err != nil {
				bad(ref, "%v", err)
				continue
			}
			if r.Success == nil {
				bad(ref, "field \"success\": is required")
				continue
			}
			if r.DurationMs == nil {
				bad(ref, "field \"duration_ms\": is required")
				continue
			}
			errs, err := count("error_count", r.ErrorCount)
			if err != nil {
				bad(ref, "%v", err)
				continue
			}
			retries, err := count("retry_count", r.RetryCount)
			if err != nil {
				bad(ref, "%v", err)
				continue
			}
			// swarm-tools measures in (possibly fractional) ms; lore in whole
			// ms. A negative duration stays negative: the schema refuses it.
			ev := events.OutcomeRecorded{BeadID: r.BeadID, DurationMs: int64(math.Round(*r.DurationMs)), ErrorCount: &errs,
				RetryCount: retries, Success: *r.Success, FilesTouched: r.ActualFiles, Criteria: []string{OutcomeCriterion}}
			it := Item{Ref: ref, Kind: KindOutcome, Type: "outcome.recorded/v1", Project: project, Time: at, ID: id}
			if d, ok := decs[epicKey(e, r.EpicID)]; ok && r.EpicID != "" {
				ev.Strategy, ev.Decomposition = d.strategy, d.text
				it.Joins = []string{d.ref}
			}
			if it.Data, err = json.Marshal(&ev); err != nil {
				bad(ref, "encode: %v", err)
				continue
			}
			c.Items = append(c.Items, it)
		case TypeHumanFeedback:
			var r rawFeedback
			if err := decodeObject(e.Data, &r); err != nil {
				bad(ref, "%v", err)
				continue
			}
			if r.Accepted == nil {
				bad(ref, "field \"accepted\": is required")
				continue
			}
			// Accepted as generated: helpful; accepted after changes:
			// neutral; rejected: harmful.
			fb := events.FeedbackRecorded{Criterion: FeedbackCriterion, Type: "harmful", RawValue: 1, BeadID: r.EpicID, Context: r.Notes}
			switch {
			case *r.Accepted && !r.Modified:
				fb.Type = "helpful"
			case *r.Accepted:
				fb.Type = "neutral"
			}
			if d, ok := decs[epicKey(e, r.EpicID)]; ok && d.strategy != "" {
				fb.Context = strings.TrimSpace(fb.Context + " [strategy: " + d.strategy + "]")
			}
			data, err := json.Marshal(&fb)
			if err != nil {
				bad(ref, "encode: %v", err)
				continue
			}
			c.Items = append(c.Items, Item{Ref: ref, Kind: KindFeedback, Type: "feedback.recorded/v1", Data: data, Project: project, Time: at, ID: id})
		case TypeMemoryFound:
			skip(ref, "a memory search record: lore keeps no search log")
		case TypeMemoryStored, TypeMemoryUpdated, TypeMemoryValid, TypeMemoryDeleted:
			var m rawMemoryEvent
			if err := decodeObject(e.Data, &m); err != nil {
				bad(ref, "%v", err)
				continue
			}
			switch e.Type {
			case TypeMemoryDeleted:
				skip(ref, "memory %s was deleted in swarm-tools: it is not imported", m.MemoryID)
			case TypeMemoryUpdated:
				skip(ref, "a change (%s) of memory %s: the memory is imported as it is now", strings.ToLower(orDash(m.Operation)), m.MemoryID)
			default:
				skip(ref, "a record of memory %s: the memory itself is imported from the memories table or memories.jsonl", m.MemoryID)
			}
		default:
			skip(ref, "event type %q carries nothing lore learns from", e.Type)
		}
	}

	seen := map[string]string{} // event id -> ref of the first memory row giving it
	for _, m := range rows.Memories {
		c.Read["memories"]++
		ref := m.Ref()
		if strings.TrimSpace(m.ID) == "" {
			bad(ref, "field \"id\": is required")
			continue
		}
		if d, ok := deleted[m.ID]; ok {
			skip(ref, "memory %s was deleted in swarm-tools (%s)", m.ID, d)
			continue
		}
		if m.SupersededBy != "" {
			skip(ref, "memory %s is superseded by %s", m.ID, m.SupersededBy)
			continue
		}
		if m.Status != "" && m.Status != "active" {
			skip(ref, "memory %s has status %q in swarm-tools (only active memories are imported)", m.ID, m.Status)
			continue
		}
		if strings.TrimSpace(m.Content) == "" {
			bad(ref, "field \"content\": is required")
			continue
		}
		at, err := ParseTime(m.CreatedAt)
		if err != nil {
			bad(ref, "field \"created_at\": %v", err)
			continue
		}
		project := o.Project
		if project == "" {
			project = o.MemoryProject
		}
		id := EventID("memory", project, m.ID)
		if first, ok := seen[id]; ok {
			skip(ref, "memory %s was read already (%s)", m.ID, first)
			continue
		}
		seen[id] = ref
		sub, err := memorySubmission(m)
		if err != nil {
			bad(ref, "%v", err)
			continue
		}
		data, err := json.Marshal(sub)
		if err != nil {
			bad(ref, "encode: %v", err)
			continue
		}
		c.Items = append(c.Items, Item{Ref: ref, Kind: KindKnowledge, Type: "knowledge.submitted/v1", Data: data,
			Project: project, Time: at, ID: id})
	}
	return c
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// memorySubmission is the lesson a memory becomes: its content, its
// category when it is one of lore's (else "other", the swarm-tools
// category kept as a tag), its tags (column, metadata and JSONL alike)
// and its confidence (the JSONL's or metadata's, else the decay_factor
// column where swarm-tools stores it). The lesson goes through the
// validator like any other: a poisoned memory is rejected with the reason.
func memorySubmission(m MemoryRow) (*events.KnowledgeSubmitted, error) {
	var meta struct {
		Tags       json.RawMessage `json:"tags"`
		Confidence *float64        `json:"confidence"`
		Category   string          `json:"category"`
	}
	if s := strings.TrimSpace(m.Metadata); s != "" && s[0] == '{' {
		if err := json.Unmarshal([]byte(s), &meta); err != nil {
			return nil, fmt.Errorf("field \"metadata\": %v", err)
		}
	}
	tags := append([]string{}, m.Tags...)
	if len(meta.Tags) > 0 {
		var list []string
		var csv string
		switch {
		case string(meta.Tags) == "null":
		case json.Unmarshal(meta.Tags, &list) == nil:
			tags = append(tags, list...)
		case json.Unmarshal(meta.Tags, &csv) == nil:
			tags = append(tags, SplitTags(csv)...)
		default:
			return nil, fmt.Errorf("field \"metadata.tags\": %s: want an array of strings or a comma-separated string", meta.Tags)
		}
	}
	cat := strings.ToLower(strings.TrimSpace(m.Category))
	if cat == "" {
		cat = strings.ToLower(strings.TrimSpace(meta.Category))
	}
	category := "other"
	if knowledge.ValidCategory(cat) {
		category = cat
	} else if cat != "" {
		tags = append(tags, cat)
	}
	conf := m.Confidence
	if conf == nil {
		conf = meta.Confidence
	}
	if conf == nil {
		conf = m.DecayFactor
	}
	sub := &events.KnowledgeSubmitted{Lesson: m.Content, Category: category, Tags: cleanTags(tags), Confidence: conf, Source: Source}
	return sub, nil
}

// SplitTags splits swarm-tools' comma-separated tags.
func SplitTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// cleanTags trims, drops empty and repeated tags. Their bounds are the
// schema's, applied by the door: a memory with more tags, or longer ones,
// than a lesson holds is a bad row, never imported without them.
func cleanTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// ParseTime reads a swarm-tools time: RFC 3339 (the JSONL's ISO 8601) or
// SQLite's datetime('now') text "2006-01-02 15:04:05" (UTC), with or
// without fractional seconds.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("is required")
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: not a time (RFC 3339 or SQLite datetime)", s)
}
