package crossloop

import (
	"fmt"
	"sort"
	"time"

	json "github.com/goccy/go-json"
)

// Registry file shapes (the seed's .aiwg/ralph/shared layout):
//
//	one file:   the shared-patterns root document {version, pattern_registry
//	            {error_patterns, success_patterns, anti_patterns,
//	            code_templates}, effectiveness_metrics, archive}
//	a folder:   patterns/{error-patterns,success-patterns,anti-patterns,
//	            code-templates}.json, each {version, patterns: [...]};
//	            archive/YYYY-MM-patterns.json, each {version, month,
//	            pattern_registry}; effectiveness-metrics.json
//
// Every exported pattern document satisfies its $defs schema and carries
// lore's full pattern under "lore", so an export imports back unchanged;
// documents without it (written by other tools) are converted field by
// field.

// RegistryVersion is the version written in exported documents.
const RegistryVersion = "1.0.0"

// RegistryDoc is the root document.
type RegistryDoc struct {
	Version  string       `json:"version"`
	Registry Lists        `json:"pattern_registry"`
	Metrics  *Metrics     `json:"effectiveness_metrics,omitempty"`
	Archive  []ArchiveDoc `json:"archive,omitempty"`
}

// Lists holds pattern documents by type.
type Lists struct {
	Error    []json.RawMessage `json:"error_patterns,omitempty"`
	Success  []json.RawMessage `json:"success_patterns,omitempty"`
	Anti     []json.RawMessage `json:"anti_patterns,omitempty"`
	Template []json.RawMessage `json:"code_templates,omitempty"`
}

// ArchiveDoc is one month of the archive.
type ArchiveDoc struct {
	Version  string `json:"version"`
	Month    string `json:"month"`
	Registry Lists  `json:"pattern_registry"`
}

// FileDoc is one per-type patterns file.
type FileDoc struct {
	Version  string            `json:"version"`
	Patterns []json.RawMessage `json:"patterns"`
}

// File names of the folder layout. NB: the shared layout; must not change.
var TypeFile = map[string]string{TypeError: "error-patterns.json", TypeSuccess: "success-patterns.json",
	TypeAnti: "anti-patterns.json", TypeTemplate: "code-templates.json"}

// MetricsFile is the metrics file of the folder layout.
const MetricsFile = "effectiveness-metrics.json"

func (l *Lists) add(typ string, raw json.RawMessage) {
	switch typ {
	case TypeError:
		l.Error = append(l.Error, raw)
	case TypeSuccess:
		l.Success = append(l.Success, raw)
	case TypeAnti:
		l.Anti = append(l.Anti, raw)
	case TypeTemplate:
		l.Template = append(l.Template, raw)
	}
}

// ByType returns the list of a type.
func (l *Lists) ByType(typ string) []json.RawMessage {
	switch typ {
	case TypeError:
		return l.Error
	case TypeSuccess:
		return l.Success
	case TypeAnti:
		return l.Anti
	}
	return l.Template
}

// BuildExport builds the root document: active patterns in the registry
// lists, archived ones under their month, patterns sorted by id.
func BuildExport(ps []*Pattern, m *Metrics) (*RegistryDoc, error) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	doc := &RegistryDoc{Version: RegistryVersion, Metrics: m}
	months := map[string]*ArchiveDoc{}
	for _, p := range ps {
		raw, err := PatternDoc(p)
		if err != nil {
			return nil, err
		}
		if !p.Archived {
			doc.Registry.add(p.Type, raw)
			continue
		}
		a := months[p.ArchiveMonth]
		if a == nil {
			a = &ArchiveDoc{Version: RegistryVersion, Month: p.ArchiveMonth}
			months[p.ArchiveMonth] = a
		}
		a.Registry.add(p.Type, raw)
	}
	keys := make([]string, 0, len(months))
	for k := range months {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		doc.Archive = append(doc.Archive, *months[k])
	}
	return doc, nil
}

