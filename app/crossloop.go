package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
)

// Cross-loop learning (SPEC §6): loop commands, the pattern registry's
// queries, injection, extraction, prune, export and import.

// crossloopModel is the registered model; its config is read from the
// environment at start (LORE_EMBEDDINGS_URL enables the embeddings
// endpoint for injection relevance).
var crossloopModel = crossloop.New(crossloop.Config{})

func crossloopEmbedder() crossloop.Embedder {
	u := os.Getenv("LORE_EMBEDDINGS_URL")
	if u == "" {
		return nil
	}
	return &crossloop.OpenAIEmbedder{BaseURL: u, Model: os.Getenv("LORE_EMBEDDINGS_MODEL"), APIKey: os.Getenv("LORE_EMBEDDINGS_API_KEY")}
}

func init() {
	cl := func(name, doc string, args any, q QueryFunc) {
		Register(Endpoint{Group: "patterns", Name: name, Doc: doc, Args: args, Query: q})
	}
	cc := func(group, name, doc string, args any, c CommandFunc) {
		Register(Endpoint{Group: group, Name: name, Doc: doc, Args: args, Command: c})
	}
	// data registers a command whose arguments are the data of its event.
	data := func(group, name, doc, typ string, args any, c CommandFunc) {
		Register(Endpoint{Group: group, Name: name, Doc: doc, Args: args, Data: typ, Command: c, Reply: loopReply})
	}
	cl("list", "list registry patterns (type, success-rate bounds, source loop, tag; offset and limit page through a large registry)", crossloop.ListFilter{}, patternsList)
	cl("show", "one pattern with its effectiveness and lineage", PatternIDArgs{}, patternsShow)
	cl("metrics", "cross-loop effectiveness metrics and per-loop impact (loops: how many loops' impacts, in loop id order; all when absent)", MetricsArgs{}, patternsMetrics)
	cl("export", "the registry as a shared-patterns document (after, limit: the part after a pattern id, for a registry too large for one reply)", ExportArgs{}, patternsExport)
	cl("config", "the cross-loop configuration in force (ralph.cross_loop_learning extraction.*, injection.*, and pruning.*)", nil, patternsConfig)
	Register(Endpoint{Group: "patterns", Name: "configure", Doc: "set the cross-loop configuration (keys over the defaults) for every replica; the seed's aiwg.yml block is accepted",
		Args: PatternsConfigureArgs{}, Command: patternsConfigure, Reply: patternsConfiguredReply})
	cc("patterns", "inject", "rank patterns for a task or loop; records the injection on the loop", InjectArgs{}, patternsInject)
	cc("patterns", "prune", "archive low-success or unused patterns under the month (dry_run: plan only)", PruneArgs{}, patternsPrune)
	Register(Endpoint{Group: "patterns", Name: "import", Doc: "import a shared-patterns document", Args: PatternsImportArgs{},
		Command: patternsImport, Reply: patternsImportReply})
	data("patterns", "extract", "extract patterns from a completed loop or all completed loops", "registry.extract_requested/v1", events.ExtractRequested{}, patternsExtract)
	Register(Endpoint{Group: "loop", Name: "start", Doc: "start a loop (generates its id when absent); inject: also rank the registry's patterns for it and record the injection, as patterns.inject {loop_id}",
		Args: LoopStartArgs{}, Command: loopStart, Reply: loopStartReply})
	data("loop", "iterate", "record one loop iteration", "loop.iteration/v1", events.LoopIteration{}, loopIterate)
	data("loop", "complete", "complete a loop; patterns are extracted", "loop.completed/v1", events.LoopCompleted{}, loopComplete)
	data("loop", "apply", "record that a loop applied a pattern", "pattern.applied/v1", events.PatternApplied{}, loopApply)
}

// loopReply is the reply of a loop command (and of patterns.extract),
// from the stored event.
func loopReply(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	p, err := events.DecodeData(evs[0])
	if err != nil {
		return nil, err
	}
	switch d := p.(type) {
	case *events.LoopIteration:
		return map[string]any{"loop_id": d.LoopID, "iteration": d.Iteration}, nil
	case *events.LoopCompleted:
		return map[string]any{"loop_id": d.LoopID, "outcome": d.Outcome}, nil
	case *events.PatternApplied:
		return map[string]any{"loop_id": d.LoopID, "pattern_id": d.PatternID, "success": d.Success}, nil
	case *events.ExtractRequested:
		return map[string]any{"requested": true, "loop_id": d.LoopID, "all": d.All}, nil
	}
	return nil, fmt.Errorf("%w: event %s is a %s, not an event of this command (an idempotency key used for another command?)", ErrConflict, evs[0].ID, evs[0].Type)
}

