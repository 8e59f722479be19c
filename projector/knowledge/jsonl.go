package knowledge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Import and export of opencode-swarm's JSONL files as written in the wild:
// .swarm/knowledge.jsonl, .swarm/knowledge-rejected.jsonl, the hive's
// shared-learnings.jsonl (and its -rejected file). Ids are UUIDs, unknown
// fields are ignored, fields of the wrong type fall back to defaults, and a
// corrupt line is reported and skipped, never fatal.

// File formats. NB: must not change: recorded in events.
const (
	FormatSwarm         = "knowledge.jsonl"
	FormatHive          = "shared-learnings.jsonl"
	FormatSwarmRejected = "knowledge-rejected.jsonl"
	FormatHiveRejected  = "shared-learnings-rejected.jsonl"
	FormatContextMD     = "context.md"
)

// FormatOf guesses a file's format from its base name ("" when unknown).
func FormatOf(name string) string {
	switch {
	case strings.HasSuffix(name, FormatHiveRejected):
		return FormatHiveRejected
	case strings.HasSuffix(name, FormatSwarmRejected):
		return FormatSwarmRejected
	case strings.HasSuffix(name, FormatHive):
		return FormatHive
	case strings.HasSuffix(name, FormatSwarm):
		return FormatSwarm
	case strings.HasSuffix(name, FormatContextMD):
		return FormatContextMD
	}
	return ""
}

// LineError is a line that could not be read.
type LineError struct {
	Line int    `json:"line"`
	Err  string `json:"error"`
}

// ImportRecord is one readable line: the submission it becomes.
type ImportRecord struct {
	Line       int                       `json:"line"`
	Submission events.KnowledgeSubmitted `json:"submission"`
}

// ReadJSONL reads a file of the given format. project is the project that
// owns swarm entries lacking a project_name.
func ReadJSONL(r io.Reader, format, project string) ([]ImportRecord, []LineError) {
	var recs []ImportRecord
	var bad []LineError
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			bad = append(bad, LineError{n, "not a JSON object: " + firstLine(err.Error())})
			continue
		}
		sub, err := lineSubmission(obj, line, format, project)
		if err != nil {
			bad = append(bad, LineError{n, err.Error()})
			continue
		}
		recs = append(recs, ImportRecord{Line: n, Submission: sub})
	}
	if err := sc.Err(); err != nil {
		bad = append(bad, LineError{n + 1, "read: " + err.Error()})
	}
	return recs, bad
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Digest is the hex SHA-256 of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func str(o map[string]any, k string) string {
	s, _ := o[k].(string)
	return s
}

