package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

// Knowledge endpoints (SPEC §5): lore.api.knowledge.* and lore.api.phase.complete.

// knowledgeModel is the registered knowledge model; injections go through
// its pool cache (knowledge.Model.InjectFrom).
var knowledgeModel = knowledge.New()

func init() {
	q := func(name, doc string, args any, fn QueryFunc) {
		Register(Endpoint{Group: "knowledge", Name: name, Doc: doc, Args: args, Query: fn})
	}
	c := func(name, doc string, args any, fn CommandFunc) {
		Register(Endpoint{Group: "knowledge", Name: name, Doc: doc, Args: args, Command: fn})
	}
	q("list", "list knowledge entries (swarm of a project and hive); quarantined and archived ones on request", knowledge.ListOptions{}, knowledgeList)
	q("show", "one knowledge entry by id or unique id prefix, with its health", KnowledgeIDArgs{}, knowledgeShow)
	q("rejected", "the rejected read model: refused submissions and quarantine fingerprints", KnowledgeRejectedArgs{}, knowledgeRejected)
	q("stats", "counts of knowledge entries by tier and status", KnowledgeProjectArgs{}, knowledgeStats)
	q("export", "entries (or rejected lessons) in opencode-swarm's JSONL shape", KnowledgeExportArgs{}, knowledgeExport)
	q("config", "the knowledge.* configuration in force", nil, knowledgeConfig)
	q("submission", "what the fold decided for one submission (its event id): added, reinforced or rejected", KnowledgeEventArgs{}, knowledgeSubmission)
	Register(Endpoint{Group: "knowledge", Name: "add", Doc: "submit a lesson; replies what the fold decided: a new entry, a reinforced one, or rejected (and kept) with the reason",
		Args: events.KnowledgeSubmitted{}, Data: "knowledge.submitted/v1", Command: knowledgeAdd, Reply: knowledgeAddReply})
	cr := func(name, doc string, args any, fn CommandFunc, reply ReplyFunc) {
		Register(Endpoint{Group: "knowledge", Name: name, Doc: doc, Args: args, Command: fn, Reply: reply})
	}
	cr("quarantine", "hide an entry (id or unique prefix) from queries and injection, with a reason", KnowledgeReasonArgs{}, knowledgeQuarantine, kReplyStatus)
	cr("restore", "restore a quarantined entry after re-validation", KnowledgeReasonArgs{}, knowledgeRestore, kReplyStatus)
	cr("promote", "promote new text, or a swarm entry by id, to the hive", events.KnowledgePromoted{}, knowledgePromote, kReplyPromoted)
	c("inject", "the budgeted knowledge block for a task at a context headroom; records what was shown", KnowledgeInjectArgs{}, knowledgeInject)
	cr("outcome", "record what an agent made of an entry it was shown: applied, helpful or harmful", KnowledgeOutcomeArgs{}, knowledgeOutcome, kReplyOutcome)
	cr("configure", "set knowledge.* configuration keys (over the defaults) for every replica", KnowledgeConfigureArgs{}, knowledgeConfigure, kReplyConfigured)
	Register(Endpoint{Group: "phase", Name: "complete", Doc: "a phase of a project completed: knowledge sweep and hive promotion checks",
		Args: events.PhaseCompleted{}, Data: "phase.completed/v1", Command: phaseComplete, Reply: phaseReply})
}

// KnowledgeIDArgs name an entry by id or unique id prefix.
type KnowledgeIDArgs struct {
	ID string `json:"id"`
}

// KnowledgeReasonArgs name an entry and say why.
type KnowledgeReasonArgs struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// KnowledgeProjectArgs name a project (the request's when empty).
type KnowledgeProjectArgs struct {
	Project string `json:"project,omitempty"`
}