// loopStartReply is loop.start's answer, read against the stored events:
// the ranking decided now when it is what they record, else (a retry
// whose events were stored by an earlier attempt) the loop and the
// patterns recorded then, as they are now (the first answer's scores are
// not kept).
func loopStartReply(_ context.Context, v View, _ Request, evs []*events.Event, result any) (any, error) {
	var loopID string
	var injected *events.LoopInjected
	for _, ev := range evs {
		p, err := events.DecodeData(ev)
		if err != nil {
			return nil, err
		}
		switch d := p.(type) {
		case *events.LoopStarted:
			loopID = d.LoopID
		case *events.LoopInjected:
			injected = d
		default:
			return nil, fmt.Errorf("%w: event %s is a %s, not an event of loop.start (an idempotency key used for another command?)", ErrConflict, ev.ID, ev.Type)
		}
	}
	if loopID == "" {
		return nil, fmt.Errorf("%w: no loop.started among the events of this idempotency key", ErrConflict)
	}
	if r, ok := result.(LoopStartResult); ok && r.LoopID == loopID && recorded(r.Injection, injected) {
		return r, nil
	}
	res := LoopStartResult{LoopID: loopID}
	if injected == nil {
		return res, nil
	}
	inj := InjectResult{LoopID: loopID, Patterns: []crossloop.Ranked{}}
	for _, id := range injected.PatternIDs {
		pat, ok, err := crossloop.LoadPattern(clReader(v), id)
		if err != nil {
			return nil, err
		}
		if ok {
			m, _ := crossloop.Maturity(pat)
			inj.Patterns = append(inj.Patterns, crossloop.Ranked{Pattern: pat, Maturity: m})
		}
	}
	inj.Text = crossloop.FormatInjection(inj.Patterns)
	res.Injection = &inj
	return res, nil
}

// recorded reports whether the injection inj answers is the one d records
// (none without patterns when d is nil).
func recorded(inj *InjectResult, d *events.LoopInjected) bool {
	if d == nil {
		return inj == nil || len(inj.Patterns) == 0
	}
	if inj == nil || len(inj.Patterns) != len(d.PatternIDs) {
		return false
	}
	for i, r := range inj.Patterns {
		if r.Pattern.ID != d.PatternIDs[i] {
			return false
		}
	}
	return true
}

// patternsImportReply: the command's own count (new and existing
// patterns) when it decided now; for a replay (an idempotency key seen
// before) the patterns its stored events carry.
func patternsImportReply(_ context.Context, _ View, _ Request, evs []*events.Event, result any) (any, error) {
	if r, ok := result.(PatternsImportResult); ok {
		return r, nil
	}
	n := 0
	for _, ev := range evs {
		p, err := events.DecodeData(ev)
		if err != nil {
			return nil, err
		}
		if d, ok := p.(*events.RegistryImported); ok {
			n += len(d.Patterns)
		}
	}
	return PatternsImportResult{Patterns: n, Events: len(evs)}, nil
}

// PatternIDArgs name a registry pattern.
type PatternIDArgs struct {
	ID string `json:"id"`
}

// PatternsImportArgs are the arguments of patterns.import.
type PatternsImportArgs struct {
	Document json.RawMessage `json:"document"`
	// Type: only patterns of this type are imported; a per-type file's
	// patterns are read as this type.
	Type   string `json:"type,omitempty"`
	Source string `json:"source,omitempty"`
}

// clData builds the event of a command whose arguments are its data, as
// sent (see dataEvent).
func clData(req Request, typ string, fill map[string]any) (*events.Event, error) {
	data, err := req.fields()
	if err != nil {
		return nil, err
	}
	for k, v := range fill {
		if err := setDefault(data, k, v); err != nil {
			return nil, err
		}
	}
	ev, _, err := dataEvent(req, typ, req.Project, req.Now, data)
	return ev, err
}

func clReader(v View) crossloop.Reader { return v.Model(crossloop.ModelName) }

// errNegative is the error of a count or bound given below 0.
var errNegative = errors.New("must be >= 0")

func badField(field string, err error) error {
	return fmt.Errorf("%w: field %q: %v", ErrBadRequest, field, err)
}

// checkRate refuses a success rate (a filter or a threshold; nil: not
// given) outside [0, 1], naming field: the one rule of every argument
// that is a rate.
func checkRate(field string, r *float64) error {
	if r != nil && !(*r >= 0 && *r <= 1) {
		return badField(field, fmt.Errorf("%v must be in [0,1]", *r))
	}
	return nil
}

