package knowledge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Import and export of opencode-swarm's JSONL files as written in the wild:
// .swarm/knowledge.jsonl, .swarm/knowledge-rejected.jsonl, the hive's
// shared-learnings.jsonl (and its -rejected file). Ids are UUIDs, unknown
// fields are ignored, absent and null fields take their defaults. A line
// that is not a JSON object, holds a field of the wrong type or a value
// the field cannot take (lineReader), or that the API door would refuse
// (checkSubmission) is reported by its number and skipped, never fatal:
// the other lines are imported.

// File formats. NB: must not change: recorded in events.
const (
	FormatSwarm         = "knowledge.jsonl"
	FormatHive          = "shared-learnings.jsonl"
	FormatSwarmRejected = "knowledge-rejected.jsonl"
	FormatHiveRejected  = "shared-learnings-rejected.jsonl"
	FormatContextMD     = "context.md"
)

// Formats are the formats an imported submission may come from (the
// enum of knowledge.submitted/v1's import.format).
var Formats = []string{FormatSwarm, FormatHive, FormatSwarmRejected, FormatHiveRejected, FormatContextMD}

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
//
// Lines are read in order, then converted and checked (parse,
// lineSubmission, checkSubmission: pure functions of the line) by one
// worker per core, in parts: the records and bad lines come out in line
// order, the same as one at a time.
func ReadJSONL(r io.Reader, format, project string) ([]ImportRecord, []LineError) {
	type line struct {
		n   int
		raw []byte
	}
	var lines []line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		if b := bytes.TrimSpace(sc.Bytes()); len(b) > 0 {
			lines = append(lines, line{n, bytes.Clone(b)})
		}
	}
	readErr := sc.Err()
	type converted struct {
		sub events.KnowledgeSubmitted
		err string
	}
	out := make([]converted, len(lines))
	convert := func(i int) {
		var obj map[string]any
		if err := json.Unmarshal(lines[i].raw, &obj); err != nil {
			out[i].err = "not a JSON object: " + firstLine(err.Error())
			return
		}
		sub, err := lineSubmission(obj, lines[i].raw, format, project)
		if err == nil {
			err = checkSubmission(sub)
		}
		if err != nil {
			out[i].err = err.Error()
			return
		}
		out[i].sub = sub
	}
	const part = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (len(lines)+part-1)/part) {
		wg.Go(func() {
			for {
				from := int(next.Add(part)) - part
				if from >= len(lines) {
					return
				}
				for i := from; i < min(from+part, len(lines)); i++ {
					convert(i)
				}
			}
		})
	}
	wg.Wait()
	var recs []ImportRecord
	var bad []LineError
	for i, c := range out {
		if c.err != "" {
			bad = append(bad, LineError{lines[i].n, c.err})
			continue
		}
		recs = append(recs, ImportRecord{Line: lines[i].n, Submission: c.sub})
	}
	if readErr != nil {
		bad = append(bad, LineError{n + 1, "read: " + readErr.Error()})
	}
	return recs, bad
}

// checkSubmission applies to a line's submission the check the API door
// applies to it (events.RedactData: the schema of knowledge.submitted/v1,
// credentials redacted rather than refused), so a line the server would
// refuse is reported as the file's bad line, by its number, instead of
// failing the request that carries it and the lines after it.
func checkSubmission(sub events.KnowledgeSubmitted) error {
	raw, err := json.Marshal(sub)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = events.RedactData("knowledge.submitted/v1", raw)
	return err
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

// lineReader reads the fields of one line. A field that is absent or
// null takes its default; a field present with a value it cannot hold (the
// wrong JSON type, a date that does not parse, a count that is not a whole
// number ≥ 0) makes the line bad, naming the field: a line is never
// imported with a value other than the one it holds.
type lineReader struct {
	err error // the first field refused
}

func (r *lineReader) refuse(field, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("field %q: "+format, append([]any{field}, args...)...)
	}
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// value is o[k] and whether it is there and not null.
func (r *lineReader) value(o map[string]any, k string) (any, bool) {
	v, ok := o[k]
	return v, ok && v != nil
}

func (r *lineReader) str(o map[string]any, field, k string) string {
	v, ok := r.value(o, k)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.refuse(field, "got %s, want string", jsonType(v))
	}
	return s
}

func (r *lineReader) num(o map[string]any, field, k string) (float64, bool) {
	v, ok := r.value(o, k)
	if !ok {
		return 0, false
	}
	f, ok := v.(float64)
	if !ok {
		r.refuse(field, "got %s, want number", jsonType(v))
	}
	return f, ok
}

func (r *lineReader) boolean(o map[string]any, field, k string) (bool, bool) {
	v, ok := r.value(o, k)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		r.refuse(field, "got %s, want boolean", jsonType(v))
	}
	return b, ok
}

// count is a whole number from 0 to MaxInt32 (0 when absent).
func (r *lineReader) count(o map[string]any, field, k string) int {
	f, ok := r.num(o, field, k)
	if !ok {
		return 0
	}
	if f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		r.refuse(field, "got %v, want a whole number from 0", f)
		return 0
	}
	return int(f)
}

// date is an ISO 8601 date-time (or a date) of the years 1970-9999 (nil
// when absent or empty).
func (r *lineReader) date(o map[string]any, field, k string) *time.Time {
	s := r.str(o, field, k)
	if s == "" {
		return nil
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			if t.Year() < 1970 || t.Year() > 9999 {
				break
			}
			t = t.UTC()
			return &t
		}
	}
	r.refuse(field, "%q is not an ISO 8601 date-time of the years 1970-9999", s)
	return nil
}