// KnowledgeRejectedArgs are the arguments of knowledge.rejected.
type KnowledgeRejectedArgs struct {
	Project     string `json:"project,omitempty"`
	AllProjects bool   `json:"all_projects,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// KnowledgeExportArgs are the arguments of knowledge.export.
type KnowledgeExportArgs struct {
	Tier     string `json:"tier,omitempty"`
	Project  string `json:"project,omitempty"`
	Rejected bool   `json:"rejected,omitempty"`
	All      bool   `json:"all,omitempty"`
	// Offset skips this many records of the export's order; Limit bounds
	// how many are returned (0: all). A large store is exported page by
	// page: its whole export may not fit one reply.
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

// KnowledgeEventArgs name a submission by its event id.
type KnowledgeEventArgs struct {
	EventID string `json:"event_id"`
}

// KnowledgeOutcomeArgs are the arguments of knowledge.outcome.
type KnowledgeOutcomeArgs struct {
	ID          string `json:"id"`
	Outcome     string `json:"outcome"`
	InjectionID string `json:"injection_id,omitempty"`
}

// KnowledgeConfigureArgs are the arguments of knowledge.configure.
type KnowledgeConfigureArgs struct {
	Config json.RawMessage `json:"config"`
}

// payload decodes the data of a stored event into its Go type.
func payload[T any](ev *events.Event) (*T, error) {
	p, err := events.DecodeData(ev)
	if err != nil {
		return nil, err
	}
	t, ok := any(p).(*T)
	if !ok {
		return nil, fmt.Errorf("%w: event %s is a %s, not an event of this command (an idempotency key used for another command?)", ErrConflict, ev.ID, ev.Type)
	}
	return t, nil
}

// kReplyStatus reads back the status the fold gave the entry.
func kReplyStatus(_ context.Context, v View, _ Request, evs []*events.Event, _ any) (any, error) {
	var id string
	switch evs[0].Type {
	case "knowledge.quarantined/v1":
		d, err := payload[events.KnowledgeQuarantined](evs[0])
		if err != nil {
			return nil, err
		}
		id = d.EntryID
	default:
		d, err := payload[events.KnowledgeRestored](evs[0])
		if err != nil {
			return nil, err
		}
		id = d.EntryID
	}
	e, err := kFind(v, id)
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": e.ID, "status": e.Status}, nil
}

func kReplyPromoted(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.KnowledgePromoted](evs[0])
	if err != nil {
		return nil, err
	}
	return map[string]string{"hive_id": kHiveID(d, evs[0].ID), "route": knowledge.RouteManual}, nil
}

// kHiveID is the id of the hive entry a manual promotion makes.
func kHiveID(d *events.KnowledgePromoted, eventID string) string {
	if d.EntryID != "" {
		return knowledge.HiveIDFor(d.EntryID)
	}
	return knowledge.ManualHiveID(eventID)
}

func kReplyOutcome(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.KnowledgeOutcome](evs[0])
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": d.EntryID, "outcome": d.Outcome}, nil
}

func kReplyConfigured(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.KnowledgeConfigured](evs[0])
	if err != nil {
		return nil, err
	}
	return knowledge.ParseConfig(d.Config)
}

func phaseReply(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.PhaseCompleted](evs[0])
	if err != nil {
		return nil, err
	}
	return map[string]any{"project": orDefault(d.Project, evs[0].Project), "phase": d.Phase, "event_id": evs[0].ID}, nil
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func kreader(v View) projector.Reader { return v.Model(knowledge.ModelName) }

func kconfig(v View) (knowledge.Config, error) {
	return knowledge.LoadConfig(kreader(v), knowledge.DefaultConfig())
}

// kProject is the project an argument names, else the request's.
func kProject(req Request, arg string) string {
	if arg != "" {
		return arg
	}
	return req.Project
}

// kFind resolves an id or unique prefix, mapping errors to API classes.
func kFind(v View, id string) (*knowledge.Entry, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: field \"id\": is required", ErrBadRequest)
	}
	e, err := knowledge.Find(kreader(v), id)
	switch {
	case errors.Is(err, knowledge.ErrAmbiguous):
		return nil, fmt.Errorf("%w: field \"id\": %v", ErrBadRequest, err)
	case errors.Is(err, knowledge.ErrUnknown):
		return nil, fmt.Errorf("%w: knowledge entry %q", ErrNotFound, id)
	}
	return e, err
}

// kWritable refuses an event of type typ while the configuration refuses it
// (the master switch knowledge.enabled is off): the same rule the fold
// applies (knowledge.Config.Refuses), said before anything is appended.
func kWritable(v View, typ string) error {
	cfg, err := kconfig(v)
	if err != nil {
		return err
	}
	if cfg.Refuses(typ) {
		return fmt.Errorf("%w: %s", ErrConflict, knowledge.DisabledReason)
	}
	return nil
}

func kEvent(req Request, typ, project string, p events.Payload) (*events.Event, error) {
	return req.newEvent(typ, project, req.Now, p)
}

func knowledgeList(_ context.Context, v View, req Request) (any, error) {
	var o knowledge.ListOptions
	if err := req.Bind(&o); err != nil {
		return nil, err
	}
	if o.Tier != "" && o.Tier != knowledge.TierSwarm && o.Tier != knowledge.TierHive {
		return nil, fmt.Errorf("%w: field \"tier\": %q must be swarm or hive", ErrBadRequest, o.Tier)
	}
	if o.Status != "" && !knowledge.ValidStatus(o.Status) {
		return nil, badField("status", fmt.Errorf("%q must be one of %s", o.Status, strings.Join(knowledge.Statuses, ", ")))
	}
	if o.Category != "" && !knowledge.ValidCategory(o.Category) {
		return nil, badField("category", fmt.Errorf("%q must be one of %s, %s", o.Category,
			strings.Join(knowledge.Categories, ", "), strings.Join(knowledge.SeedCategories, ", ")))
	}
	if err := checkPage(o.Offset, o.Limit); err != nil {
		return nil, err
	}
	o.Project = kProject(req, o.Project)
	return knowledge.List(kreader(v), o)
}

// KnowledgeEntryView is an entry with its evaluated health; Merged is set
// when the id asked for is that of a submission merged into this entry.
type KnowledgeEntryView struct {
	*knowledge.Entry
	Health knowledge.Health `json:"health"`
	Merged *knowledge.Merge `json:"merged,omitempty"`
}

func knowledgeShow(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeIDArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	e, err := kFind(v, a.ID)
	var merged *knowledge.Merge
	if errors.Is(err, ErrNotFound) {
		// The id of a submission merged into another entry leads there.
		m, ok, merr := knowledge.MergedInto(kreader(v), a.ID)
		switch {
		case errors.Is(merr, knowledge.ErrAmbiguous):
			return nil, fmt.Errorf("%w: field \"id\": %v", ErrBadRequest, merr)
		case merr != nil:
			return nil, merr
		case ok:
			if e, err = kFind(v, m.Into); err != nil {
				return nil, fmt.Errorf("entry %s was merged into %s: %w", m.ID, m.Into, err)
			}
			merged = m
		}
	}
	if err != nil {
		return nil, err
	}
	cfg, err := kconfig(v)
	if err != nil {
		return nil, err
	}
	return KnowledgeEntryView{Entry: e, Health: knowledge.EntryHealth(e, cfg), Merged: merged}, nil
}

func knowledgeRejected(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeRejectedArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if err := checkPage(0, a.Limit); err != nil {
		return nil, err
	}
	p := kProject(req, a.Project)
	if a.AllProjects {
		p = ""
	}
	return knowledge.Rejections(kreader(v), p, a.Limit)
}

func knowledgeStats(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeProjectArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	return knowledge.Summary(kreader(v), kProject(req, a.Project))
}

// KnowledgeExportResult holds entries or rejected lessons in the JSONL shape.
type KnowledgeExportResult struct {
	Entries  []knowledge.FileEntry    `json:"entries,omitempty"`
	Rejected []knowledge.FileRejected `json:"rejected,omitempty"`
}

func knowledgeExport(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeExportArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.Tier == "" {
		a.Tier = knowledge.TierSwarm
	}
	if a.Tier != knowledge.TierSwarm && a.Tier != knowledge.TierHive {
		return nil, fmt.Errorf("%w: field \"tier\": %q must be swarm or hive", ErrBadRequest, a.Tier)
	}
	if err := checkPage(a.Offset, a.Limit); err != nil {
		return nil, err
	}
	cfg, err := kconfig(v)
	if err != nil {
		return nil, err
	}
	project := kProject(req, a.Project)
	out := KnowledgeExportResult{Entries: []knowledge.FileEntry{}}
	if a.Rejected {
		rs, err := knowledge.Rejections(kreader(v), "", 0)
		if err != nil {
			return nil, err
		}
		out.Rejected = []knowledge.FileRejected{}
		for _, r := range rs {
			if r.Tier == a.Tier && (a.Tier == knowledge.TierHive || r.Project == project) {
				out.Rejected = append(out.Rejected, knowledge.RejectedToFile(r))
			}
		}
		out.Rejected = page(out.Rejected, a.Offset, a.Limit)
		return out, nil
	}
	es, err := knowledge.List(kreader(v), knowledge.ListOptions{Tier: a.Tier, Project: project, All: a.All, Archived: true})
	if err != nil {
		return nil, err
	}
	for _, e := range page(es, a.Offset, a.Limit) {
		out.Entries = append(out.Entries, knowledge.ToFile(e, cfg))
	}
	return out, nil
}

func knowledgeConfig(_ context.Context, v View, _ Request) (any, error) { return kconfig(v) }

// KnowledgeAddResult is the reply of knowledge.add: the fold's decision on
// the submission, read back from the knowledge model once folded
// (Outcome "pending" while it is not).
type KnowledgeAddResult struct {
	ID          string            `json:"id"`
	EventID     string            `json:"event_id"`
	Outcome     string            `json:"outcome"` // added | reinforced | rejected | pending
	DuplicateOf string            `json:"duplicate_of,omitempty"`
	Layer       int               `json:"layer,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Warnings    []knowledge.Issue `json:"warnings,omitempty"`
	// Promoted and Archived: what the submission caused (hive promotions,
	// cap archives), read back from the fold's decision.
	Promoted []knowledge.Promotion `json:"promoted,omitempty"`
	Archived []string              `json:"archived,omitempty"`
}

