package knowledge

import (
	"fmt"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/safety"
)

// ModelName is the read model's name and key prefix. NB: must not change.
const ModelName = "knowledge"

// Model folds the knowledge events. The fold is the single decider of every
// transition (validation, reinforcement, promotion, archive): replaying the
// log gives the same entries, ids and announcements, and a promotion
// happens once however many submissions race for it.
type Model struct {
	// Base is the configuration used until a knowledge.configured/v1 event.
	Base Config

	// cache holds decoded pools by version (poolcache.go) for queries,
	// folds the pool states of folds between events (foldpool.go): both
	// shared by every store the model serves, which versions make safe.
	cache poolCache
	folds foldPools
}

// New returns the model with the default configuration.
func New() *Model { return &Model{Base: DefaultConfig()} }

var _ projector.PureRefuser = (*Model)(nil)

func (*Model) Name() string { return ModelName }

// Version 2 added the entry summaries (x/) and the summary key in
// the index; version 3 the pool versions (x/<pool>/a); version 4 the
// decision on each submission (d/<event id>); version 5 the content-safety
// rules of package safety (credentials, instructions, dangerous commands)
// and redacted rejected lessons; version 6 aging by pool clocks and the
// due and pending indexes (aging.go); version 7 the seed's categories at
// every door, max_phases on new entries, the master switch
// (knowledge.enabled), what each submission caused (decision promotions)
// and where a merged id went (m/<id>); version 8 no record of its own of
// the events folded (seen/<event id>: the folder's id index decides
// exactly once). An older store is rebuilt from the log.
func (*Model) Version() int { return 8 }

// fold is the state of folding one event.
type fold struct {
	tx  *poolTx // every write of the event goes through it
	ev  *events.Event
	cfg Config
	t   time.Time

	// decision is the decision on a submission (decide); caused and
	// archived collect what the event caused, stored with it.
	decision *Decision
	caused   []Promotion
	archived []string
}

// Folds implements projector.TypedModel: the knowledge kinds and
// phase.completed/v1.
func (m *Model) Folds(data events.Payload) bool {
	switch data.(type) {
	case *events.KnowledgeSubmitted, *events.KnowledgeQuarantined, *events.KnowledgeRestored,
		*events.KnowledgeOutcome, *events.KnowledgeInjected, *events.KnowledgePromoted,
		*events.KnowledgeCurated, *events.KnowledgeConfigured, *events.PhaseCompleted,
		*events.KnowledgeRescanned, *events.KnowledgeMerged:
		return true
	}
	return false
}

// Refuses implements projector.PureRefuser: of the knowledge kinds, Fold
// refuses a configuration that does not parse (ParseConfig), whatever the
// store holds, and nothing else. Unknown entries, repeated events and
// no-op commands change nothing, and the master switch never refuses a
// configuration.
func (m *Model) Refuses(_ *events.Event, data events.Payload) error {
	if d, ok := data.(*events.KnowledgeConfigured); ok {
		_, err := ParseConfig(d.Config)
		return err
	}
	return nil
}

// Prepare computes what a submission's fold reads of its text alone —
// the lesson's features and its content-safety verdict, each kept in a
// memo keyed by the exact text — off the fold lane (projector.Preparer),
// so that the fold of a burst of submissions (an import) finds them
// computed. It reads and writes nothing.
func (m *Model) Prepare(data events.Payload) {
	if d, ok := data.(*events.KnowledgeSubmitted); ok {
		memoFeatures(d.Lesson, d.Tags, d.Category)
		cachedSafety(d.Lesson)
	}
}

// Fold applies one event. Unknown entries, repeated events and no-op
// commands change nothing; only a malformed configuration is poison
// (Refuses).
func (m *Model) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	if !m.Folds(data) {
		return nil
	}
	// Exactly once by event id is the folder's (its id index): no event
	// reaches a model twice.
	cfg, err := LoadConfig(tx, m.Base)
	if err != nil {
		return err
	}
	if cfg.Refuses(ev.Type) {
		// The master switch is off: nothing changes; a submission's
		// decision says why.
		if _, ok := data.(*events.KnowledgeSubmitted); ok {
			return putJSON(tx, pfxDecision+ev.ID, &Decision{EventID: ev.ID, Outcome: OutcomeDisabled, Reason: DisabledReason})
		}
		return nil
	}
	f := &fold{tx: &poolTx{Tx: tx, cfg: cfg, pools: &m.folds, journal: &m.cache.journal, live: projector.LiveFold(tx)}, ev: ev, cfg: cfg, t: ev.Time.UTC()}
	err = f.apply(data)
	if err == nil {
		err = f.flushDecision()
	}
	f.tx.release(err == nil)
	return err
}

