package learning

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// ModelName is the read model's name and key prefix. NB: must not change.
const ModelName = "learning"

// baseVersion is the fold's format version; the configuration is hashed in.
// 1: JSON records; 2: binary records (codec.go); 3: each outcome's score
// kept by event id (o/, Model.Outcome); 4: the configuration folded from
// learning.configured/v1 (g/), evidence with every verdict and
// rehabilitation under the evidence policy; 5: pattern.observations/v1
// folded (a store of an older version may lack them).
const baseVersion = 5

// Model folds outcomes, feedback, pattern observations, manual pattern
// events, errors and clock ticks into criterion weights, pattern maturity,
// anti-patterns and the error accumulator.
//
// INVARIANT: a fold step costs O(1) reads and writes per criterion and
// pattern it touches (decayed sums relative to an epoch, DecaySums), except
// a pattern.reset (deletes that pattern's terms) and a clock tick (visits
// every pattern record once).
type Model struct {
	// cfg is the base configuration, in force until the first
	// learning.configured/v1 (ConfigAt).
	cfg   Config
	cache configCache
	// unconfigured is the last fold Tx whose store held no configuration
	// (see foldConfig); nil when none.
	unconfigured atomic.Pointer[unconfiguredTx]
}

// unconfiguredTx pins a Tx found without a configuration (pinned, its
// identity cannot be taken by another Tx while it is remembered).
type unconfiguredTx struct{ tx projector.Tx }

// folder folds one event (or answers one query) with the configuration in
// force at that point of the log.
type folder struct {
	cfg Config
}

var _ projector.Model = (*Model)(nil)

