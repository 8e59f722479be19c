package events

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
)

// Event types of the learning systems (implicit feedback, decay, maturity,
// anti-patterns, error accumulator).

// OutcomeRecorded reports how a subtask (bead) ended.
type OutcomeRecorded struct {
	BeadID         string   `json:"bead_id"`
	DurationMs     int64    `json:"duration_ms"`
	ErrorCount     *int     `json:"error_count,omitempty"` // defaults to the bead's recorded errors
	RetryCount     int      `json:"retry_count"`
	Success        bool     `json:"success"`
	FilesTouched   []string `json:"files_touched,omitempty"`
	Strategy       string   `json:"strategy,omitempty"`
	FailureMode    string   `json:"failure_mode,omitempty"`
	FailureDetails string   `json:"failure_details,omitempty"`
	// Criteria are evaluation criteria this outcome scores.
	Criteria []string `json:"criteria,omitempty"`
	// Decomposition is the decomposition text; strategies are extracted from it.
	Decomposition string `json:"decomposition,omitempty"`
}

func (o *OutcomeRecorded) AggregateID() string { return o.BeadID }

// ErrorRecorded is one error met while executing a bead.
type ErrorRecorded struct {
	BeadID     string `json:"bead_id"`
	ErrorType  string `json:"error_type"`
	Message    string `json:"message"`
	StackTrace string `json:"stack_trace,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Context    string `json:"context,omitempty"`
}

func (e *ErrorRecorded) AggregateID() string { return e.BeadID }

// ErrorResolved marks an error (by its event id) as resolved.
type ErrorResolved struct {
	BeadID  string `json:"bead_id"`
	ErrorID string `json:"error_id"`
}

func (e *ErrorResolved) AggregateID() string { return e.BeadID }

// FeedbackRecorded is explicit feedback on an evaluation criterion.
type FeedbackRecorded struct {
	Criterion string `json:"criterion"`
	// Type is helpful, harmful or neutral (neutral counts in neither sum).
	Type string `json:"type"`
	// RawValue in [0,1] is weighted by decay when the weight is evaluated.
	RawValue float64 `json:"raw_value"`
	BeadID   string  `json:"bead_id,omitempty"`
	Context  string  `json:"context,omitempty"`
}

func (f *FeedbackRecorded) AggregateID() string { return f.Criterion }

// PatternObserved reports that a decomposition pattern was used, and
// whether it worked. The pattern is named by id, or by content (its id is
// then derived from the content, see PatternIDFor).
type PatternObserved struct {
	PatternID string   `json:"pattern_id,omitempty"`
	Content   string   `json:"content,omitempty"`
	Success   bool     `json:"success"`
	BeadID    string   `json:"bead_id,omitempty"`
	Tags      []string `json:"tags,omitempty"`
}

func (p *PatternObserved) AggregateID() string {
	if p.PatternID != "" {
		return p.PatternID
	}
	return PatternIDFor(p.Content)
}

// Check requires a pattern id or a content.
func (p *PatternObserved) Check() error { return p.check("data") }

// check is Check of the observation at field at ("data",
// "data.observations.3").
func (p *PatternObserved) check(at string) error {
	if p.PatternID == "" && strings.TrimSpace(p.Content) == "" {
		return fmt.Errorf("field %q: a pattern_id or a content is required", at+".pattern_id")
	}
	return nil
}

// MaxObservationsPerEvent bounds the observations of one
// pattern.observations/v1 (its schema's maxItems). NB: must not change.
const MaxObservationsPerEvent = 1000

// PatternObservations carries many pattern observations made at the
// event's time: each item is the data of a pattern.observed/v1, checked by
// the same rules, and the learning fold applies the items in order exactly
// as it folds the same observations sent one by one.
//
// INVARIANT: an item's identity is the event's id and the item's index;
// the event is folded once per id, so each item is too.
type PatternObservations struct {
	Observations []PatternObserved `json:"observations"`
}

// AggregateID is the pattern every observation of the event names (Check
// refuses an event naming two): the event is stored with that pattern's
// events, so a subscriber of one pattern's subject sees all of them.
func (p *PatternObservations) AggregateID() string {
	if len(p.Observations) == 0 {
		return ""
	}
	return p.Observations[0].AggregateID()
}

// Check applies PatternObserved's Check to every item, naming the first
// bad one by its index, and requires every item to name the first one's
// pattern (the event's subject).
func (p *PatternObservations) Check() error {
	var want, content, id string // the first item's pattern; the last content derived, its id
	for i := range p.Observations {
		o := &p.Observations[i]
		at := "data.observations." + strconv.Itoa(i)
		if err := o.check(at); err != nil {
			return err
		}
		// o.AggregateID(), derived once per run of one content (an
		// event's items usually repeat one).
		got := o.PatternID
		if got == "" {
			if i == 0 || o.Content != content {
				content, id = o.Content, PatternIDFor(o.Content)
			}
			got = id
		}
		if i == 0 {
			want = got
		} else if got != want {
			return fmt.Errorf("field %q: pattern %s in an event of pattern %s: one pattern.observations/v1 carries observations of one pattern (its subject)", at+".pattern_id", got, want)
		}
	}
	return nil
}

// PatternPromoted promotes a pattern to proven by hand. The manual state
// holds until the next manual event or a reset.
type PatternPromoted struct {
	PatternID string `json:"pattern_id"`
	Reason    string `json:"reason,omitempty"`
}

func (p *PatternPromoted) AggregateID() string { return p.PatternID }

// PatternDeprecated deprecates a pattern by hand, with a reason (kept).
type PatternDeprecated struct {
	PatternID string `json:"pattern_id"`
	Reason    string `json:"reason"`
}

func (p *PatternDeprecated) AggregateID() string { return p.PatternID }

// PatternReset starts a pattern over: manual state, feedback, observation
// counts and its anti-pattern are cleared (the log keeps everything).
type PatternReset struct {
	PatternID string `json:"pattern_id"`
	Reason    string `json:"reason,omitempty"`
}

func (p *PatternReset) AggregateID() string { return p.PatternID }

// PatternMaturityChanged (derived) announces a maturity transition.
type PatternMaturityChanged struct {
	PatternID string `json:"pattern_id"`
	Content   string `json:"content,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	Reason    string `json:"reason"`
	Manual    bool   `json:"manual,omitempty"`
}