// MergeExports joins the parts of an export (Export's documents, in
// order): each list of a part follows the same list of the parts before,
// archive months are merged by month in month order, and the metrics are
// the first part's. Parts that follow each other in id order make the
// document BuildExport makes of all their patterns at once.
func MergeExports(parts []*RegistryDoc) *RegistryDoc {
	doc := &RegistryDoc{Version: RegistryVersion}
	months := map[string]*ArchiveDoc{}
	var order []string
	for i, p := range parts {
		if i == 0 {
			doc.Version, doc.Metrics = p.Version, p.Metrics
		}
		doc.Registry.join(&p.Registry)
		for _, a := range p.Archive {
			m := months[a.Month]
			if m == nil {
				m = &ArchiveDoc{Version: a.Version, Month: a.Month}
				months[a.Month] = m
				order = append(order, a.Month)
			}
			m.Registry.join(&a.Registry)
		}
	}
	sort.Strings(order)
	for _, k := range order {
		doc.Archive = append(doc.Archive, *months[k])
	}
	return doc
}

// ExportIDs returns the ids of the patterns of an export's document (its
// lists and archive months), in id order: a part of an export ends at the
// last of them, and the next part begins after it.
func ExportIDs(doc *RegistryDoc) ([]string, error) {
	var ids []string
	add := func(l *Lists) error {
		for _, list := range [][]json.RawMessage{l.Error, l.Success, l.Anti, l.Template} {
			for _, raw := range list {
				var d struct {
					Lore struct {
						ID string `json:"pattern_id"`
					} `json:"lore"`
				}
				if err := json.Unmarshal(raw, &d); err != nil || d.Lore.ID == "" {
					return fmt.Errorf("an exported pattern without lore.pattern_id (%v): %.80s", err, raw)
				}
				ids = append(ids, d.Lore.ID)
			}
		}
		return nil
	}
	if err := add(&doc.Registry); err != nil {
		return nil, err
	}
	for i := range doc.Archive {
		if err := add(&doc.Archive[i].Registry); err != nil {
			return nil, err
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// join appends o's lists to l's, type by type.
func (l *Lists) join(o *Lists) {
	l.Error = append(l.Error, o.Error...)
	l.Success = append(l.Success, o.Success...)
	l.Anti = append(l.Anti, o.Anti...)
	l.Template = append(l.Template, o.Template...)
}

var errorTypes = map[string]bool{"TypeError": true, "ReferenceError": true, "AssertionError": true,
	"SyntaxError": true, "RuntimeError": true, "TimeoutError": true, "ValidationError": true, "Other": true}

var taskCategories = map[string]bool{"implementation": true, "debugging": true, "refactoring": true, "testing": true,
	"documentation": true, "architecture": true, "migration": true, "optimization": true}

var languages = map[string]bool{"typescript": true, "javascript": true, "python": true, "go": true,
	"rust": true, "java": true, "other": true}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// PatternDoc is a pattern in the shared registry's shape for its type, with
// lore's full pattern under "lore".
func PatternDoc(p *Pattern) (json.RawMessage, error) {
	d := map[string]any{"lore": p, "tags": nonNil(p.Tags)}
	switch p.Type {
	case TypeError:
		et := p.ErrorType
		if !errorTypes[et] {
			et = "Other"
		}
		fix := map[string]any{"description": p.FixDescription, "fix_category": p.FixCategory}
		if p.CodeTemplate != "" {
			fix["code_template"], fix["code_template_language"] = p.CodeTemplate, p.Language
		}
		if p.DiffPattern != "" {
			fix["diff_pattern"] = p.DiffPattern
		}
		d["pattern_id"] = p.ID
		d["type"] = "error_pattern"
		d["error_signature"] = map[string]any{"error_type": et, "error_pattern": p.ErrorPattern,
			"error_location_hints": nonNil(p.LocationHints)}
		d["fix_approach"] = fix
		d["source_loops"] = loopsDoc(p, false)
		d["success_rate"], d["usage_count"] = p.SuccessRate, p.UsageCount
		d["successful_applications"], d["failed_applications"] = p.Successful, p.Failed
		d["first_discovered"], d["last_used"] = ts(p.FirstDiscovered), ts(p.LastUsed)
		d["effectiveness_trend"] = trendDoc(p)
		if len(p.RelatedPatterns) > 0 {
			d["related_patterns"] = p.RelatedPatterns
		}
	case TypeSuccess:
		cat := p.Category
		if !taskCategories[cat] {
			cat = "implementation"
		}
		d["pattern_id"], d["task_category"] = p.ID, cat
		if p.TaskPattern != "" {
			d["task_description_pattern"] = p.TaskPattern
		}
		d["approach"] = map[string]any{"description": p.Approach, "steps": nonNil(p.Steps), "tools_used": nonNil(p.ToolsUsed),
			"typical_iterations": map[string]any{"average": p.AverageIterations(), "minimum": p.IterationsMin, "maximum": p.IterationsMax}}
		var sl []map[string]any
		for _, s := range p.SourceLoops {
			out := s.Outcome
			if out == "" {
				out = map[bool]string{true: OutcomeSuccess, false: OutcomeFailure}[s.Success]
			}
			sl = append(sl, map[string]any{"loop_id": s.LoopID, "outcome": out, "iterations_required": s.Iterations, "timestamp": ts(s.Timestamp)})
		}
		d["source_loops"] = nonNilMaps(sl)
		d["success_rate"], d["usage_count"], d["average_iterations"] = p.SuccessRate, p.UsageCount, p.AverageIterations()
		for k, v := range map[string][]string{"preconditions": p.Preconditions, "benefits": p.Benefits, "limitations": p.Limitations} {
			if len(v) > 0 {
				d[k] = v
			}
		}
	case TypeAnti:
		d["pattern_id"], d["approach_description"], d["failure_mode"] = p.ID, p.Approach, p.FailureMode
		d["failure_symptoms"], d["why_it_fails"] = nonNil(p.Symptoms), p.WhyItFails
		if p.BetterAlternative != "" || p.BetterPatternID != "" {
			d["better_alternative"] = map[string]any{"description": p.BetterAlternative, "success_pattern_id": p.BetterPatternID}
		}
		var sl []map[string]any
		for _, s := range p.SourceLoops {
			sl = append(sl, map[string]any{"loop_id": s.LoopID, "failure_iteration": s.FailureIteration, "timestamp": ts(s.Timestamp)})
		}
		d["source_loops"] = nonNilMaps(sl)
		d["failure_rate"], d["occurrence_count"] = p.FailureRate(), p.OccurrenceCount
	case TypeTemplate:
		lang := p.Language
		if !languages[lang] {
			lang = "other"
		}
		ids := []string{}
		for _, s := range p.SourceLoops {
			ids = append(ids, s.LoopID)
		}
		d["template_id"], d["language"], d["template_code"] = p.ID, lang, p.CodeTemplate
		d["description"], d["use_case"], d["placeholders"] = p.Title, p.UseCase, p.Placeholders
		d["source_loops"], d["usage_count"], d["success_rate"] = ids, p.UsageCount, p.SuccessRate
	default:
		return nil, fmt.Errorf("pattern %s: unknown type %q", p.ID, p.Type)
	}
	return json.Marshal(d)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMaps(s []map[string]any) []map[string]any {
	if s == nil {
		return []map[string]any{}
	}
	return s
}

func loopsDoc(p *Pattern, _ bool) []map[string]any {
	out := []map[string]any{}
	for _, s := range p.SourceLoops {
		out = append(out, map[string]any{"loop_id": s.LoopID, "timestamp": ts(s.Timestamp), "contributed_by": s.ContributedBy})
	}
	return out
}

func trendDoc(p *Pattern) []map[string]any {
	out := []map[string]any{}
	for _, t := range p.Trend {
		out = append(out, map[string]any{"timestamp": ts(t.Timestamp), "success_rate_snapshot": t.SuccessRate, "sample_size": t.SampleSize})
	}
	return out
}

// defOf is the $defs name of a type.
var defOf = map[string]string{TypeError: "ErrorPattern", TypeSuccess: "SuccessPattern", TypeAnti: "AntiPattern", TypeTemplate: "CodeTemplate"}

// ParsePatternDoc reads one pattern document of a type: it must satisfy its
// schema definition; lore's own "lore" object, when present, is taken as is.
func ParsePatternDoc(typ string, raw json.RawMessage, archiveMonth string) (*Pattern, error) {
	return parsePatternDoc(typ, raw, archiveMonth, false)
}

// parsePatternDoc is ParsePatternDoc; with checked the document is known
// to satisfy its schema definition already (a list of a root document the
// root schema accepted: its items are checked against the same $defs).
func parsePatternDoc(typ string, raw json.RawMessage, archiveMonth string, checked bool) (*Pattern, error) {
	if !checked {
		errs, err := ValidateDoc(defOf[typ], raw)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s pattern: %s", typ, errs[0])
		}
	}
	// One decode reads both forms; a document it cannot read (a field
	// of the other form of a type it does not take) is read as before:
	// "lore" alone, else the foreign fields.
	var both struct {
		Lore *Pattern `json:"lore"`
		foreign
	}
	if json.Unmarshal(raw, &both) == nil {
		if both.Lore != nil {
			return loreDoc(typ, both.Lore)
		}
		return fromForeign(typ, &both.foreign, archiveMonth), nil
	}
	var w struct {
		Lore *Pattern `json:"lore"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Lore != nil {
		return loreDoc(typ, w.Lore)
	}
	return convertForeign(typ, raw, archiveMonth)
}

// loreDoc is the pattern a document carries under "lore", in a list of typ.
func loreDoc(typ string, p *Pattern) (*Pattern, error) {
	if p.Type != typ {
		return nil, fmt.Errorf("pattern %s: type %q in a %s list", p.ID, p.Type, typ)
	}
	return p, nil
}

// foreign is the union of the shared schema's fields.
type foreign struct {
	PatternID      string `json:"pattern_id"`
	TemplateID     string `json:"template_id"`
	ErrorSignature struct {
		ErrorType    string   `json:"error_type"`
		ErrorPattern string   `json:"error_pattern"`
		Hints        []string `json:"error_location_hints"`
	} `json:"error_signature"`
	FixApproach struct {
		Description  string `json:"description"`
		FixCategory  string `json:"fix_category"`
		CodeTemplate string `json:"code_template"`
		Language     string `json:"code_template_language"`
		DiffPattern  string `json:"diff_pattern"`
	} `json:"fix_approach"`
	TaskCategory string `json:"task_category"`
	TaskPattern  string `json:"task_description_pattern"`
	Approach     struct {
		Description string                                      `json:"description"`
		Steps       []string                                    `json:"steps"`
		Tools       []string                                    `json:"tools_used"`
		Typical     struct{ Average, Minimum, Maximum float64 } `json:"typical_iterations"`
	} `json:"approach"`
	ApproachDescription string   `json:"approach_description"`
	FailureMode         string   `json:"failure_mode"`
	Symptoms            []string `json:"failure_symptoms"`
	Why                 string   `json:"why_it_fails"`
	Better              struct {
		Description string `json:"description"`
		ID          string `json:"success_pattern_id"`
	} `json:"better_alternative"`
	FailureRate     float64           `json:"failure_rate"`
	Occurrences     int               `json:"occurrence_count"`
	Language        string            `json:"language"`
	TemplateCode    string            `json:"template_code"`
	Description     string            `json:"description"`
	UseCase         string            `json:"use_case"`
	Placeholders    map[string]string `json:"placeholders"`
	SourceLoops     json.RawMessage   `json:"source_loops"`
	SuccessRate     *float64          `json:"success_rate"`
	UsageCount      int               `json:"usage_count"`
	Successful      *int              `json:"successful_applications"`
	Failed          *int              `json:"failed_applications"`
	AvgIter         float64           `json:"average_iterations"`
	FirstDiscovered time.Time         `json:"first_discovered"`
	LastUsed        time.Time         `json:"last_used"`
	Tags            []string          `json:"tags"`
	Trend           []TrendPoint      `json:"effectiveness_trend"`
	Related         []string          `json:"related_patterns"`
	Preconditions   []string          `json:"preconditions"`
	Benefits        []string          `json:"benefits"`
	Limitations     []string          `json:"limitations"`
}

// convertForeign reads a pattern document written by another tool (the
// seed's aiwg files), keeping every figure and time it states: the
// success rate (failure rate) and average iterations as written, even when
// whole counts cannot reproduce them (RateStated); the counts from
// successful_applications / failed_applications, else usage × rate
// rounded; first_discovered / last_used, else the earliest and latest
// time of its lineage and trend (zero when it states none).
func convertForeign(typ string, raw json.RawMessage, month string) (*Pattern, error) {
	var f foreign
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	return fromForeign(typ, &f, month), nil
}

// fromForeign is convertForeign of the decoded fields.
func fromForeign(typ string, f *foreign, month string) *Pattern {
	p := &Pattern{ID: f.PatternID, Type: typ, Tags: f.Tags, UsageCount: f.UsageCount,
		FirstDiscovered: f.FirstDiscovered, LastUsed: f.LastUsed, Trend: f.Trend, RelatedPatterns: f.Related}
	switch typ {
	case TypeError:
		p.ErrorType, p.ErrorPattern, p.LocationHints = f.ErrorSignature.ErrorType, f.ErrorSignature.ErrorPattern, f.ErrorSignature.Hints
		p.FixDescription, p.FixCategory = f.FixApproach.Description, f.FixApproach.FixCategory
		p.CodeTemplate, p.Language, p.DiffPattern = f.FixApproach.CodeTemplate, f.FixApproach.Language, f.FixApproach.DiffPattern
		p.Title = p.ErrorType + ": " + humanCategory(p.FixCategory, p.ErrorPattern)
	case TypeSuccess:
		p.Category, p.TaskPattern = f.TaskCategory, f.TaskPattern
		p.Approach, p.Steps, p.ToolsUsed = f.Approach.Description, f.Approach.Steps, f.Approach.Tools
		p.Preconditions, p.Benefits, p.Limitations = f.Preconditions, f.Benefits, f.Limitations
		avg := f.AvgIter
		if avg == 0 {
			avg = f.Approach.Typical.Average
		}
		if avg > 0 {
			// weighted by the loops it stands for, when that keeps the
			// stated average exact
			n := max(f.UsageCount, 1)
			if avg*float64(n)/float64(n) != avg {
				n = 1
			}
			p.IterationsN, p.IterationsSum = n, avg*float64(n)
		}
		p.IterationsMin, p.IterationsMax = int(f.Approach.Typical.Minimum), int(f.Approach.Typical.Maximum)
		p.Title = titleCase(firstN(p.Approach, 60))
	case TypeAnti:
		p.ID = f.PatternID
		p.Approach, p.FailureMode, p.Symptoms, p.WhyItFails = f.ApproachDescription, f.FailureMode, f.Symptoms, f.Why
		p.BetterAlternative, p.BetterPatternID = f.Better.Description, f.Better.ID
		p.Title = titleCase(firstN(p.Approach, 60))
	case TypeTemplate:
		p.ID = f.TemplateID
		p.Language, p.CodeTemplate, p.UseCase, p.Placeholders = f.Language, f.TemplateCode, f.UseCase, f.Placeholders
		p.Title = f.Description
		if p.Title == "" {
			p.Title = "Template " + p.ID
		}
	}
	// counts: explicit counters, else usage × rate rounded; the rate as
	// stated. A template stating no rate counts its uses as successes.
	rate := 1.0
	if f.SuccessRate != nil {
		rate = *f.SuccessRate
	}
	switch {
	case f.Successful != nil && f.Failed != nil:
		p.Successful, p.Failed = *f.Successful, *f.Failed
	case typ == TypeAnti:
		p.Failed = int(float64(f.Occurrences)*f.FailureRate + 0.5)
		p.Successful = f.Occurrences - p.Failed
		p.UsageCount = f.Occurrences
	default:
		p.Successful = int(float64(f.UsageCount)*rate + 0.5)
		p.Failed = f.UsageCount - p.Successful
	}
	p.SuccessRate = SuccessRate(p.Successful, p.Failed)
	switch {
	case typ == TypeAnti:
		if fr := f.FailureRate; fr != p.FailureRate() {
			p.RateStated, p.StatedFailureRate, p.SuccessRate = true, fr, 1-fr
		}
	case f.SuccessRate != nil && *f.SuccessRate != p.SuccessRate:
		p.RateStated, p.SuccessRate = true, *f.SuccessRate
	}
	p.OccurrenceCount = f.Occurrences
	p.SourceLoops = foreignLoops(f.SourceLoops)
	statedTimes(p)
	if month != "" {
		p.Archived, p.ArchiveMonth, p.ArchiveReason = true, month, "imported"
	}
	return p
}

// statedTimes fills a missing first_discovered / last_used with the
// earliest / latest time the pattern's lineage and trend state.
func statedTimes(p *Pattern) {
	var first, last time.Time
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, s := range p.SourceLoops {
		see(s.Timestamp)
	}
	for _, t := range p.Trend {
		see(t.Timestamp)
	}
	if p.FirstDiscovered.IsZero() {
		p.FirstDiscovered = first
	}
	if p.LastUsed.IsZero() {
		p.LastUsed = last
		if p.LastUsed.IsZero() || p.LastUsed.Before(p.FirstDiscovered) {
			p.LastUsed = p.FirstDiscovered
		}
	}
}

func foreignLoops(raw json.RawMessage) []SourceLoop {
	var ids []string
	if json.Unmarshal(raw, &ids) == nil {
		var out []SourceLoop
		for _, id := range ids {
			out = append(out, SourceLoop{LoopID: id, Role: RoleImported, Success: true})
		}
		return out
	}
	var objs []SourceLoop
	_ = json.Unmarshal(raw, &objs)
	for i := range objs {
		objs[i].Role = RoleImported
	}
	return objs
}

// ParseRegistry reads a root document (or a per-type file, given its type,
// or an archive month file) into patterns. Each pattern is validated
// against its schema; the first error refuses the whole file.
func ParseRegistry(raw []byte, fileType string) ([]*Pattern, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		var arr []json.RawMessage
		if fileType == "" || json.Unmarshal(raw, &arr) != nil {
			return nil, fmt.Errorf("not a registry document: %w", err)
		}
		return parseList(fileType, arr, "", false)
	}
	if _, ok := probe["pattern_registry"]; ok {
		if errs, err := ValidateDoc("", raw); err != nil {
			return nil, err
		} else if len(errs) > 0 {
			return nil, fmt.Errorf("registry document: %s", errs[0])
		}
		var doc struct {
			RegistryDoc
			Month string `json:"month"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		// The root schema checked the registry's lists (not the archive's).
		out, err := parseLists(&doc.Registry, doc.Month, true)
		if err != nil {
			return nil, err
		}
		for _, a := range doc.Archive {
			ps, err := parseLists(&a.Registry, a.Month, false)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	}
	if pr, ok := probe["patterns"]; ok && fileType != "" {
		var arr []json.RawMessage
		if err := json.Unmarshal(pr, &arr); err != nil {
			return nil, fmt.Errorf("patterns: %w", err)
		}
		return parseList(fileType, arr, "", false)
	}
	return nil, fmt.Errorf("not a registry document: no pattern_registry or patterns")
}

func parseLists(l *Lists, month string, checked bool) ([]*Pattern, error) {
	var out []*Pattern
	for _, t := range Types {
		ps, err := parseList(t, l.ByType(t), month, checked)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func parseList(typ string, arr []json.RawMessage, month string, checked bool) ([]*Pattern, error) {
	var out []*Pattern
	for i, raw := range arr {
		p, err := parsePatternDoc(typ, raw, month, checked)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", TypeFile[typ], i, err)
		}
		out = append(out, p)
	}
	return out, nil
}