// InjectArgs are patterns.inject's arguments.
type InjectArgs struct {
	LoopID         string   `json:"loop_id,omitempty"`
	Task           string   `json:"task,omitempty"`
	Category       string   `json:"category,omitempty"`
	TopK           int      `json:"top_k,omitempty"`
	MinSuccessRate *float64 `json:"min_success_rate,omitempty"`
	Types          []string `json:"types,omitempty"`
}

// InjectResult is patterns.inject's answer.
type InjectResult struct {
	LoopID   string             `json:"loop_id,omitempty"`
	Patterns []crossloop.Ranked `json:"patterns"`
	Text     string             `json:"text"`
}

func patternsInject(ctx context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a InjectArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if a.LoopID != "" {
		task, category, ok, err := crossloop.LoopTask(clReader(v), a.LoopID)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, fmt.Errorf("%w: loop %q", ErrNotFound, a.LoopID)
		}
		if a.Task == "" {
			a.Task = task
		}
		if a.Category == "" {
			a.Category = category
		}
	}
	res, err := injection(ctx, v, a)
	if err != nil {
		return nil, nil, err
	}
	ev, err := injectedEvent(req, a.LoopID, res.Patterns)
	if err != nil || ev == nil {
		return nil, res, err
	}
	return []*events.Event{ev}, res, nil
}

// injection ranks the registry's patterns for a (its loop id only names
// the result): the one ranking of patterns.inject and loop.start's inject.
func injection(ctx context.Context, v View, a InjectArgs) (InjectResult, error) {
	if strings.TrimSpace(a.Task) == "" && a.Category == "" {
		return InjectResult{}, badField("task", errors.New("give a task, a category or a loop id"))
	}
	if a.TopK < 0 {
		return InjectResult{}, badField("top_k", errNegative)
	}
	if err := checkRate("min_success_rate", a.MinSuccessRate); err != nil {
		return InjectResult{}, err
	}
	for _, t := range a.Types {
		if !crossloop.ValidType(t) {
			return InjectResult{}, badField("types", fmt.Errorf("unknown type %q", t))
		}
	}
	cfg, err := crossloopModel.ConfigAt(clReader(v))
	if err != nil {
		return InjectResult{}, err
	}
	var rs []crossloop.Ranked
	if types := cfg.Types(a.Types); len(types) > 0 { // none: every type asked for is excluded by injection.include_*
		rs, err = crossloop.Rank(ctx, clReader(v), cfg, crossloop.InjectRequest{Task: a.Task,
			Category: a.Category, TopK: a.TopK, MinRate: a.MinSuccessRate, Types: types}, crossloopEmbedder())
		if err != nil {
			return InjectResult{}, err
		}
	}
	res := InjectResult{LoopID: a.LoopID, Patterns: rs, Text: crossloop.FormatInjection(rs)}
	if res.Patterns == nil {
		res.Patterns = []crossloop.Ranked{}
	}
	return res, nil
}

// injectedEvent records an injection of rs on loop loopID (nil when there
// is no loop or nothing was injected).
func injectedEvent(req Request, loopID string, rs []crossloop.Ranked) (*events.Event, error) {
	if loopID == "" || len(rs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Pattern.ID
	}
	return req.newEvent("loop.injected/v1", req.Project, req.Now, &events.LoopInjected{LoopID: loopID, PatternIDs: ids})
}

// PruneArgs are patterns.prune's arguments.
type PruneArgs struct {
	DryRun         bool     `json:"dry_run,omitempty"`
	MinSuccessRate *float64 `json:"min_success_rate,omitempty"`
	MinUsageCount  *int     `json:"min_usage_count,omitempty"`
	MaxAgeDays     *float64 `json:"max_age_days,omitempty"`
}