// OutcomePending marks a reply whose fold decision is not read back yet.
const OutcomePending = "pending"

func knowledgeAdd(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var d events.KnowledgeSubmitted
	if err := req.Bind(&d); err != nil {
		return nil, nil, err
	}
	if err := kWritable(v, "knowledge.submitted/v1"); err != nil {
		return nil, nil, err
	}
	if d.Import != nil {
		return nil, nil, fmt.Errorf("%w: field \"import\": use knowledge.import", ErrBadRequest)
	}
	data, err := req.fields()
	if err != nil {
		return nil, nil, err
	}
	if req.Source != "" {
		if err := setDefault(data, "source", req.Source); err != nil {
			return nil, nil, err
		}
	}
	project := kProject(req, d.Project)
	ev, p, err := dataEvent(req, "knowledge.submitted/v1", project, req.Now, data)
	if err != nil {
		return nil, nil, err
	}
	res := KnowledgeAddResult{ID: knowledge.SubmissionID(ev.ID, project, p.(*events.KnowledgeSubmitted)), EventID: ev.ID, Outcome: OutcomePending}
	return []*events.Event{ev}, res, nil
}

// knowledgeAddReply reads back what the fold decided for the submission.
func knowledgeAddReply(_ context.Context, v View, _ Request, evs []*events.Event, result any) (any, error) {
	res, _ := result.(KnowledgeAddResult)
	d, ok, err := knowledge.DecisionOf(kreader(v), evs[0].ID)
	if err != nil || !ok {
		return res, err
	}
	return kAddResult(d), nil
}