func (p *PatternMaturityChanged) AggregateID() string { return p.PatternID }

// PatternInverted (derived) announces that a pattern became an anti-pattern.
type PatternInverted struct {
	PatternID     string `json:"pattern_id"`
	AntiPatternID string `json:"anti_pattern_id"`
	Content       string `json:"content"`
	Reason        string `json:"reason"`
	SuccessCount  int    `json:"success_count"`
	FailureCount  int    `json:"failure_count"`
}

func (p *PatternInverted) AggregateID() string { return p.PatternID }

// CriterionDeprecated (derived) announces that a criterion's raw harmful
// ratio passed the deprecation threshold.
type CriterionDeprecated struct {
	Criterion    string  `json:"criterion"`
	HelpfulCount int     `json:"helpful_count"`
	HarmfulCount int     `json:"harmful_count"`
	HarmfulRatio float64 `json:"harmful_ratio"`
	Weight       float64 `json:"weight"`
}

func (c *CriterionDeprecated) AggregateID() string { return c.Criterion }

// PatternIDFor derives a pattern's stable id from its content: a slug of
// the normalised content (lower case, whitespace collapsed; ASCII letters
// and digits kept, other runs as "-", at most 48 characters) and the first
// 8 hex digits of the SHA-256 of the normalised content, for instance
// "split-by-file-type-1a2b3c4d". NB: must not change: ids are stored.
func PatternIDFor(content string) string {
	n := strings.Join(strings.Fields(strings.ToLower(content)), " ")
	sum := sha256.Sum256([]byte(n))
	h := hex.EncodeToString(sum[:4])
	var b strings.Builder
	dash := false
	for _, r := range n {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 48 {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "p-" + h
	}
	return b.String() + "-" + h
}

// LearningConfigured sets the configuration of the learning read model
// (learningConfig, antiPatternConfig, maturityConfig, per-criterion
// half-lives, the evidence policy) every replica and replay folds with,
// from the event on.
type LearningConfigured struct {
	Config json.RawMessage `json:"config"`
}

func (*LearningConfigured) AggregateID() string { return ConfigAggregate }

// CheckLearningConfig is the learning model's configuration rule
// (learning.ParseConfig, installed by that package): the events package
// cannot import it. Nil accepts any object.
var CheckLearningConfig func(json.RawMessage) error

// Check refuses a configuration the learning model would refuse, naming
// the key, before it is appended.
func (c *LearningConfigured) Check() error {
	if CheckLearningConfig == nil {
		return nil
	}
	if err := CheckLearningConfig(c.Config); err != nil {
		return fmt.Errorf("field \"config\": %w", err)
	}
	return nil
}

// PatternRehabilitated is derived: under the evidence policy, an
// anti-pattern whose observations no longer support its inversion is a
// pattern again. Announced once per inversion it ends.
type PatternRehabilitated struct {
	PatternID     string `json:"pattern_id"`
	AntiPatternID string `json:"anti_pattern_id"`
	Content       string `json:"content"`
	Reason        string `json:"reason"`
	SuccessCount  int    `json:"success_count"`
	FailureCount  int    `json:"failure_count"`
}

func (p *PatternRehabilitated) AggregateID() string { return p.PatternID }

func init() {
	Register(Kind{Type: "learning.configured/v1", Aggregate: "learning-config",
		Doc: "the learning configuration (learningConfig, antiPatternConfig, maturityConfig, half-lives, evidence policy) every replica folds with",
		New: func() Payload { return new(LearningConfigured) }})
	Register(Kind{Type: "pattern.rehabilitated/v1", Aggregate: "pattern", Derived: true,
		Doc: "an anti-pattern whose later observations no longer support its inversion is a pattern again (evidence policy)",
		New: func() Payload { return new(PatternRehabilitated) }})
	Register(Kind{Type: "feedback.recorded/v1", Aggregate: "criterion",
		Doc: "explicit feedback (helpful, harmful, neutral) with a raw value on an evaluation criterion",
		New: func() Payload { return new(FeedbackRecorded) }})
	Register(Kind{Type: "pattern.observed/v1", Aggregate: "pattern",
		Doc: "a decomposition pattern was used and worked or not",
		New: func() Payload { return new(PatternObserved) }})
	Register(Kind{Type: "pattern.observations/v1", Aggregate: "pattern",
		Doc: fmt.Sprintf("many pattern observations at one time (1-%d, each the data of a pattern.observed/v1), folded in order as if sent one by one", MaxObservationsPerEvent),
		New: func() Payload { return new(PatternObservations) }})
	Register(Kind{Type: "pattern.promoted/v1", Aggregate: "pattern",
		Doc: "a pattern promoted to proven by hand (holds until the next manual event or a reset)",
		New: func() Payload { return new(PatternPromoted) }})
	Register(Kind{Type: "pattern.deprecated/v1", Aggregate: "pattern",
		Doc: "a pattern deprecated by hand, with its reason",
		New: func() Payload { return new(PatternDeprecated) }})
	Register(Kind{Type: "pattern.reset/v1", Aggregate: "pattern",
		Doc: "a pattern starts over as a candidate (manual state, feedback, counts, anti-pattern cleared)",
		New: func() Payload { return new(PatternReset) }})
	Register(Kind{Type: "pattern.maturity_changed/v1", Aggregate: "pattern", Derived: true,
		Doc: "a pattern's maturity state changed (candidate, established, proven, deprecated)",
		New: func() Payload { return new(PatternMaturityChanged) }})
	Register(Kind{Type: "pattern.inverted/v1", Aggregate: "pattern", Derived: true,
		Doc: "a pattern failed often enough to become an anti-pattern (AVOID: ...)",
		New: func() Payload { return new(PatternInverted) }})
	Register(Kind{Type: "criterion.deprecated/v1", Aggregate: "criterion", Derived: true,
		Doc: "an evaluation criterion's harmful ratio passed the deprecation threshold",
		New: func() Payload { return new(CriterionDeprecated) }})
	Register(Kind{Type: "outcome.recorded/v1", Aggregate: "bead",
		Doc: "a subtask ended: duration, errors, retries, success, criteria and strategy it used",
		New: func() Payload { return new(OutcomeRecorded) }})
	Register(Kind{Type: "error.recorded/v1", Aggregate: "bead",
		Doc: "an error met while executing a bead (validation, timeout, conflict, tool_failure, unknown)",
		New: func() Payload { return new(ErrorRecorded) }})
	Register(Kind{Type: "error.resolved/v1", Aggregate: "bead",
		Doc: "an error of a bead was resolved", New: func() Payload { return new(ErrorResolved) }})
}