func patternsPrune(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a PruneArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	cfg, err := crossloopModel.ConfigAt(clReader(v))
	if err != nil {
		return nil, nil, err
	}
	pol := cfg.Prune
	if err := checkRate("min_success_rate", a.MinSuccessRate); err != nil {
		return nil, nil, err
	}
	if a.MinSuccessRate != nil {
		pol.MinSuccessRate = *a.MinSuccessRate
	}
	if a.MinUsageCount != nil {
		if *a.MinUsageCount < 0 {
			return nil, nil, badField("min_usage_count", errNegative)
		}
		pol.MinUsageCount = *a.MinUsageCount
	}
	if a.MaxAgeDays != nil {
		if *a.MaxAgeDays < 0 {
			return nil, nil, badField("max_age_days", errNegative)
		}
		pol.MaxAgeDays = *a.MaxAgeDays
	}
	plan, month, err := crossloop.PrunePlan(clReader(v), pol, req.Now)
	if err != nil {
		return nil, nil, err
	}
	if plan == nil {
		plan = []crossloop.PruneCandidate{}
	}
	res := map[string]any{"month": month, "archive_file": crossloop.ArchiveFile(month), "dry_run": a.DryRun, "patterns": plan}
	if a.DryRun || len(plan) == 0 {
		return nil, res, nil
	}
	d := &events.RegistryPruned{Month: month}
	for _, c := range plan {
		d.Patterns = append(d.Patterns, events.PrunedPattern{PatternID: c.PatternID, Reason: c.Reason})
	}
	ev, err := req.newEvent("registry.pruned/v1", req.Project, req.Now, d)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, res, nil
}

// importChunk bounds the patterns of one registry.imported event.
const importChunk = 200

// PatternsImportResult is patterns.import's answer: patterns new to the
// registry (sent), and those it already holds (imported before with the
// same content, or the same id), which append nothing.
type PatternsImportResult struct {
	Patterns int `json:"patterns"`
	Existing int `json:"existing"`
	Events   int `json:"events"`
}

func patternsImport(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a PatternsImportArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if a.Type != "" && !crossloop.ValidType(a.Type) {
		return nil, nil, badField("type", fmt.Errorf("%q is not error, success, anti or template", a.Type))
	}
	ps, err := crossloop.ParseRegistry(a.Document, a.Type)
	if err != nil {
		return nil, nil, badField("document", err)
	}
	var res PatternsImportResult
	// Each fresh pattern's JSON (as the event carries it) and its digest,
	// from one encoding.
	var fresh []json.RawMessage
	var digests []string
	r := clReader(v)
	for _, p := range ps {
		if a.Type != "" && p.Type != a.Type {
			continue // --type: only patterns of that type
		}
		raw, d, err := crossloop.ImportEncode(p)
		if err != nil {
			return nil, nil, err
		}
		known, err := crossloop.ImportKnownDigest(r, p.ID, d)
		if err != nil {
			return nil, nil, err
		}
		if known {
			res.Existing++
			continue
		}
		fresh, digests = append(fresh, raw), append(digests, d)
	}
	at := req.Now
	if at.IsZero() {
		at = time.Now()
	}
	at = at.UTC()
	var evs []*events.Event
	for i := 0; i < len(fresh); i += importChunk {
		j := min(i+importChunk, len(fresh))
		d := &events.RegistryImported{Source: a.Source, Patterns: fresh[i:j:j]}
		data, err := json.Marshal(d)
		if err != nil {
			return nil, nil, fmt.Errorf("encode registry.imported/v1 data: %w", err)
		}
		// Named by content: the same patterns sent again are one event.
		// Nothing else is derived from the patterns' text here: the
		// appender redacts it (events.Appender.Prepare), once.
		evs = append(evs, &events.Event{ID: crossloop.ImportEventID(digests[i:j]), Type: "registry.imported/v1",
			Project: req.Project, Source: req.Source, Subject: d.AggregateID(), Time: at, Data: data})
	}
	res.Patterns, res.Events = len(fresh), len(evs)
	return evs, res, nil
}

func patternsExtract(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a events.ExtractRequested
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if !a.All {
		l, ok, err := crossloop.LoadLoop(clReader(v), a.LoopID)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, fmt.Errorf("%w: loop %q", ErrNotFound, a.LoopID)
		}
		if l.Outcome == "" {
			return nil, nil, fmt.Errorf("%w: loop %q has not completed", ErrConflict, a.LoopID)
		}
	}
	ev, err := clData(req, "registry.extract_requested/v1", nil)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]any{"requested": true, "loop_id": a.LoopID, "all": a.All}, nil
}

// LoopStartArgs are loop.start's arguments: the loop.started data, and
// Inject to rank the registry's patterns for the loop in the same request.
type LoopStartArgs struct {
	events.LoopStarted
	// Inject ranks the registry's patterns for the loop's task and
	// category (the injection settings in force) and records the
	// injection on the loop: patterns.inject {loop_id} without a second
	// request.
	Inject bool `json:"inject,omitempty"`
}

// LoopStartResult is loop.start's answer: the loop's id and, with inject,
// the patterns ranked for it.
type LoopStartResult struct {
	LoopID    string        `json:"loop_id"`
	Injection *InjectResult `json:"injection,omitempty"`
}

