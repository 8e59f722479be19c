package conformance_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// Decoding of swarm_learning.json inputs (JavaScript numbers and dates, the
// reference's records) and comparisons used by learning_cases_test.go.

func num(t *testing.T, raw json.RawMessage) float64 {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return math.NaN() // missing, as JavaScript's undefined in arithmetic
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		return f
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a number: %s", raw)
	}
	switch s {
	case "NaN":
		return math.NaN()
	case "Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	t.Fatalf("not a number: %s", raw)
	return 0
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := learning.ParseTime("timestamp", s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// sameFloat compares bit for bit (NaN equals NaN).
func sameFloat(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(got) && math.IsNaN(want) {
		return
	}
	if math.Float64bits(got) != math.Float64bits(want) && got != want {
		t.Errorf("%s = %v (%b), want %v", what, got, math.Float64bits(got), want)
	}
}

// wantBadInput asserts lore refuses the input with an error naming field.
func wantBadInput(t *testing.T, err error, field string) {
	t.Helper()
	if !errors.Is(err, learning.ErrBadInput) {
		t.Fatalf("want a bad-input error naming %q, got %v", field, err)
	}
	if !strings.Contains(err.Error(), `"`+field+`"`) {
		t.Errorf("error %q does not name field %q", err, field)
	}
}

// configOf decodes a case's config: the reference's name of its defaults
// (e.g. "DEFAULT_LEARNING_CONFIG") or missing gives def; an object is
// decoded strictly over def (an unknown key fails the case); anything else
// fails the case.
func configOf[T any](t *testing.T, raw json.RawMessage, def T, defaultsName string) T {
	t.Helper()
	cfg := def
	if len(raw) == 0 || string(raw) == "null" {
		return cfg
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if name != defaultsName {
			t.Fatalf("config %q: want an object or %q", name, defaultsName)
		}
		return cfg
	}
	if err := strictUnmarshal(raw, &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func learningConfig(t *testing.T, raw json.RawMessage) learning.LearningConfig {
	return configOf(t, raw, learning.DefaultLearningConfig(), "DEFAULT_LEARNING_CONFIG")
}

func antiConfig(t *testing.T, raw json.RawMessage) learning.AntiPatternConfig {
	return configOf(t, raw, learning.DefaultAntiPatternConfig(), "DEFAULT_ANTI_PATTERN_CONFIG")
}

func maturityConfig(t *testing.T, raw json.RawMessage) learning.MaturityConfig {
	return configOf(t, raw, learning.DefaultMaturityConfig(), "DEFAULT_MATURITY_CONFIG")
}

type refSignals struct {
	BeadID     string          `json:"bead_id"`
	DurationMs json.RawMessage `json:"duration_ms"`
	ErrorCount json.RawMessage `json:"error_count"`
	RetryCount json.RawMessage `json:"retry_count"`
	Success    bool            `json:"success"`
	Timestamp  string          `json:"timestamp"`
}

func (r refSignals) toSignals(t *testing.T) (learning.Signals, error) {
	s := learning.Signals{BeadID: r.BeadID, DurationMs: num(t, r.DurationMs), ErrorCount: num(t, r.ErrorCount),
		RetryCount: num(t, r.RetryCount), Success: r.Success}
	tm, err := learning.ParseTime("timestamp", r.Timestamp)
	s.Time = tm
	return s, err
}

type refMaturity struct {
	PatternID     string  `json:"pattern_id"`
	State         string  `json:"state"`
	HelpfulCount  int     `json:"helpful_count"`
	HarmfulCount  int     `json:"harmful_count"`
	LastValidated string  `json:"last_validated"`
	PromotedAt    *string `json:"promoted_at"`
	DeprecatedAt  *string `json:"deprecated_at"`
}

func (r refMaturity) toMaturity(t *testing.T) learning.Maturity {
	m := learning.Maturity{PatternID: r.PatternID, State: learning.MaturityState(r.State),
		HelpfulCount: r.HelpfulCount, HarmfulCount: r.HarmfulCount, LastValidated: mustTime(t, r.LastValidated)}
	if r.PromotedAt != nil {
		tm := mustTime(t, *r.PromotedAt)
		m.PromotedAt = &tm
	}
	if r.DeprecatedAt != nil {
		tm := mustTime(t, *r.DeprecatedAt)
		m.DeprecatedAt = &tm
	}
	return m
}

func sameTimePtr(t *testing.T, what string, got *time.Time, want *string) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", what, got, want)
	case !got.Equal(mustTime(t, *want)):
		t.Errorf("%s = %s, want %s", what, got, *want)
	}
}

func checkMaturity(t *testing.T, got learning.Maturity, want refMaturity) {
	t.Helper()
	if got.PatternID != want.PatternID || string(got.State) != want.State ||
		got.HelpfulCount != want.HelpfulCount || got.HarmfulCount != want.HarmfulCount {
		t.Errorf("maturity = %+v, want %+v", got, want)
	}
	if !got.LastValidated.Equal(mustTime(t, want.LastValidated)) {
		t.Errorf("last_validated = %s, want %s", got.LastValidated, want.LastValidated)
	}
	sameTimePtr(t, "promoted_at", got.PromotedAt, want.PromotedAt)
	sameTimePtr(t, "deprecated_at", got.DeprecatedAt, want.DeprecatedAt)
}

type refMaturityFeedback struct {
	PatternID string          `json:"pattern_id"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Weight    json.RawMessage `json:"weight"`
}

func maturityEvents(t *testing.T, in []refMaturityFeedback) []learning.MaturityFeedback {
	out := make([]learning.MaturityFeedback, len(in))
	for i, e := range in {
		out[i] = learning.MaturityFeedback{PatternID: e.PatternID, Type: learning.FeedbackType(e.Type),
			Time: mustTime(t, e.Timestamp), Weight: num(t, e.Weight)}
	}
	return out
}

type refPattern struct {
	ID           string   `json:"id"`
	Content      string   `json:"content"`
	Kind         string   `json:"kind"`
	IsNegative   bool     `json:"is_negative"`
	SuccessCount int      `json:"success_count"`
	FailureCount int      `json:"failure_count"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
	Reason       string   `json:"reason"`
	Tags         []string `json:"tags"`
	ExampleBeads []string `json:"example_beads"`
}

func (r refPattern) toPattern(t *testing.T) learning.Pattern {
	return learning.Pattern{ID: r.ID, Content: r.Content, Kind: r.Kind, IsNegative: r.IsNegative,
		SuccessCount: r.SuccessCount, FailureCount: r.FailureCount, CreatedAt: mustTime(t, r.CreatedAt),
		UpdatedAt: mustTime(t, r.UpdatedAt), Reason: r.Reason, Tags: nonNil(r.Tags), ExampleBeads: nonNil(r.ExampleBeads)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func checkPattern(t *testing.T, what string, got learning.Pattern, want refPattern) {
	t.Helper()
	w := want.toPattern(t)
	if !got.CreatedAt.Equal(w.CreatedAt) || !got.UpdatedAt.Equal(w.UpdatedAt) {
		t.Errorf("%s times = %s/%s, want %s/%s", what, got.CreatedAt, got.UpdatedAt, w.CreatedAt, w.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt = w.CreatedAt, w.UpdatedAt
	got.Tags, got.ExampleBeads = nonNil(got.Tags), nonNil(got.ExampleBeads)
	if !reflect.DeepEqual(got, w) {
		t.Errorf("%s =\n %+v\nwant\n %+v", what, got, w)
	}
}

func patterns(t *testing.T, in []refPattern) []learning.Pattern {
	out := make([]learning.Pattern, len(in))
	for i, p := range in {
		out[i] = p.toPattern(t)
	}
	return out
}

// localeTime matches the reference's en-US toLocaleString() Time lines.
var localeTime = regexp.MustCompile(`Time: (\d{1,2}/\d{1,2}/\d{4}, \d{1,2}:\d{2}:\d{2} [AP]M)`)

// rfc3339Lines rewrites the reference's locale Time lines to lore's
// RFC 3339 UTC form (departure L4); every other byte stays.
func rfc3339Lines(t *testing.T, text string) string {
	return localeTime.ReplaceAllStringFunc(text, func(m string) string {
		tm, err := time.Parse("1/2/2006, 3:04:05 PM", localeTime.FindStringSubmatch(m)[1])
		if err != nil {
			t.Fatalf("locale time %q: %v", m, err)
		}
		return "Time: " + tm.UTC().Format(time.RFC3339)
	})
}