// New returns the model for cfg; the zero Config means DefaultConfig.
func New(cfg Config) (*Model, error) {
	if cfg.Learning == (LearningConfig{}) && cfg.Maturity == (MaturityConfig{}) {
		cfg = DefaultConfig()
	}
	if cfg.Evidence == (EvidenceConfig{}) {
		cfg.Evidence = DefaultEvidenceConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Model{cfg: cfg}, nil
}

// Name is the key prefix of the read model.
func (m *Model) Name() string { return ModelName }

// Version changes with the fold's format and with the configuration (a
// changed half-life or threshold changes what the fold stores).
func (m *Model) Version() int {
	raw, _ := json.Marshal(m.cfg)
	h := fnv.New32a()
	h.Write(raw)
	if isDefault(m.cfg) {
		return baseVersion
	}
	return baseVersion*1_000_000 + int(h.Sum32()%1_000_000)
}

func isDefault(c Config) bool {
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(DefaultConfig())
	return string(a) == string(b)
}

// Config returns the model's base configuration (in force until the
// first learning.configured/v1; ConfigAt reads the one in force).
func (m *Model) Config() Config { return m.cfg }

// criterionRec is a criterion's state. NB: stored (codec.go); the JSON tags
// are those of format 1.
type criterionRec struct {
	Criterion     string     `json:"criterion"`
	HalfLifeDays  float64    `json:"half_life_days"`
	Sums          DecaySums  `json:"sums"`
	HelpfulCount  int        `json:"helpful_count"`
	HarmfulCount  int        `json:"harmful_count"`
	NeutralCount  int        `json:"neutral_count"`
	LastValidated *time.Time `json:"last_validated,omitempty"`
	FirstSeen     time.Time  `json:"first_seen"`
	LastSeen      time.Time  `json:"last_seen"`
	Deprecated    bool       `json:"deprecated"`
	DeprecatedAt  *time.Time `json:"deprecated_at,omitempty"`
}

// patternRec is a pattern's state. NB: stored (codec.go).
type patternRec struct {
	Pattern  Pattern  `json:"pattern"`
	Maturity Maturity `json:"maturity"`
	// Sums are the decayed helpful/harmful maturity feedback.
	Sums         DecaySums `json:"sums"`
	NeutralCount int       `json:"neutral_count"`
	// StateReason explains the last transition of Maturity.State.
	StateReason string    `json:"state_reason,omitempty"`
	StateSince  time.Time `json:"state_since"`
	// Inverted is sticky until a reset; AntiReason is refreshed while the
	// inversion rule holds.
	Inverted   bool       `json:"inverted"`
	AntiReason string     `json:"anti_reason,omitempty"`
	InvertedAt *time.Time `json:"inverted_at,omitempty"`
	ResetAt    *time.Time `json:"reset_at,omitempty"`
	// Rehabilitations counts the inversions the evidence policy ended;
	// RehabReason and RehabilitatedAt describe the last one.
	Rehabilitations int        `json:"rehabilitations,omitempty"`
	RehabReason     string     `json:"rehab_reason,omitempty"`
	RehabilitatedAt *time.Time `json:"rehabilitated_at,omitempty"`
}

// beadRec is a bead's error totals and last outcome. NB: stored (codec.go).
type beadRec struct {
	Stats       ErrorStats   `json:"stats"`
	Outcomes    int          `json:"outcomes"`
	LastOutcome *OutcomeView `json:"last_outcome,omitempty"`
}

// OutcomeView is how an outcome was scored.
type OutcomeView struct {
	EventID     string       `json:"event_id"`
	Time        time.Time    `json:"time"`
	Success     bool         `json:"success"`
	Type        FeedbackType `json:"type"`
	Raw         float64      `json:"raw"`
	Reasoning   string       `json:"reasoning"`
	ErrorCount  int          `json:"error_count"`
	FailureMode string       `json:"failure_mode,omitempty"`
	Criteria    []string     `json:"criteria,omitempty"`
	Patterns    []string     `json:"patterns,omitempty"`
}

// record is a stored record in its binary form (codec.go).
type record interface {
	encode(e *enc)
	decode(d *dec) error
}

// get decodes the record at k into v; found is false when absent.
func get(tx projector.Reader, k []byte, v record) (bool, error) {
	raw, ok, err := tx.Get(k)
	if err != nil || !ok {
		return false, err
	}
	if err := v.decode(newDec(raw)); err != nil {
		return false, fmt.Errorf("decode %q: %w", k, err)
	}
	return true, nil
}

// put stores v at k.
func put(tx projector.Tx, k []byte, v record) error {
	size := 192
	if _, ok := v.(*patternRec); ok {
		size = 512 // ten example bead ids and a dozen times
	}
	e := enc{b: make([]byte, 0, size)}
	v.encode(&e)
	if e.err != nil {
		return fmt.Errorf("encode %q: %w", k, e.err)
	}
	return tx.Set(k, e.b)
}

func projectOf(ev *events.Event) string {
	if ev.Project == "" {
		return events.DefaultProject
	}
	return ev.Project
}

// Folds implements projector.TypedModel.
func (m *Model) Folds(data events.Payload) bool {
	switch data.(type) {
	case *events.OutcomeRecorded, *events.FeedbackRecorded, *events.PatternObserved, *events.PatternObservations, *events.PatternPromoted,
		*events.PatternDeprecated, *events.PatternReset, *events.ErrorRecorded, *events.ErrorResolved,
		*events.ClockTicked, *events.LearningConfigured:
		return true
	}
	return false
}

// Fold applies one event with the configuration in force before it.
func (m *Model) Fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	if !m.Folds(data) {
		return nil
	}
	cfg, err := m.foldConfig(tx)
	if err != nil {
		return err
	}
	if _, ok := data.(*events.LearningConfigured); ok {
		// The Tx's store may hold a configuration from now on.
		defer m.unconfigured.Store(nil)
	}
	return (&folder{cfg: cfg}).fold(tx, ev, data)
}

// foldConfig is ConfigAt(tx) for a fold, without reading the store while
// it is known to hold no configuration: looking up an absent key costs a
// probe of every table of the store, which was most of what folding an
// observation cost.
//
// INVARIANT: a store a fold Tx reads gains a configuration only by this
// model folding a learning.configured/v1 through that Tx (a model alone
// writes its keys, a Tx reads one store), and Fold forgets the Tx once
// it folded one (on the fold's goroutine: the next fold through that Tx
// reads the store again); writes taken back (a poison event, a batch folded again)
// only remove a configuration. So while unconfigured names tx, tx's store
// holds none. Only a Tx that compares by identity is remembered (identity).
func (m *Model) foldConfig(tx projector.Tx) (Config, error) {
	if u := m.unconfigured.Load(); u != nil && u.tx == tx {
		return m.cfg, nil
	}
	raw, ok, err := tx.Get(configKey)
	if err != nil {
		return m.cfg, err
	}
	if !ok {
		if identity(reflect.TypeOf(tx)) {
			m.unconfigured.Store(&unconfiguredTx{tx})
		}
		return m.cfg, nil
	}
	return m.cache.decode(raw)
}