func kAddResult(d *knowledge.Decision) KnowledgeAddResult {
	return KnowledgeAddResult{ID: d.ID, EventID: d.EventID, Outcome: d.Outcome, DuplicateOf: d.DuplicateOf,
		Layer: d.Layer, Reason: d.Reason, Warnings: d.Warnings, Promoted: d.Promoted, Archived: d.Archived}
}

func knowledgeSubmission(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeEventArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.EventID == "" {
		return nil, fmt.Errorf("%w: field \"event_id\": is required", ErrBadRequest)
	}
	d, ok, err := knowledge.DecisionOf(kreader(v), a.EventID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no submission folded with event id %q", ErrNotFound, a.EventID)
	}
	return kAddResult(d), nil
}

func knowledgeQuarantine(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeReasonArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := kWritable(v, "knowledge.quarantined/v1"); err != nil {
		return nil, nil, err
	}
	e, err := kFind(v, a.ID)
	if err != nil {
		return nil, nil, err
	}
	if e.Status == knowledge.StatusQuarantined {
		return nil, nil, fmt.Errorf("%w: entry %s is already quarantined", ErrConflict, e.ID)
	}
	ev, err := kEvent(req, "knowledge.quarantined/v1", kProject(req, e.Project),
		&events.KnowledgeQuarantined{EntryID: e.ID, Reason: a.Reason, ReportedBy: req.Source})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]string{"id": e.ID, "status": knowledge.StatusQuarantined}, nil
}