func (f *fold) apply(data events.Payload) error {
	switch d := data.(type) {
	case *events.KnowledgeSubmitted:
		return f.submitted(d)
	case *events.KnowledgeQuarantined:
		return f.quarantined(d)
	case *events.KnowledgeRestored:
		return f.restored(d)
	case *events.KnowledgeOutcome:
		return f.outcome(d)
	case *events.KnowledgeInjected:
		return f.injected(d)
	case *events.KnowledgePromoted:
		return f.promoted(d)
	case *events.KnowledgeCurated:
		return f.curated(orProject(d.Project, f.ev.Project))
	case *events.KnowledgeConfigured:
		c, err := ParseConfig(d.Config)
		if err != nil {
			return err
		}
		if err := putJSON(f.tx, keyConfig, c); err != nil {
			return err
		}
		f.cfg, f.tx.cfg = c, c
		return rebase(f.tx)
	case *events.PhaseCompleted:
		return f.phaseCompleted(orProject(d.Project, f.ev.Project), d.Phase)
	case *events.KnowledgeRescanned:
		return f.rescanned(d)
	case *events.KnowledgeMerged:
		return f.merged(d)
	}
	return nil
}

func orProject(p, env string) string {
	if p != "" {
		return p
	}
	if env != "" {
		return env
	}
	return events.DefaultProject
}

func (f *fold) emit(typ, project, subject, key string, data any) {
	f.tx.Emit(projector.Derived{Type: typ, Project: project, Subject: subject, Key: key, Data: data})
}

// SubmissionID is the id an entry created by a submission gets: the
// original id of an imported entry, else derived from the import's content
// or from the event id.
func SubmissionID(evID, project string, d *events.KnowledgeSubmitted) string {
	if d.Import != nil {
		if d.Import.OriginalID != "" {
			return d.Import.OriginalID
		}
		return DeriveID("import", d.Import.Format, project, d.Import.Digest)
	}
	return DeriveID("knowledge", evID)
}

// HiveIDFor is the id of the hive entry promoted from a swarm entry: one
// swarm entry can only ever make one hive entry.
func HiveIDFor(swarmID string) string { return DeriveID("hive", swarmID) }