// identity reports whether values of t compare by identity without panic:
// pointers, and structs of such fields and scalars (no interface, whose
// comparison can panic, and no string or array of data).
func identity(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint64:
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			if !identity(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

func (m *folder) fold(tx projector.Tx, ev *events.Event, data events.Payload) error {
	switch d := data.(type) {
	case *events.LearningConfigured:
		return m.reconfigure(tx, ev, d)
	case *events.OutcomeRecorded:
		return m.foldOutcome(tx, ev, d)
	case *events.FeedbackRecorded:
		typ, err := ParseFeedbackType("data.type", d.Type)
		if err != nil {
			return err
		}
		if !finite(d.RawValue) || d.RawValue < 0 {
			return badInput("data.raw_value", "must be a number >= 0")
		}
		return m.addCriterionFeedback(tx, ev, d.Criterion, typ, d.RawValue)
	case *events.PatternObserved:
		return m.observed(tx, ev, single, d)
	case *events.PatternObservations:
		return m.observations(tx, ev, d)
	case *events.PatternPromoted:
		return m.manual(tx, ev, d.PatternID, Proven, d.Reason)
	case *events.PatternDeprecated:
		return m.manual(tx, ev, d.PatternID, Deprecated, d.Reason)
	case *events.PatternReset:
		return m.reset(tx, ev, d.PatternID, d.Reason)
	case *events.ErrorRecorded:
		return m.foldError(tx, ev, d)
	case *events.ErrorResolved:
		return m.foldResolved(tx, ev, d)
	case *events.ClockTicked:
		return m.foldTick(tx, ev)
	}
	return nil
}

func (m *folder) foldOutcome(tx projector.Tx, ev *events.Event, o *events.OutcomeRecorded) error {
	proj := projectOf(ev)
	var bead beadRec
	bk := key(kBead, proj, o.BeadID)
	if _, err := get(tx, bk, &bead); err != nil {
		return err
	}
	errCount := bead.Stats.Total // SPEC §4: defaults to the bead's total
	if o.ErrorCount != nil {
		errCount = *o.ErrorCount
	}
	sig := Signals{BeadID: o.BeadID, DurationMs: float64(o.DurationMs), ErrorCount: float64(errCount),
		RetryCount: float64(o.RetryCount), Success: o.Success, Time: ev.Time}
	scored, err := ScoreImplicitFeedback(sig, ev.Time, m.cfg.Learning)
	if err != nil {
		return err
	}
	mode := o.FailureMode
	if !o.Success && mode == "" {
		mode = ClassifyFailure(o.FailureDetails)
	}
	view := &OutcomeView{EventID: ev.ID, Time: ev.Time, Success: o.Success, Type: scored.Type, Raw: scored.Raw,
		Reasoning: scored.Reasoning, ErrorCount: errCount, FailureMode: mode}
	for _, c := range o.Criteria {
		if slices.Contains(view.Criteria, c) {
			continue
		}
		view.Criteria = append(view.Criteria, c)
		// The feedback's raw value is the outcome's score decayed to its own
		// time, that is the raw score (outcomeToFeedback).
		if err := m.addCriterionFeedback(tx, ev, c, scored.Type, scored.Raw); err != nil {
			return err
		}
	}
	// The strategy, then the extracted strategies in table order (their
	// ids are precomputed); a pattern named twice is fed once.
	extracted := extractStrategies(o.Decomposition)
	for i := -1; i < len(extracted); i++ {
		var c, id string
		if i < 0 {
			if o.Strategy == "" {
				continue
			}
			c, id = o.Strategy, PatternID(o.Strategy)
		} else {
			s := &strategies[extracted[i]]
			c, id = s.label, s.id
		}
		if slices.Contains(view.Patterns, id) {
			continue
		}
		view.Patterns = append(view.Patterns, id)
		// The seed's workflow: an observation succeeds when the outcome
		// scored helpful; the maturity feedback has the outcome's type.
		if err := m.observePattern(tx, ev, single, id, c, scored.Type == Helpful, scored.Type, o.BeadID, nil); err != nil {
			return err
		}
	}
	bead.Outcomes++
	bead.LastOutcome = view
	raw, err := json.Marshal(view)
	if err != nil {
		return fmt.Errorf("encode outcome %s: %w", ev.ID, err)
	}
	if err := tx.Set(key(kOutcome, proj, ev.ID), raw); err != nil {
		return err
	}
	return put(tx, bk, &bead)
}

func (m *folder) addCriterionFeedback(tx projector.Tx, ev *events.Event, criterion string, typ FeedbackType, v float64) error {
	proj := projectOf(ev)
	ck := key(kCriterion, proj, criterion)
	var rec criterionRec
	found, err := get(tx, ck, &rec)
	if err != nil {
		return err
	}
	if !found {
		rec = criterionRec{Criterion: criterion, HalfLifeDays: m.cfg.CriterionHalfLife(criterion), FirstSeen: ev.Time}
	}
	switch typ {
	case Helpful:
		rec.HelpfulCount++
		if rec.LastValidated == nil || ev.Time.After(*rec.LastValidated) {
			t := ev.Time
			rec.LastValidated = &t
		}
	case Harmful:
		rec.HarmfulCount++
	default:
		rec.NeutralCount++
	}
	if ev.Time.After(rec.LastSeen) {
		rec.LastSeen = ev.Time
	}
	rec.Sums.Add(ev.Time, typ, v, rec.HalfLifeDays)
	if typ != Neutral {
		if err := tx.Set(termKey(termsPrefix(kCriterionT, proj, criterion), ev.Time, tx.Seq()), termValue(typ, v)); err != nil {
			return err
		}
	}
	dep := ShouldDeprecateCriterion(rec.HelpfulCount, rec.HarmfulCount, m.cfg.Learning)
	if dep && !rec.Deprecated {
		t := ev.Time
		rec.DeprecatedAt = &t
		total := rec.HelpfulCount + rec.HarmfulCount
		h, x, _ := rec.Sums.At(maxTime(ev.Time, rec.Sums), rec.HalfLifeDays)
		tx.Emit(projector.Derived{Type: "criterion.deprecated/v1", Project: proj, Subject: criterion,
			Key: criterion + ":deprecated", Data: &events.CriterionDeprecated{Criterion: criterion,
				HelpfulCount: rec.HelpfulCount, HarmfulCount: rec.HarmfulCount,
				HarmfulRatio: float64(rec.HarmfulCount) / float64(total), Weight: CriterionWeight(h, x)}})
	}
	rec.Deprecated = dep
	return put(tx, ck, &rec)
}

func (m *folder) manual(tx projector.Tx, ev *events.Event, id string, to MaturityState, reason string) error {
	proj := projectOf(ev)
	rec, err := m.loadPattern(tx, proj, id, "", ev.Time)
	if err != nil {
		return err
	}
	at := maxTime(ev.Time, rec.Sums)
	m.reevaluate(tx, proj, &rec, at, "time")
	from := rec.Maturity.State
	switch to {
	case Proven:
		mt, _, err := Promote(rec.Maturity, reason, ev.Source, at)
		if err != nil {
			return err
		}
		rec.Maturity = mt
	case Deprecated:
		rec.Maturity = Deprecate(rec.Maturity, reason, ev.Source, at)
	}
	// The newest manual event wins, with its reason.
	rec.Maturity.Manual = &Manual{State: to, Reason: reason, At: at, Source: ev.Source}
	if rec.Maturity.State != from {
		rec.StateSince = at
		rec.StateReason = "manual " + string(to) + ": " + reason
		tx.Emit(projector.Derived{Type: "pattern.maturity_changed/v1", Project: proj, Subject: id,
			Key: id + ":" + string(to), Data: &events.PatternMaturityChanged{PatternID: id, Content: rec.Pattern.Content,
				From: string(from), To: string(to), Reason: rec.StateReason, Manual: true}})
	}
	return put(tx, key(kPattern, proj, id), &rec)
}

func (m *folder) reset(tx projector.Tx, ev *events.Event, id, reason string) error {
	proj := projectOf(ev)
	old, err := m.loadPattern(tx, proj, id, "", ev.Time)
	if err != nil {
		return err
	}
	// Delete the terms (O(terms), once per reset).
	prefix := termsPrefix(kPatternT, proj, id)
	var dead [][]byte
	if err := tx.Scan(prefix, func(k, _ []byte) error {
		dead = append(dead, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range dead {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	t := ev.Time
	rec := patternRec{
		Pattern: Pattern{ID: id, Content: old.Pattern.Content, Kind: KindPattern, CreatedAt: old.Pattern.CreatedAt,
			UpdatedAt: t, Tags: old.Pattern.Tags, ExampleBeads: []string{}},
		Maturity:   Maturity{PatternID: id, State: Candidate, LastValidated: t, PromotedAt: old.Maturity.PromotedAt, DeprecatedAt: old.Maturity.DeprecatedAt},
		StateSince: t, StateReason: "reset: " + reason, ResetAt: &t,
	}
	if old.Maturity.State != Candidate {
		tx.Emit(projector.Derived{Type: "pattern.maturity_changed/v1", Project: proj, Subject: id,
			Key: id + ":" + string(Candidate), Data: &events.PatternMaturityChanged{PatternID: id, Content: rec.Pattern.Content,
				From: string(old.Maturity.State), To: string(Candidate), Reason: rec.StateReason, Manual: true}})
	}
	return put(tx, key(kPattern, proj, id), &rec)
}

// foldTick re-evaluates every pattern at the tick's time and announces the
// transitions caused only by time passing.
func (m *folder) foldTick(tx projector.Tx, ev *events.Event) error {
	type change struct {
		k   []byte
		rec patternRec
	}
	var changes []change
	err := tx.Scan([]byte{kPattern, 0}, func(k, v []byte) error {
		var rec patternRec
		if err := rec.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		proj := string(k[2 : len(k)-len(rec.Pattern.ID)-1])
		if m.reevaluate(tx, proj, &rec, maxTime(ev.Time, rec.Sums), "time passed") {
			changes = append(changes, change{append([]byte(nil), k...), rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range changes {
		if err := put(tx, c.k, &c.rec); err != nil {
			return err
		}
	}
	return nil
}

func (m *folder) foldError(tx projector.Tx, ev *events.Event, e *events.ErrorRecorded) error {
	if !ValidErrorType(e.ErrorType) {
		return badInput("data.error_type", "%q is not one of validation, timeout, conflict, tool_failure, unknown", e.ErrorType)
	}
	proj := projectOf(ev)
	seq := string(u64(tx.Seq()))
	entry := ErrorEntry{ID: ev.ID, BeadID: e.BeadID, ErrorType: e.ErrorType, Message: e.Message,
		StackTrace: e.StackTrace, ToolName: e.ToolName, Context: e.Context, Time: ev.Time}
	if err := put(tx, key(kError, proj, e.BeadID, seq), &entry); err != nil {
		return err
	}
	if err := tx.Set(key(kErrorID, proj, ev.ID), []byte(e.BeadID+"\x00"+seq)); err != nil {
		return err
	}
	var bead beadRec
	bk := key(kBead, proj, e.BeadID)
	if _, err := get(tx, bk, &bead); err != nil {
		return err
	}
	bead.Stats.Total++
	bead.Stats.Unresolved++
	bead.Stats.ByType.Add(e.ErrorType, 1)
	return put(tx, bk, &bead)
}

// foldResolved marks an error resolved; an unknown or already resolved id
// changes nothing (the command refuses unknown ids before append).
func (m *folder) foldResolved(tx projector.Tx, ev *events.Event, r *events.ErrorResolved) error {
	proj := projectOf(ev)
	ref, ok, err := tx.Get(key(kErrorID, proj, r.ErrorID))
	if err != nil || !ok {
		return err
	}
	bead, seq, found := cutNul(ref)
	if !found || bead != r.BeadID {
		return nil
	}
	ek := key(kError, proj, bead, seq)
	var entry ErrorEntry
	if ok, err := get(tx, ek, &entry); err != nil || !ok || entry.Resolved {
		return err
	}
	entry.Resolved = true
	if err := put(tx, ek, &entry); err != nil {
		return err
	}
	var b beadRec
	bk := key(kBead, proj, bead)
	if _, err := get(tx, bk, &b); err != nil {
		return err
	}
	b.Stats.Unresolved--
	return put(tx, bk, &b)
}

func cutNul(b []byte) (string, string, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), string(b[i+1:]), true
		}
	}
	return "", "", false
}