func loopStart(ctx context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a LoopStartArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(a.Task) == "" {
		return nil, nil, badField("task", errors.New("is required"))
	}
	data, err := req.fields("inject")
	if err != nil {
		return nil, nil, err
	}
	if a.LoopID == "" {
		id, err := crossloop.NewLoopID(a.Task)
		if err != nil {
			return nil, nil, err
		}
		if req.ids != nil && req.ids.key != "" {
			// A retry with the same idempotency key names the same loop.
			sum := sha256.Sum256([]byte(req.ids.key))
			id = crossloop.LoopIDWith(a.Task, [4]byte(sum[:4]))
		}
		a.LoopID = id
		if err := setDefault(data, "loop_id", id); err != nil {
			return nil, nil, err
		}
	}
	if a.Agent == "" && req.Source != "" {
		if err := setDefault(data, "agent", req.Source); err != nil {
			return nil, nil, err
		}
	}
	ev, _, err := dataEvent(req, "loop.started/v1", req.Project, req.Now, data)
	if err != nil {
		return nil, nil, err
	}
	res := LoopStartResult{LoopID: a.LoopID}
	if !a.Inject {
		return []*events.Event{ev}, res, nil
	}
	// The ranking reads the registry, not the loop: the loop's task and
	// category are in the request, so it needs no fold of loop.started.
	inj, err := injection(ctx, v, InjectArgs{LoopID: a.LoopID, Task: a.Task, Category: a.Category})
	if err != nil {
		return nil, nil, err
	}
	res.Injection = &inj
	injected, err := injectedEvent(req, a.LoopID, inj.Patterns)
	if err != nil || injected == nil {
		return []*events.Event{ev}, res, err
	}
	return []*events.Event{ev, injected}, res, nil
}

// loopBegun refuses (404) a loop never started: the fold refuses an
// iteration, an application, an injection or the completion of such a
// loop (dead-lettered when it comes by the raw door).
func loopBegun(v View, loopID string) error {
	if ok, err := crossloop.LoopStarted(clReader(v), loopID); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %v", ErrNotFound, crossloop.ErrLoopNotStarted(loopID))
	}
	return nil
}

func loopIterate(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a events.LoopIteration
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	ev, err := clData(req, "loop.iteration/v1", nil)
	if err != nil {
		return nil, nil, err
	}
	if err := loopBegun(v, a.LoopID); err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]any{"loop_id": a.LoopID, "iteration": a.Iteration}, nil
}

func loopComplete(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a events.LoopCompleted
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	ev, err := clData(req, "loop.completed/v1", nil)
	if err != nil {
		return nil, nil, err
	}
	if err := loopBegun(v, a.LoopID); err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]any{"loop_id": a.LoopID, "outcome": a.Outcome}, nil
}

func loopApply(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a events.PatternApplied
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if _, ok, err := crossloop.LoadPattern(clReader(v), a.PatternID); err != nil {
		return nil, nil, err
	} else if !ok {
		return nil, nil, fmt.Errorf("%w: pattern %q", ErrNotFound, a.PatternID)
	}
	if err := loopBegun(v, a.LoopID); err != nil {
		return nil, nil, err
	}
	ev, err := clData(req, "pattern.applied/v1", nil)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]any{"loop_id": a.LoopID, "pattern_id": a.PatternID, "success": a.Success}, nil
}

// PatternsConfigureArgs are the arguments of patterns.configure: a
// configuration document (ParseConfig: the cross_loop_learning block, or
// a document holding it as ralph.cross_loop_learning).
type PatternsConfigureArgs struct {
	Config json.RawMessage `json:"config"`
}

func patternsConfig(_ context.Context, v View, _ Request) (any, error) {
	return crossloopModel.ConfigAt(clReader(v))
}

func patternsConfigure(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a PatternsConfigureArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if len(a.Config) == 0 || string(a.Config) == "null" {
		return nil, nil, badField("config", errors.New("is required"))
	}
	cfg, err := crossloop.ParseConfig(a.Config)
	if err != nil {
		return nil, nil, badField("config", err)
	}
	full, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	ev, err := req.newEvent("crossloop.configured/v1", req.Project, req.Now, &events.CrossloopConfigured{Config: full})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, cfg, nil
}

func patternsConfiguredReply(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.CrossloopConfigured](evs[0])
	if err != nil {
		return nil, err
	}
	return crossloop.ParseConfig(d.Config)
}
