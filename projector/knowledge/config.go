package knowledge

import (
	"bytes"
	"fmt"
	"math"

	json "github.com/goccy/go-json"
)

// Config holds every knowledge.* key of opencode-swarm's configuration with
// its default. Keys the reference declares but lore has no use for (the
// delegate block, nudges, enrichment) are accepted and kept so a config file
// written for the reference loads unchanged.
//
// NB: the JSON names must not change: they are config files and
// knowledge.configured/v1 events.
type Config struct {
	Enabled                 bool          `json:"enabled"`
	SwarmMaxEntries         int           `json:"swarm_max_entries"`
	HiveMaxEntries          int           `json:"hive_max_entries"`
	AutoPromoteDays         int           `json:"auto_promote_days"`
	MaxInjectCount          int           `json:"max_inject_count"`
	DelegateMaxInjectCount  int           `json:"delegate_max_inject_count"`
	InjectCharBudget        int           `json:"inject_char_budget"`
	MaxLessonDisplayChars   int           `json:"max_lesson_display_chars"`
	DedupThreshold          float64       `json:"dedup_threshold"`
	ScopeFilter             []string      `json:"scope_filter"`
	HiveEnabled             bool          `json:"hive_enabled"`
	RejectedMaxEntries      int           `json:"rejected_max_entries"`
	ValidationEnabled       bool          `json:"validation_enabled"`
	EvergreenConfidence     float64       `json:"evergreen_confidence"`
	EvergreenUtility        float64       `json:"evergreen_utility"`
	LowUtilityThreshold     float64       `json:"low_utility_threshold"`
	MinRetrievalsForUtility int           `json:"min_retrievals_for_utility"`
	SchemaVersion           int           `json:"schema_version"`
	DirectiveMinConfidence  float64       `json:"directive_min_confidence"`
	SameProjectWeight       float64       `json:"same_project_weight"`
	CrossProjectWeight      float64       `json:"cross_project_weight"`
	MinEncounterScore       float64       `json:"min_encounter_score"`
	InitialEncounterScore   float64       `json:"initial_encounter_score"`
	EncounterIncrement      float64       `json:"encounter_increment"`
	MaxEncounterScore       float64       `json:"max_encounter_score"`
	DefaultMaxPhases        int           `json:"default_max_phases"`
	TodoMaxPhases           int           `json:"todo_max_phases"`
	SweepEnabled            bool          `json:"sweep_enabled"`
	RealtimeLearningNudge   LearningNudge `json:"realtime_learning_nudge"`
	Enrichment              Enrichment    `json:"enrichment"`
}

// LearningNudge is accepted for compatibility; lore does not nudge.
type LearningNudge struct {
	Enabled              bool `json:"enabled"`
	FirstAfterToolCalls  int  `json:"first_after_tool_calls"`
	RepeatAfterToolCalls int  `json:"repeat_after_tool_calls"`
}

// Enrichment is accepted for compatibility; lore calls no LLM.
type Enrichment struct {
	MaxCallsPerDay int    `json:"max_calls_per_day"`
	QuotaWindow    string `json:"quota_window"`
}

// DisabledReason is why every knowledge write is refused while the master
// switch knowledge.enabled is false (the reference wires no knowledge hook
// then): no lesson is added, imported, promoted, curated, quarantined,
// restored or rated, no sweep runs, and an injection shows nothing. The
// entries stay stored and readable; knowledge.configured/v1 is the way back.
const DisabledReason = "knowledge is disabled (knowledge.enabled is false); turn it on with: lore knowledge config --set enabled=true"

// Refuses reports whether the configuration refuses an event of this type:
// while knowledge.enabled is false, every knowledge event but
// knowledge.configured/v1. INVARIANT: the fold and every door ask this one
// rule.
func (c Config) Refuses(eventType string) bool {
	return !c.Enabled && eventType != "knowledge.configured/v1"
}

// DefaultConfig returns the defaults of opencode-swarm v7.103.2.
func DefaultConfig() Config {
	return Config{
		Enabled: true, SwarmMaxEntries: 100, HiveMaxEntries: 200, AutoPromoteDays: 90,
		MaxInjectCount: 5, DelegateMaxInjectCount: 8, InjectCharBudget: 2000,
		MaxLessonDisplayChars: 120, DedupThreshold: DefaultDedupThreshold,
		ScopeFilter: []string{"global"}, HiveEnabled: true, RejectedMaxEntries: 20,
		ValidationEnabled: true, EvergreenConfidence: 0.9, EvergreenUtility: 0.8,
		LowUtilityThreshold: 0.3, MinRetrievalsForUtility: 3, SchemaVersion: 1,
		DirectiveMinConfidence: 0.75, SameProjectWeight: 1, CrossProjectWeight: 0.5,
		MinEncounterScore: 0.1, InitialEncounterScore: 1, EncounterIncrement: 0.1,
		MaxEncounterScore: 10, DefaultMaxPhases: 10, TodoMaxPhases: 3, SweepEnabled: true,
		RealtimeLearningNudge: LearningNudge{Enabled: true, FirstAfterToolCalls: 10, RepeatAfterToolCalls: 25},
		Enrichment:            Enrichment{MaxCallsPerDay: 30, QuotaWindow: "utc"},
	}
}