func knowledgeRestore(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeReasonArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := kWritable(v, "knowledge.restored/v1"); err != nil {
		return nil, nil, err
	}
	e, err := kFind(v, a.ID)
	if err != nil {
		return nil, nil, err
	}
	if e.Status != knowledge.StatusQuarantined {
		return nil, nil, fmt.Errorf("%w: entry %s is not quarantined (status %s)", ErrConflict, e.ID, e.Status)
	}
	cfg, err := kconfig(v)
	if err != nil {
		return nil, nil, err
	}
	probe := *e
	if r, ok := knowledge.Restore(&probe, nil, cfg, req.Now); !ok {
		return nil, nil, fmt.Errorf("%w: entry %s fails re-validation (layer %d: %s); it stays quarantined", ErrConflict, e.ID, r.Layer, r.Reason)
	}
	ev, err := kEvent(req, "knowledge.restored/v1", kProject(req, e.Project), &events.KnowledgeRestored{EntryID: e.ID, Reason: a.Reason})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]string{"id": e.ID, "status": probe.Status}, nil
}

// kPromoteRefusal says why swarm entry e cannot be promoted to the hive by
// hand or by a curator ("" when it can).
func kPromoteRefusal(e *knowledge.Entry, hive []*knowledge.Entry, cfg knowledge.Config) string {
	switch {
	case e.Tier != knowledge.TierSwarm:
		return fmt.Sprintf("entry %s is already in the hive", e.ID)
	case e.PromotedTo != "":
		return fmt.Sprintf("entry %s was already promoted to hive entry %s", e.ID, e.PromotedTo)
	case !e.Active():
		return fmt.Sprintf("entry %s is %s", e.ID, e.Status)
	}
	return kHiveDuplicate(e.Lesson, hive, cfg)
}

// kHiveDuplicate says which hive entry lesson near-duplicates ("" none).
func kHiveDuplicate(lesson string, hive []*knowledge.Entry, cfg knowledge.Config) string {
	for _, h := range hive {
		if knowledge.NearDuplicate(lesson, h.Lesson, cfg.DedupThreshold) {
			return fmt.Sprintf("lesson already exists in hive (near-duplicate of %s)", h.ID)
		}
	}
	return ""
}

func knowledgePromote(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a events.KnowledgePromoted
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if (a.EntryID == "") == (a.Lesson == "") {
		return nil, nil, fmt.Errorf("%w: field \"entry_id\": give exactly one of entry_id and lesson", ErrBadRequest)
	}
	if err := kWritable(v, "knowledge.promoted/v1"); err != nil {
		return nil, nil, err
	}
	cfg, err := kconfig(v)
	if err != nil {
		return nil, nil, err
	}
	hive, err := knowledge.HiveEntries(kreader(v))
	if err != nil {
		return nil, nil, err
	}
	lesson, project := a.Lesson, kProject(req, "")
	if a.EntryID != "" {
		e, err := kFind(v, a.EntryID)
		if err != nil {
			return nil, nil, err
		}
		if why := kPromoteRefusal(e, hive, cfg); why != "" {
			return nil, nil, fmt.Errorf("%w: %s", ErrConflict, why)
		}
		a.EntryID, lesson, project = e.ID, e.Lesson, e.Project
	} else if why := kHiveDuplicate(lesson, hive, cfg); why != "" {
		return nil, nil, fmt.Errorf("%w: %s", ErrConflict, why)
	}
	ev, err := kEvent(req, "knowledge.promoted/v1", project, &a)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]string{"hive_id": kHiveID(&a, ev.ID), "route": knowledge.RouteManual}, nil
}