func (f *fold) submitted(d *events.KnowledgeSubmitted) error {
	project := orProject(d.Project, f.ev.Project)
	id := SubmissionID(f.ev.ID, project, d)
	tier := d.Tier
	if tier == "" {
		tier = TierSwarm
	}
	if taken, err := IDTaken(f.tx, id); err != nil {
		return err
	} else if taken {
		// imported or submitted before: idempotent
		return f.decide(Decision{Outcome: OutcomeExisting, ID: id})
	}
	if imp := d.Import; imp != nil && (imp.Format == FormatSwarmRejected || imp.Format == FormatHiveRejected) {
		at := f.t
		if imp.CreatedAt != nil {
			at = imp.CreatedAt.UTC()
		}
		if err := f.decide(Decision{Outcome: OutcomeRejected, ID: id, Layer: imp.RejectionLayer, Reason: imp.RejectionReason}); err != nil {
			return err
		}
		return putJSON(f.tx, pfxReject+id, &Rejected{ID: id, Tier: tier, Project: project, Lesson: d.Lesson,
			Category: d.Category, Tags: d.Tags, Reason: imp.RejectionReason, Layer: imp.RejectionLayer,
			Kind: RejectedImport, Source: d.Source, EventID: f.ev.ID, At: at})
	}
	scope := d.Scope
	if scope == "" {
		scope = "global"
	}
	conf := 0.5
	if d.Confidence != nil {
		conf = *d.Confidence
	}
	phase := max(d.Phase, 1)

	// The pool is read from its held pool state (foldpool.go): no scan,
	// no JSON decode, no text feature recomputed; full entries are loaded
	// only for those this submission changes.
	lf := cachedFeatures(d.Lesson, d.Tags, d.Category)
	pool, err := f.tx.scanPool(tier, project, lf, f.cfg.DedupThreshold, true)
	if err != nil {
		return err
	}
	res := Result{Valid: true}
	if f.cfg.ValidationEnabled {
		// Only entries sharing a contradiction tag can be reported, so
		// validating against them alone gives the same result.
		res = Validate(d.Lesson, pool.shared, Meta{Category: d.Category, Scope: scope, Confidence: conf,
			Tags: d.Tags, feat: &lf})
	}
	if !res.Valid {
		if err := f.decide(Decision{Outcome: OutcomeRejected, ID: id, Layer: res.Layer, Reason: res.Reason, Warnings: res.Warnings}); err != nil {
			return err
		}
		return f.reject(&Rejected{ID: id, Tier: tier, Project: project, Lesson: d.Lesson, Category: d.Category,
			Tags: d.Tags, Reason: res.Reason, Layer: res.Layer, Kind: RejectedValidation, Source: d.Source})
	}

	// Near-duplicates reinforce (or, for imports, are dropped).
	if dupID := pool.nearest(); dupID != "" {
		dup, err := f.load(dupID)
		if err != nil {
			return err
		}
		return f.duplicate(dup, d, id, project, phase, tier, res.Warnings)
	}
	if err := f.decide(Decision{Outcome: OutcomeAdded, ID: id, Warnings: res.Warnings}); err != nil {
		return err
	}

	e := &Entry{ID: id, Tier: tier, Lesson: d.Lesson, Category: d.Category, Tags: append([]string{}, d.Tags...),
		Scope: scope, Confidence: conf, Status: StatusCandidate, ConfirmedBy: []Confirmation{},
		AutoGenerated: d.AutoGenerated, Warnings: res.Warnings, Source: d.Source, EventID: f.ev.ID,
		CreatedSeq: f.tx.Seq(), CreatedAt: f.t, UpdatedAt: f.t, Imported: d.Import != nil,
		MaxPhases: f.cfg.DefaultMaxPhases}
	if d.HiveEligible != nil {
		e.HiveEligible = *d.HiveEligible
	}
	if tier == TierHive {
		e.SourceProject, e.EncounterScore = project, f.cfg.InitialEncounterScore
		e.ConfirmedBy = []Confirmation{{Project: project, At: f.t}}
	} else {
		e.Project = project
		e.ConfirmedBy = []Confirmation{{Project: project, Phase: phase, At: f.t}}
	}
	if d.Import != nil {
		applyImport(e, d.Import, tier)
	}
	for _, i := range res.Conflicts {
		other, err := f.load(pool.sharedIDs[i])
		if err != nil {
			return err
		}
		e.Conflicts = append(e.Conflicts, other.ID)
		other.Conflicts = appendOnce(other.Conflicts, e.ID)
		if err := saveEntry(f.tx, other); err != nil {
			return err
		}
	}
	if err := saveEntry(f.tx, e); err != nil {
		return err
	}
	if tier == TierHive {
		return f.enforceCap(pool, e, TierHive, project, f.cfg.HiveMaxEntries)
	}
	if err := f.enforceCap(pool, e, TierSwarm, project, f.cfg.SwarmMaxEntries); err != nil {
		return err
	}
	if !e.Active() {
		return nil
	}
	if err := f.encounters(e); err != nil {
		return err
	}
	return f.lifecycle(e)
}

// load reads an entry a summary names.
func (f *fold) load(id string) (*Entry, error) {
	e, ok, err := GetEntry(f.tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("knowledge: summary of %s without its entry", id)
	}
	return e, nil
}