func (r *lineReader) object(o map[string]any, field, k string) map[string]any {
	v, ok := r.value(o, k)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		r.refuse(field, "got %s, want object", jsonType(v))
	}
	return m
}

func (r *lineReader) array(o map[string]any, field, k string) []any {
	v, ok := r.value(o, k)
	if !ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.refuse(field, "got %s, want array", jsonType(v))
	}
	return a
}

// lineSubmission is the submission a line of format becomes, or the
// error naming the first field it cannot take as it is. project owns a
// swarm line whose project_name is absent or not a project name (the
// reference writes its plan's title there, which may hold spaces).
func lineSubmission(o map[string]any, raw []byte, format, project string) (events.KnowledgeSubmitted, error) {
	var r lineReader
	lesson := r.str(o, "lesson", "lesson")
	if r.err == nil && lesson == "" {
		r.refuse("lesson", "is required")
	}
	tier := TierSwarm
	switch t := r.str(o, "tier", "tier"); {
	case t != "" && t != TierSwarm && t != TierHive:
		r.refuse("tier", "%q, want %q or %q", t, TierSwarm, TierHive)
	case format == FormatHive || format == FormatHiveRejected || t == TierHive:
		tier = TierHive
	}
	imp := &events.KnowledgeImport{Format: format, Digest: Digest(raw), Status: r.str(o, "status", "status"),
		CreatedAt: r.date(o, "created_at", "created_at"), SourceProject: r.str(o, "source_project", "source_project"),
		PhasesAlive: r.count(o, "phases_alive", "phases_alive"), MaxPhases: r.count(o, "max_phases", "max_phases")}
	if id := r.str(o, "id", "id"); id != "" {
		if len(id) > 128 || strings.ContainsAny(id, " \t\r\n") {
			r.refuse("id", "%q must be 1-128 characters without spaces", id)
		}
		imp.OriginalID = id
	}
	if s, ok := r.num(o, "encounter_score", "encounter_score"); ok {
		imp.EncounterScore = &s
	}
	for i, c := range r.array(o, "confirmed_by", "confirmed_by") {
		field := fmt.Sprintf("confirmed_by[%d]", i)
		m, ok := c.(map[string]any)
		if !ok {
			r.refuse(field, "got %s, want object", jsonType(c))
			break
		}
		imp.ConfirmedBy = append(imp.ConfirmedBy, events.ImportedConfirmation{
			Project: r.str(m, field+".project_name", "project_name"), Phase: r.count(m, field+".phase_number", "phase_number"),
			At: r.date(m, field+".confirmed_at", "confirmed_at")})
	}
	if ro := r.object(o, "retrieval_outcomes", "retrieval_outcomes"); ro != nil {
		c := func(k string) int { return r.count(ro, "retrieval_outcomes."+k, k) }
		imp.Shown = max(c("shown_count"), c("applied_count"))
		imp.Applied = max(c("applied_explicit_count"), c("applied_count"))
		imp.Helpful = max(c("succeeded_after_shown_count"), c("succeeded_after_count"))
		imp.Harmful = max(c("failed_after_shown_count"), c("failed_after_count"))
	}
	if format == FormatSwarmRejected || format == FormatHiveRejected {
		imp.RejectionReason = r.str(o, "rejection_reason", "rejection_reason")
		if imp.RejectionReason == "" {
			imp.RejectionReason = "rejected (no reason recorded)"
		}
		// Layers past the reference validator's three (a later
		// version's actionability checks) are kept as its third.
		imp.RejectionLayer = min(3, r.count(o, "rejection_layer", "rejection_layer"))
		imp.CreatedAt = r.date(o, "rejected_at", "rejected_at")
	}
	imp.QuarantineReason = r.str(o, "quarantine_reason", "quarantine_reason")
	imp.OriginalStatus = r.str(o, "original_status", "original_status")
	imp.QuarantinedAt = r.date(o, "quarantined_at", "quarantined_at")
	imp.ReportedBy = r.str(o, "reported_by", "reported_by")
	sub := events.KnowledgeSubmitted{Tier: tier, Lesson: lesson, Category: r.str(o, "category", "category"),
		Scope: r.str(o, "scope", "scope"), Source: "import:" + format, Import: imp}
	for i, t := range r.array(o, "tags", "tags") {
		s, ok := t.(string)
		if !ok {
			r.refuse(fmt.Sprintf("tags[%d]", i), "got %s, want string", jsonType(t))
			break
		}
		sub.Tags = append(sub.Tags, s)
	}
	if c, ok := r.num(o, "confidence", "confidence"); ok {
		sub.Confidence = &c
	}
	if b, ok := r.boolean(o, "hive_eligible", "hive_eligible"); ok {
		sub.HiveEligible = &b
	}
	sub.AutoGenerated, _ = r.boolean(o, "auto_generated", "auto_generated")
	sub.Project = project
	if name := r.str(o, "project_name", "project_name"); tier == TierSwarm && name != "" && !strings.ContainsAny(name, " \t\r\n") && len(name) <= 128 {
		sub.Project = name
	}
	if r.err != nil {
		return events.KnowledgeSubmitted{}, r.err
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
	QuarantinedAt     string             `json:"quarantined_at,omitempty"`
	ReportedBy        string             `json:"reported_by,omitempty"`
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
		QuarantinedAt: isoTime(e.QuarantinedAt), ReportedBy: e.ReportedBy,
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
