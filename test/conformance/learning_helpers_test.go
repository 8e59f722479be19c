package conformance_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// Decoding of swarm_learning.json inputs (JavaScript numbers and dates, the
// reference's records) and comparisons used by learning_cases_test.go.

func num(t T, raw json.RawMessage) float64 {
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

func decode(t T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func mustTime(t T, s string) time.Time {
	t.Helper()
	tm, err := learning.ParseTime("timestamp", s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// sameFloat compares bit for bit (NaN equals NaN).
func sameFloat(t T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(got) && math.IsNaN(want) {
		return
	}
	if math.Float64bits(got) != math.Float64bits(want) && got != want {
		t.Errorf("%s = %v (%b), want %v", what, got, math.Float64bits(got), want)
	}
}

// wantBadInput asserts lore refuses the input with an error naming field.
func wantBadInput(t T, err error, field string) {
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
func configOf[C any](t T, raw json.RawMessage, def C, defaultsName string) C {
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

func learningConfig(t T, raw json.RawMessage) learning.LearningConfig {
	return configOf(t, raw, learning.DefaultLearningConfig(), "DEFAULT_LEARNING_CONFIG")
}

func antiConfig(t T, raw json.RawMessage) learning.AntiPatternConfig {
	return configOf(t, raw, learning.DefaultAntiPatternConfig(), "DEFAULT_ANTI_PATTERN_CONFIG")
}

func maturityConfig(t T, raw json.RawMessage) learning.MaturityConfig {
	return configOf(t, raw, learning.DefaultMaturityConfig(), "DEFAULT_MATURITY_CONFIG")
}

type refSignals struct {
	BeadID     string          `json:"bead_id"`
	DurationMs json.RawMessage `json:"duration_ms"`
	ErrorCount json.RawMessage `json:"error_count"`
	RetryCount json.RawMessage `json:"retry_count"`
	Success    bool            `json:"success"`
	// FilesTouched is carried by the outcome event, not scored.
	FilesTouched []string `json:"files_touched"`
	Timestamp    string   `json:"timestamp"`
}

// outcomeData is the outcome.recorded/v1 data the signals become at lore's
// doors (the timestamp is the event's time, not its data); the event
// schema is the first layer to parse them. A missing count is left out.
func (r refSignals) outcomeData(t T) []byte {
	t.Helper()
	m := map[string]any{"bead_id": r.BeadID, "success": r.Success}
	if r.FilesTouched != nil {
		m["files_touched"] = r.FilesTouched
	}
	for k, v := range map[string]json.RawMessage{"duration_ms": r.DurationMs, "error_count": r.ErrorCount, "retry_count": r.RetryCount} {
		if len(v) > 0 && string(v) != "null" {
			m[k] = v
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (r refSignals) toSignals(t T) (learning.Signals, error) {
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

func (r refMaturity) toMaturity(t T) learning.Maturity {
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

func sameTimePtr(t T, what string, got *time.Time, want *string) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", what, got, want)
	case !got.Equal(mustTime(t, *want)):
		t.Errorf("%s = %s, want %s", what, got, *want)
	}
}

func checkMaturity(t T, got learning.Maturity, want refMaturity) {
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

func maturityEvents(t T, in []refMaturityFeedback) []learning.MaturityFeedback {
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

func (r refPattern) toPattern(t T) learning.Pattern {
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

func checkPattern(t T, what string, got learning.Pattern, want refPattern) {
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

func patterns(t T, in []refPattern) []learning.Pattern {
	out := make([]learning.Pattern, len(in))
	for i, p := range in {
		out[i] = p.toPattern(t)
	}
	return out
}

// refErrorLog is an ErrorAccumulator's history as the cases write it:
// errors recorded in order (of any bead), the bead asked about, whether its
// first error was resolved, and one more error recorded at now.
type refErrorLog struct {
	Recorded []struct {
		BeadID    string `json:"bead_id"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
		Options   struct {
			StackTrace string `json:"stack_trace"`
			ToolName   string `json:"tool_name"`
			Context    string `json:"context"`
		} `json:"options"`
		At string `json:"at"`
	} `json:"recorded_in_order"`
	BeadID       string `json:"bead_id"`
	ResolveFirst bool   `json:"resolve_first_error"`
	Error        *struct {
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
		// StackTrace may be written "N x 'C'": C repeated N times.
		StackTrace string `json:"stack_trace"`
	} `json:"error"`
	Now string `json:"now"`
}

var repeatSpec = regexp.MustCompile(`^(\d+) x '(.)'$`)

// entries are the bead's error entries, in recording order.
func (in refErrorLog) entries(t T) []learning.ErrorEntry {
	t.Helper()
	var entries []learning.ErrorEntry
	for i, r := range in.Recorded {
		if r.BeadID != in.BeadID {
			continue
		}
		entries = append(entries, learning.ErrorEntry{ID: fmt.Sprint(i), BeadID: r.BeadID, ErrorType: r.ErrorType,
			Message: r.Message, StackTrace: r.Options.StackTrace, ToolName: r.Options.ToolName,
			Context: r.Options.Context, Time: mustTime(t, r.At)})
	}
	if in.ResolveFirst {
		if len(entries) == 0 {
			t.Fatal("input: resolve_first_error with no error recorded for the bead")
		}
		entries[0].Resolved = true
	}
	if in.Error != nil {
		stack := in.Error.StackTrace
		if m := repeatSpec.FindStringSubmatch(stack); m != nil {
			var n int
			fmt.Sscan(m[1], &n)
			stack = strings.Repeat(m[2], n)
		}
		entries = append(entries, learning.ErrorEntry{ID: fmt.Sprint(len(in.Recorded)), BeadID: in.BeadID, ErrorType: in.Error.ErrorType,
			Message: in.Error.Message, StackTrace: stack, Time: mustTime(t, in.Now)})
	} else if in.Now != "" {
		t.Fatal("input: now without an error recorded at it")
	}
	return entries
}

// localeTime matches the reference's en-US toLocaleString() Time lines.
var localeTime = regexp.MustCompile(`Time: (\d{1,2}/\d{1,2}/\d{4}, \d{1,2}:\d{2}:\d{2} [AP]M)`)

// rfc3339Lines rewrites the reference's locale Time lines, printed in time
// zone tz ("" is UTC) and an en-US locale, to lore's RFC 3339 UTC form
// (departure L4); every other byte stays.
func rfc3339Lines(t T, text, tz, locale string) string {
	t.Helper()
	if !strings.HasPrefix(locale, "en-US") && locale != "" {
		t.Fatalf("input: locale %q: only en-US Time lines are read", locale)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatalf("input: TZ %q: %v", tz, err)
	}
	return localeTime.ReplaceAllStringFunc(text, func(m string) string {
		tm, err := time.ParseInLocation("1/2/2006, 3:04:05 PM", localeTime.FindStringSubmatch(m)[1], loc)
		if err != nil {
			t.Fatalf("locale time %q: %v", m, err)
		}
		return "Time: " + tm.UTC().Format(time.RFC3339)
	})
}

// outcomeType is the event a subtask's signals become.
const outcomeType = "outcome.recorded/v1"

// rawOf is a signal field as the case wrote it.
func rawOf(r refSignals, field string) json.RawMessage {
	switch field {
	case "duration_ms":
		return r.DurationMs
	case "error_count":
		return r.ErrorCount
	case "retry_count":
		return r.RetryCount
	}
	return nil
}

// badSignals are the fields of the signals SPEC §1 refuses (negative,
// NaN, infinite or missing counts and durations, then an unparseable
// timestamp), in the order lore checks them.
func badSignals(t T, r refSignals) []string {
	var out []string
	for _, f := range []string{"duration_ms", "error_count", "retry_count"} {
		v := num(t, rawOf(r, f))
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			out = append(out, f)
		}
	}
	if _, err := learning.ParseTime("timestamp", r.Timestamp); err != nil {
		out = append(out, "timestamp")
	}
	return out
}

// badSignal is the first of badSignals, the one the rule names; "" when
// none.
func badSignal(t T, r refSignals) string {
	if bad := badSignals(t, r); len(bad) > 0 {
		return bad[0]
	}
	return ""
}