func appendOnce(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func (f *fold) duplicate(dup *Entry, d *events.KnowledgeSubmitted, id, project string, phase int, tier string, warnings []Issue) error {
	if d.Import != nil {
		// as the reference's migrator: near-duplicates are dropped
		return f.decide(Decision{Outcome: OutcomeDropped, ID: id, DuplicateOf: dup.ID})
	}
	if dup.Status == StatusQuarantined {
		reason := "near-duplicate of quarantined entry " + dup.ID
		if err := f.decide(Decision{Outcome: OutcomeRejected, ID: id, DuplicateOf: dup.ID, Layer: LayerSemantic, Reason: reason, Warnings: warnings}); err != nil {
			return err
		}
	} else if err := f.decide(Decision{Outcome: OutcomeReinforced, ID: id, DuplicateOf: dup.ID, Warnings: warnings}); err != nil {
		return err
	}
	switch {
	case dup.Status == StatusQuarantined:
		return f.reject(&Rejected{ID: id, Tier: tier, Project: project, Lesson: d.Lesson, Category: d.Category,
			Tags: d.Tags, Reason: "near-duplicate of quarantined entry " + dup.ID, Layer: LayerSemantic,
			Kind: RejectedDuplicate, Source: d.Source})
	case dup.Status == StatusArchived:
		// Learned again: the archived lesson comes back as a candidate.
		dup.Status, dup.ArchiveReason, dup.PhasesAlive, dup.UpdatedAt = StatusCandidate, "", 0, f.t
	}
	if tier == TierHive {
		counted, advanced := Encounter(dup, project, f.t, f.cfg)
		if !counted {
			return saveEntry(f.tx, dup)
		}
		if advanced {
			f.emit("knowledge.advanced/v1", project, dup.ID, "advanced:"+dup.ID, &events.KnowledgeAdvanced{
				EntryID: dup.ID, Tier: TierHive, From: StatusCandidate, To: StatusEstablished})
		}
		return saveEntry(f.tx, dup)
	}
	Reinforce(dup, project, phase, f.t)
	if err := saveEntry(f.tx, dup); err != nil {
		return err
	}
	if err := f.encounters(dup); err != nil {
		return err
	}
	return f.lifecycle(dup)
}

// reject keeps a rejected submission. INVARIANT: the rejected store, its
// exports and the announcement never hold a credential: the lesson is kept
// redacted.
func (f *fold) reject(r *Rejected) error {
	r.EventID, r.At = f.ev.ID, f.t
	r.Lesson, _ = safety.Redact(r.Lesson)
	if err := putJSON(f.tx, pfxReject+r.ID, r); err != nil {
		return err
	}
	f.emit("knowledge.rejected/v1", r.Project, r.ID, "rejected:"+r.ID, &events.KnowledgeRejected{
		ID: r.ID, Tier: r.Tier, Project: r.Project, Layer: r.Layer, Reason: r.Reason, Lesson: r.Lesson})
	return nil
}

// applyImport carries the state an entry had in its file.
func applyImport(e *Entry, imp *events.KnowledgeImport, tier string) {
	switch imp.Status {
	case StatusCandidate, StatusEstablished, StatusPromoted, StatusArchived:
		e.Status = imp.Status
	case StatusQuarantined, "quarantined_unactionable":
		// The quarantine as the file gives it (lore's export writes it);
		// a file without it (the reference's) gets the defaults.
		e.Status, e.OriginalStatus = StatusQuarantined, StatusCandidate
		e.QuarantineReason = "imported quarantined"
		switch imp.OriginalStatus {
		case StatusCandidate, StatusEstablished, StatusPromoted, StatusArchived:
			e.OriginalStatus = imp.OriginalStatus
		}
		if imp.QuarantineReason != "" {
			e.QuarantineReason = imp.QuarantineReason
		}
		if imp.QuarantinedAt != nil {
			e.QuarantinedAt = imp.QuarantinedAt.UTC()
		}
		e.ReportedBy = imp.ReportedBy
	}
	if imp.CreatedAt != nil {
		e.CreatedAt = imp.CreatedAt.UTC()
	}
	if len(imp.ConfirmedBy) > 0 {
		e.ConfirmedBy = e.ConfirmedBy[:0]
		for _, c := range imp.ConfirmedBy {
			at := e.CreatedAt
			if c.At != nil {
				at = c.At.UTC()
			}
			p := c.Project
			if p == "" && tier == TierSwarm {
				p = e.Project
			}
			e.ConfirmedBy = append(e.ConfirmedBy, Confirmation{Project: p, Phase: c.Phase, At: at})
		}
	} else if imp.Format == FormatContextMD || imp.Format == FormatSwarm || imp.Format == FormatHive {
		e.ConfirmedBy = []Confirmation{} // the file recorded no confirmation
	}
	e.PhasesAlive = imp.PhasesAlive
	if imp.MaxPhases > 0 {
		e.MaxPhases = imp.MaxPhases
	}
	e.Outcomes = Outcomes{Shown: imp.Shown, Applied: imp.Applied, Helpful: imp.Helpful, Harmful: imp.Harmful}
	if tier == TierHive {
		if imp.SourceProject != "" {
			e.SourceProject = imp.SourceProject
		}
		if imp.EncounterScore != nil {
			e.EncounterScore = *imp.EncounterScore
		}
	}
}

// enforceCap archives the lowest-value active entries over max (K4).
// pool is the tier's pool as scanned at the start of the change; fresh is
// the entry this event adds to it (held in full: it may be a victim).
// Victims are loaded from the Tx, so they carry every write of this event;
// they are read from the pool's cap order (poolTx.capVictims), fresh
// ordered last as if appended to the pool scanned at the start.
func (f *fold) enforceCap(_ *poolScan, fresh *Entry, tier, project string, max int) error {
	ids, err := f.tx.capVictims(tier, project, fresh, max)
	if err != nil {
		return err
	}
	for _, id := range ids {
		v := fresh
		if id != fresh.ID {
			if v, err = f.load(id); err != nil {
				return err
			}
		}
		Archive(v, ArchiveCap, f.t)
		if err := saveEntry(f.tx, v); err != nil {
			return err
		}
		f.archived = append(f.archived, v.ID)
		f.emit("knowledge.archived/v1", project, v.ID, "archived:"+v.ID, &events.KnowledgeArchived{
			EntryID: v.ID, Tier: tier, Project: v.Project, Reason: ArchiveCap})
	}
	return nil
}

// encounters counts a confirmation by e's project of every active hive
// entry e near-duplicates.
func (f *fold) encounters(e *Entry) error {
	if !f.cfg.HiveEnabled {
		return nil
	}
	hive, err := f.tx.scanPool(TierHive, "", bigramsOnly(cachedFeatures(e.Lesson, e.Tags, e.Category)),
		f.cfg.DedupThreshold, false)
	if err != nil {
		return err
	}
	for _, id := range hive.nearActive {
		h, err := f.load(id)
		if err != nil {
			return err
		}
		counted, advanced := Encounter(h, e.Project, f.t, f.cfg)
		if !counted {
			continue
		}
		if err := saveEntry(f.tx, h); err != nil {
			return err
		}
		if advanced {
			f.emit("knowledge.advanced/v1", e.Project, h.ID, "advanced:"+h.ID, &events.KnowledgeAdvanced{
				EntryID: h.ID, Tier: TierHive, From: StatusCandidate, To: StatusEstablished})
		}
	}
	return nil
}

// lifecycle runs one lifecycle step of a swarm entry, then its hive check.
func (f *fold) lifecycle(e *Entry) error {
	if from, to, moved := AutoPromote(e, f.t, f.cfg); moved {
		if err := saveEntry(f.tx, e); err != nil {
			return err
		}
		f.emit("knowledge.advanced/v1", e.Project, e.ID, "advanced:"+e.ID+":"+to, &events.KnowledgeAdvanced{
			EntryID: e.ID, Tier: TierSwarm, From: from, To: to})
	}
	return f.promote(e, HiveRoute(e, f.t, f.cfg))
}

// promote makes the hive entry of swarm entry e by route ("" does nothing).
// INVARIANT: a swarm entry makes at most one hive entry (id HiveIDFor), so
// replays and racing submissions give one promotion and one announcement.
func (f *fold) promote(e *Entry, route string) error {
	if route == "" || e.PromotedTo != "" || !f.cfg.HiveEnabled {
		return nil
	}
	hid := HiveIDFor(e.ID)
	if taken, err := IDTaken(f.tx, hid); err != nil || taken {
		return err
	}
	ef := cachedFeatures(e.Lesson, e.Tags, e.Category)
	hive, err := f.tx.scanPool(TierHive, "", ef, f.cfg.DedupThreshold, true)
	if err != nil {
		return err
	}
	if hive.nearAny {
		return nil // already in the hive: encounters count it
	}
	if f.cfg.ValidationEnabled {
		conf := 0.5
		if route == RouteManual {
			conf = 1
		}
		res := Validate(e.Lesson, hive.shared, Meta{Category: e.Category, Scope: e.Scope, Confidence: conf,
			Tags: e.Tags, feat: &ef})
		if !res.Valid {
			return f.reject(&Rejected{ID: hid, Tier: TierHive, Project: e.Project, Lesson: e.Lesson,
				Category: e.Category, Tags: e.Tags, Reason: res.Reason, Layer: res.Layer, Kind: RejectedValidation})
		}
	}
	h := NewHiveEntry(e, hid, route, f.t, f.cfg)
	h.EventID, h.CreatedSeq, h.MaxPhases = f.ev.ID, f.tx.Seq(), f.cfg.DefaultMaxPhases
	e.PromotedTo, e.UpdatedAt = hid, f.t
	if err := saveEntry(f.tx, e); err != nil {
		return err
	}
	if err := saveEntry(f.tx, &h); err != nil {
		return err
	}
	f.emit("knowledge.hive_promoted/v1", e.Project, hid, "hive:"+hid, &events.KnowledgeHivePromoted{
		HiveID: hid, SwarmID: e.ID, Route: route, SourceProject: e.Project, Lesson: e.Lesson})
	f.caused = append(f.caused, Promotion{HiveID: hid, SwarmID: e.ID, Route: route})
	return f.enforceCap(hive, &h, TierHive, e.Project, f.cfg.HiveMaxEntries)
}

func (f *fold) phaseCompleted(project string, phase int) error {
	marker := fmt.Sprintf("%s%s/%d", pfxPhase, events.EncodeToken(project), phase)
	if ok, err := has(f.tx, marker); err != nil || ok {
		return err // one sweep per phase of a project
	}
	if err := f.tx.Set([]byte(marker), nil); err != nil {
		return err
	}
	if f.cfg.SweepEnabled {
		// Only the entries due at this sweep change (aging.go): the
		// others age by the pool's clock.
		swarm, err := dueEntries(f.tx, sumScope(TierSwarm, project))
		if err != nil {
			return err
		}
		if err := f.sweep(swarm, TierSwarm, project); err != nil {
			return err
		}
		if f.cfg.HiveEnabled {
			hive, err := dueEntries(f.tx, sumScope(TierHive, ""))
			if err != nil {
				return err
			}
			if err := f.sweep(hive, TierHive, project); err != nil {
				return err
			}
		}
	}
	return f.curated(project)
}

func (f *fold) sweep(entries []*Entry, tier, project string) error {
	aged := SweepAged(entries, f.cfg.DefaultMaxPhases, f.t, f.cfg)
	todos := SweepTodos(entries, f.cfg.TodoMaxPhases, f.t)
	saved := map[*Entry]bool{}
	for _, e := range append(aged.Changed, todos.Changed...) {
		if err := saveEntry(f.tx, e); err != nil {
			return err
		}
		saved[e] = true
	}
	for _, e := range entries {
		if !saved[e] { // due but unchanged: indexed again at the new clock
			if err := saveEntry(f.tx, e); err != nil {
				return err
			}
		}
	}
	announce := func(ids []string, reason string) {
		for _, id := range ids {
			f.emit("knowledge.archived/v1", project, id, "archived:"+id+":"+reason, &events.KnowledgeArchived{
				EntryID: id, Tier: tier, Project: project, Reason: reason})
		}
	}
	announce(aged.ArchivedIDs, ArchiveTTL)
	announce(todos.RemovedIDs, ArchiveTTLTodo)
	return nil
}

// curated runs the lifecycle pass of every active swarm entry of project:
// of the pending ones (aging.go), in creation order; no other can move.
func (f *fold) curated(project string) error {
	swarm, err := pendingEntries(f.tx, project, f.t)
	if err != nil {
		return err
	}
	for _, e := range swarm {
		if !e.Active() {
			continue
		}
		if err := f.lifecycle(e); err != nil {
			return err
		}
	}
	return nil
}