func num(o map[string]any, k string) (float64, bool) {
	f, ok := o[k].(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func count(o map[string]any, k string) int {
	f, ok := num(o, k)
	if !ok || f < 0 || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}

func timeOf(s string) *time.Time {
	if s == "" {
		return nil
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil && t.Year() >= 1970 && t.Year() <= 9999 {
			t = t.UTC()
			return &t
		}
	}
	return nil
}

func lineSubmission(o map[string]any, raw []byte, format, project string) (events.KnowledgeSubmitted, error) {
	lesson := str(o, "lesson")
	if lesson == "" {
		return events.KnowledgeSubmitted{}, fmt.Errorf("field %q: missing or not a string", "lesson")
	}
	tier := TierSwarm
	if format == FormatHive || format == FormatHiveRejected || str(o, "tier") == TierHive {
		tier = TierHive
	}
	imp := &events.KnowledgeImport{Format: format, Digest: Digest(raw), Status: str(o, "status"),
		CreatedAt: timeOf(str(o, "created_at")), SourceProject: str(o, "source_project"),
		PhasesAlive: count(o, "phases_alive"), MaxPhases: count(o, "max_phases")}
	if id := str(o, "id"); id != "" && len(id) <= 128 && !strings.ContainsAny(id, " \t\r\n") {
		imp.OriginalID = id
	}
	if s, ok := num(o, "encounter_score"); ok {
		imp.EncounterScore = &s
	}
	if list, ok := o["confirmed_by"].([]any); ok {
		for _, c := range list {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			imp.ConfirmedBy = append(imp.ConfirmedBy, events.ImportedConfirmation{
				Project: str(m, "project_name"), Phase: count(m, "phase_number"), At: timeOf(str(m, "confirmed_at"))})
		}
	}
	if ro, ok := o["retrieval_outcomes"].(map[string]any); ok {
		imp.Shown = max(count(ro, "shown_count"), count(ro, "applied_count"))
		imp.Applied = max(count(ro, "applied_explicit_count"), count(ro, "applied_count"))
		imp.Helpful = max(count(ro, "succeeded_after_shown_count"), count(ro, "succeeded_after_count"))
		imp.Harmful = max(count(ro, "failed_after_shown_count"), count(ro, "failed_after_count"))
	}
	if format == FormatSwarmRejected || format == FormatHiveRejected {
		imp.RejectionReason = str(o, "rejection_reason")
		if imp.RejectionReason == "" {
			imp.RejectionReason = "rejected (no reason recorded)"
		}
		imp.RejectionLayer = min(3, count(o, "rejection_layer"))
		imp.CreatedAt = timeOf(str(o, "rejected_at"))
	}
	sub := events.KnowledgeSubmitted{Tier: tier, Lesson: lesson, Category: str(o, "category"),
		Scope: str(o, "scope"), Source: "import:" + format, Import: imp}
	if len(sub.Lesson) > 8192 {
		sub.Lesson = sub.Lesson[:8192]
	}
	if tags, ok := o["tags"].([]any); ok {
		for _, t := range tags {
			if s, ok := t.(string); ok && s != "" && len(s) <= 100 && len(sub.Tags) < 50 {
				sub.Tags = append(sub.Tags, s)
			}
		}
	}
	if c, ok := num(o, "confidence"); ok {
		sub.Confidence = &c
	}
	if b, ok := o["hive_eligible"].(bool); ok {
		sub.HiveEligible = &b
	}
	sub.AutoGenerated, _ = o["auto_generated"].(bool)
	if tier == TierSwarm {
		sub.Project = str(o, "project_name")
		if sub.Project == "" || strings.ContainsAny(sub.Project, " \t\r\n") || len(sub.Project) > 128 {
			sub.Project = project
		}
	} else {
		sub.Project = project
	}
	return sub, nil
}

// ImportEventID is the id of the event importing a line or bullet: derived
// from the format, the project and the content, never from the path, so
// importing the same content twice sends the same event.
func ImportEventID(format, project, digest string) string {
	return "imp-" + DeriveID(format, project, digest)
}

// FileEntry is an entry in opencode-swarm's JSONL shape (export).
type FileEntry struct {
	ID                string             `json:"id"`
	Tier              string             `json:"tier"`
	Lesson            string             `json:"lesson"`
	Category          string             `json:"category"`
	Tags              []string           `json:"tags"`
	Scope             string             `json:"scope"`
	Confidence        float64            `json:"confidence"`
	Status            string             `json:"status"`
	ConfirmedBy       []FileConfirmation `json:"confirmed_by"`
	RetrievalOutcomes FileOutcomes       `json:"retrieval_outcomes"`
	SchemaVersion     int                `json:"schema_version"`
	CreatedAt         string             `json:"created_at"`
	UpdatedAt         string             `json:"updated_at"`
	HiveEligible      bool               `json:"hive_eligible,omitempty"`
	AutoGenerated     bool               `json:"auto_generated,omitempty"`
	PhasesAlive       int                `json:"phases_alive"`
	MaxPhases         int                `json:"max_phases,omitempty"`
	ProjectName       string             `json:"project_name,omitempty"`
	SourceProject     string             `json:"source_project,omitempty"`
	EncounterScore    *float64           `json:"encounter_score,omitempty"`
	QuarantineReason  string             `json:"quarantine_reason,omitempty"`
	OriginalStatus    string             `json:"original_status,omitempty"`
}

// FileConfirmation is a confirmation in the JSONL shape.
type FileConfirmation struct {
	PhaseNumber int    `json:"phase_number,omitempty"`
	ConfirmedAt string `json:"confirmed_at"`
	ProjectName string `json:"project_name,omitempty"`
}

// FileOutcomes are retrieval outcomes in the JSONL shape (v1 and v2 counters).
type FileOutcomes struct {
	AppliedCount             int    `json:"applied_count"`
	SucceededAfterCount      int    `json:"succeeded_after_count"`
	FailedAfterCount         int    `json:"failed_after_count"`
	LastAppliedAt            string `json:"last_applied_at,omitempty"`
	ShownCount               int    `json:"shown_count"`
	SucceededAfterShownCount int    `json:"succeeded_after_shown_count"`
	FailedAfterShownCount    int    `json:"failed_after_shown_count"`
}

// FileRejected is a rejected lesson in the JSONL shape.
type FileRejected struct {
	ID              string `json:"id"`
	Lesson          string `json:"lesson"`
	RejectionReason string `json:"rejection_reason"`
	RejectedAt      string `json:"rejected_at"`
	RejectionLayer  int    `json:"rejection_layer"`
}

func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// ToFile converts an entry to the JSONL shape.
func ToFile(e *Entry, cfg Config) FileEntry {
	f := FileEntry{ID: e.ID, Tier: e.Tier, Lesson: e.Lesson, Category: e.Category,
		Tags: append([]string{}, e.Tags...), Scope: e.Scope, Confidence: e.Confidence, Status: e.Status,
		ConfirmedBy: []FileConfirmation{}, SchemaVersion: cfg.SchemaVersion,
		CreatedAt: isoTime(e.CreatedAt), UpdatedAt: isoTime(e.UpdatedAt), HiveEligible: e.HiveEligible,
		AutoGenerated: e.AutoGenerated, PhasesAlive: e.PhasesAlive, MaxPhases: e.MaxPhases,
		QuarantineReason: e.QuarantineReason, OriginalStatus: e.OriginalStatus,
		RetrievalOutcomes: FileOutcomes{AppliedCount: e.Outcomes.Applied, SucceededAfterCount: e.Outcomes.Helpful,
			FailedAfterCount: e.Outcomes.Harmful, LastAppliedAt: isoTime(e.Outcomes.LastShownAt),
			ShownCount: e.Outcomes.Shown, SucceededAfterShownCount: e.Outcomes.Helpful,
			FailedAfterShownCount: e.Outcomes.Harmful}}
	for _, c := range e.ConfirmedBy {
		f.ConfirmedBy = append(f.ConfirmedBy, FileConfirmation{PhaseNumber: c.Phase, ConfirmedAt: isoTime(c.At), ProjectName: c.Project})
	}
	if e.Tier == TierHive {
		s := e.EncounterScore
		f.SourceProject, f.EncounterScore = e.SourceProject, &s
	} else {
		f.ProjectName = e.Project
	}
	return f
}

// RejectedToFile converts a rejected record to the JSONL shape.
func RejectedToFile(r *Rejected) FileRejected {
	return FileRejected{ID: r.ID, Lesson: r.Lesson, RejectionReason: r.Reason, RejectedAt: isoTime(r.At), RejectionLayer: r.Layer}
}

// WriteJSONL writes one JSON value per line.
func WriteJSONL[T any](w io.Writer, items []T) error {
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	return nil
}