// KnowledgeInjectArgs ask for a knowledge block.
type KnowledgeInjectArgs struct {
	Task     string   `json:"task"`
	Headroom *float64 `json:"headroom"`
	Project  string   `json:"project"`
	Scopes   []string `json:"scopes" jsonschema:"scopes to include besides knowledge.scope_filter (default [global]), e.g. stack:go"`
}

// KnowledgeInjectResult is the block with the id of the event recording it.
type KnowledgeInjectResult struct {
	knowledge.Injection
	InjectionID string `json:"injection_id,omitempty"`
}

func knowledgeInject(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeInjectArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	h := 1.0
	if a.Headroom != nil {
		h = *a.Headroom
	}
	if !(h >= 0 && h <= 1) {
		return nil, nil, fmt.Errorf("%w: field \"headroom\": %v must be a fraction in [0, 1]", ErrBadRequest, h)
	}
	for _, s := range a.Scopes {
		if !knowledge.ValidScope(s) {
			return nil, nil, fmt.Errorf("%w: field \"scopes\": %q is not 'global' or 'stack:<name>'", ErrBadRequest, s)
		}
	}
	p := kProject(req, a.Project)
	inj, err := knowledgeModel.InjectFrom(kreader(v), knowledge.DefaultConfig(), knowledge.InjectOptions{Task: a.Task, Headroom: h, Project: p, Scopes: a.Scopes}, req.Now)
	if err != nil {
		return nil, nil, err
	}
	out := KnowledgeInjectResult{Injection: inj}
	if len(inj.Entries) == 0 {
		return nil, out, nil
	}
	ids := make([]string, len(inj.Entries))
	for i, s := range inj.Entries {
		ids[i] = s.ID
	}
	ev, err := kEvent(req, "knowledge.injected/v1", p, &events.KnowledgeInjected{Task: kTruncate(a.Task, 65536),
		Headroom: h, Regime: inj.Regime, EntryIDs: ids, Chars: inj.Chars, BudgetChars: inj.MaxChars})
	if err != nil {
		return nil, nil, err
	}
	out.InjectionID = ev.ID
	return []*events.Event{ev}, out, nil
}

func kTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func knowledgeOutcome(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeOutcomeArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	switch a.Outcome {
	case knowledge.OutcomeApplied, knowledge.OutcomeHelpful, knowledge.OutcomeHarmful:
	default:
		return nil, nil, fmt.Errorf("%w: field \"outcome\": %q must be applied, helpful or harmful", ErrBadRequest, a.Outcome)
	}
	if err := kWritable(v, "knowledge.outcome/v1"); err != nil {
		return nil, nil, err
	}
	e, err := kFind(v, a.ID)
	if err != nil {
		return nil, nil, err
	}
	ev, err := kEvent(req, "knowledge.outcome/v1", kProject(req, e.Project),
		&events.KnowledgeOutcome{EntryID: e.ID, Outcome: a.Outcome, InjectionID: a.InjectionID})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]string{"id": e.ID, "outcome": a.Outcome}, nil
}

func knowledgeConfigure(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeConfigureArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if len(a.Config) == 0 {
		return nil, nil, fmt.Errorf("%w: field \"config\": is required", ErrBadRequest)
	}
	cfg, err := knowledge.ParseConfig(a.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: field \"config\": %v", ErrBadRequest, err)
	}
	full, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	ev, err := kEvent(req, "knowledge.configured/v1", kProject(req, ""), &events.KnowledgeConfigured{Config: full})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, cfg, nil
}

func phaseComplete(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a events.PhaseCompleted
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	data, err := req.fields()
	if err != nil {
		return nil, nil, err
	}
	project := kProject(req, a.Project)
	ev, _, err := dataEvent(req, "phase.completed/v1", project, req.Now, data)
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, map[string]any{"project": project, "phase": a.Phase, "event_id": ev.ID}, nil
}