// ParseConfig reads a JSON object of knowledge.* keys (or a whole config
// with a "knowledge" object) over the defaults and validates it. Unknown
// keys are refused with their name.
func ParseConfig(raw []byte) (Config, error) {
	cfg := DefaultConfig()
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return cfg, fmt.Errorf("knowledge config: %w", err)
	}
	raw = ConfigKeys(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("knowledge config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// ConfigKeys returns the object of knowledge.* keys of a configuration
// document: the "knowledge" object of a whole config (its only key), else
// the document itself.
func ConfigKeys(raw []byte) []byte {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return raw
	}
	if inner, ok := probe["knowledge"]; ok && len(probe) == 1 {
		return inner
	}
	return raw
}

// Validate checks every key against the reference's ranges and names the
// first key out of range.
func (c Config) Validate() error {
	ints := []struct {
		key    string
		v      int
		lo, hi int
	}{
		{"swarm_max_entries", c.SwarmMaxEntries, 1, 10000},
		{"hive_max_entries", c.HiveMaxEntries, 1, 100000},
		{"auto_promote_days", c.AutoPromoteDays, 1, 3650},
		{"max_inject_count", c.MaxInjectCount, 0, 50},
		{"delegate_max_inject_count", c.DelegateMaxInjectCount, 0, 50},
		{"inject_char_budget", c.InjectCharBudget, 200, 10000},
		{"max_lesson_display_chars", c.MaxLessonDisplayChars, 40, 280},
		{"rejected_max_entries", c.RejectedMaxEntries, 1, 1000},
		{"min_retrievals_for_utility", c.MinRetrievalsForUtility, 1, 100},
		{"schema_version", c.SchemaVersion, 1, math.MaxInt32},
		{"default_max_phases", c.DefaultMaxPhases, 1, math.MaxInt32},
		{"todo_max_phases", c.TodoMaxPhases, 1, math.MaxInt32},
		{"realtime_learning_nudge.first_after_tool_calls", c.RealtimeLearningNudge.FirstAfterToolCalls, 1, math.MaxInt32},
		{"realtime_learning_nudge.repeat_after_tool_calls", c.RealtimeLearningNudge.RepeatAfterToolCalls, 1, math.MaxInt32},
		{"enrichment.max_calls_per_day", c.Enrichment.MaxCallsPerDay, 0, math.MaxInt32},
	}
	for _, x := range ints {
		if x.v < x.lo || x.v > x.hi {
			return fmt.Errorf("knowledge config: key %q: %d out of range [%d, %d]", x.key, x.v, x.lo, x.hi)
		}
	}
	floats := []struct {
		key    string
		v      float64
		lo, hi float64
	}{
		{"dedup_threshold", c.DedupThreshold, 0, 1},
		{"evergreen_confidence", c.EvergreenConfidence, 0, 1},
		{"evergreen_utility", c.EvergreenUtility, 0, 1},
		{"low_utility_threshold", c.LowUtilityThreshold, 0, 1},
		{"directive_min_confidence", c.DirectiveMinConfidence, 0, 1},
		{"same_project_weight", c.SameProjectWeight, 0, 5},
		{"cross_project_weight", c.CrossProjectWeight, 0, 5},
		{"min_encounter_score", c.MinEncounterScore, 0, 1},
		{"initial_encounter_score", c.InitialEncounterScore, 0, 5},
		{"encounter_increment", c.EncounterIncrement, 0, 1},
		{"max_encounter_score", c.MaxEncounterScore, 1, 20},
	}
	for _, x := range floats {
		if math.IsNaN(x.v) || x.v < x.lo || x.v > x.hi {
			return fmt.Errorf("knowledge config: key %q: %v out of range [%v, %v]", x.key, x.v, x.lo, x.hi)
		}
	}
	for _, s := range c.ScopeFilter {
		if !ValidScope(s) {
			return fmt.Errorf("knowledge config: key %q: %q is not 'global' or 'stack:<name>'", "scope_filter", s)
		}
	}
	if q := c.Enrichment.QuotaWindow; q != "utc" && q != "local" {
		return fmt.Errorf("knowledge config: key %q: %q must be utc or local", "enrichment.quota_window", q)
	}
	return nil
}
