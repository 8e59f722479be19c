package events

import (
	"fmt"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/safety"
)

// A Redactor is a payload with free text that is stored, exported or
// injected into prompts (lessons, error messages and stack traces, failure
// details, loop iterations, pattern content). VisitText calls f with every
// such field (named as in the JSON, "data.message") and stores what f
// returns in its place.
//
// INVARIANT: no credential reaches the log in a Redactor's text. The
// appender redacts every field before it validates (Prepare: CLI, API,
// MCP, record.event and imports all pass there), so the log holds
// [REDACTED:<kind>] where the secret was; the payload's validation refuses
// a field that still holds one, so an event from a raw publisher that
// bypassed the appender is dead-lettered with that reason.
type Redactor interface {
	VisitText(f func(field, text string) string)
}

// redactPayload redacts every text field of p in place and reports
// whether something changed.
func redactPayload(p Redactor) bool {
	changed := false
	p.VisitText(func(_, s string) string {
		out, kinds := safety.Redact(s)
		if len(kinds) > 0 {
			changed = true
		}
		return out
	})
	return changed
}

// checkSecrets refuses a payload whose text holds a credential.
func checkSecrets(p Redactor) error {
	var err error
	p.VisitText(func(field, s string) string {
		if err == nil {
			if f := safety.Secrets(s); len(f) > 0 {
				err = fmt.Errorf("field %q: holds a credential (%s): redact it before appending", field, f[0].Kind)
			}
		}
		return s
	})
	return err
}

// visit applies f to *s when it is not empty.
func visit(f func(field, text string) string, field string, s *string) {
	if *s != "" {
		*s = f(field, *s)
	}
}

// visitRaw applies f to every string inside a JSON value (a pattern of a
// registry file), re-encoding it only when a string changed.
func visitRaw(f func(field, text string) string, field string, raw *json.RawMessage) {
	if raw == nil || len(*raw) == 0 || !strings.Contains(string(*raw), `"`) {
		return
	}
	// The strings are read from the bytes; the value is decoded and
	// re-encoded only when f changes one (or the bytes are not read
	// exactly so: then as before).
	if texts, ok := rawTexts(field, *raw, nil); ok {
		same := true
		for _, t := range texts {
			if f(t.field, t.text) != t.text {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	var v any
	if err := json.Unmarshal(*raw, &v); err != nil {
		return // the schema check reports it
	}
	changed := false
	var walk func(path string, v any) any
	walk = func(path string, v any) any {
		switch x := v.(type) {
		case string:
			if y := f(path, x); y != x {
				changed = true
				return y
			}
		case []any:
			for i := range x {
				x[i] = walk(fmt.Sprintf("%s.%d", path, i), x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(path+"."+k, x[k])
			}
		}
		return v
	}
	v = walk(field, v)
	if changed {
		if b, err := json.Marshal(v); err == nil {
			*raw = b
		}
	}
}

func (o *OutcomeRecorded) VisitText(f func(field, text string) string) {
	visit(f, "data.failure_details", &o.FailureDetails)
	visit(f, "data.failure_mode", &o.FailureMode)
	visit(f, "data.strategy", &o.Strategy)
	visit(f, "data.decomposition", &o.Decomposition)
}

func (e *ErrorRecorded) VisitText(f func(field, text string) string) {
	visit(f, "data.message", &e.Message)
	visit(f, "data.stack_trace", &e.StackTrace)
	visit(f, "data.context", &e.Context)
}

func (e *FeedbackRecorded) VisitText(f func(field, text string) string) {
	visit(f, "data.context", &e.Context)
}

func (p *PatternObserved) VisitText(f func(field, text string) string) {
	visit(f, "data.content", &p.Content)
}

func (p *PatternObservations) VisitText(f func(field, text string) string) {
	for i := range p.Observations {
		if p.Observations[i].Content != "" {
			visit(f, "data.observations."+strconv.Itoa(i)+".content", &p.Observations[i].Content)
		}
	}
}

func (p *PatternDeprecated) VisitText(f func(field, text string) string) {
	visit(f, "data.reason", &p.Reason)
}

func (p *PatternPromoted) VisitText(f func(field, text string) string) {
	visit(f, "data.reason", &p.Reason)
}

func (p *PatternReset) VisitText(f func(field, text string) string) {
	visit(f, "data.reason", &p.Reason)
}

func (e *LoopStarted) VisitText(f func(field, text string) string) {
	visit(f, "data.task", &e.Task)
}

func (e *LoopIteration) VisitText(f func(field, text string) string) {
	visit(f, "data.error_message", &e.ErrorMessage)
	visit(f, "data.location", &e.Location)
	visit(f, "data.fix_description", &e.FixDescription)
	visit(f, "data.fix_diff", &e.FixDiff)
}

func (e *LoopCompleted) VisitText(f func(field, text string) string) {
	visit(f, "data.failure_mode", &e.FailureMode)
	visit(f, "data.approach", &e.Approach)
}

func (e *RegistryImported) VisitText(f func(field, text string) string) {
	for i := range e.Patterns {
		visitRaw(f, fmt.Sprintf("data.patterns.%d", i), &e.Patterns[i])
	}
}

func (k *KnowledgeSubmitted) VisitText(f func(field, text string) string) {
	visit(f, "data.lesson", &k.Lesson)
	if k.Import != nil {
		visit(f, "data.import.rejection_reason", &k.Import.RejectionReason)
		visit(f, "data.import.quarantine_reason", &k.Import.QuarantineReason)
	}
}

func (k *KnowledgeRestored) VisitText(f func(field, text string) string) {
	visit(f, "data.reason", &k.Reason)
}

func (k *KnowledgeInjected) VisitText(f func(field, text string) string) {
	visit(f, "data.task", &k.Task)
}

func (k *KnowledgePromoted) VisitText(f func(field, text string) string) {
	visit(f, "data.lesson", &k.Lesson)
	visit(f, "data.reason", &k.Reason)
}

func (k *KnowledgeQuarantined) VisitText(f func(field, text string) string) {
	visit(f, "data.reason", &k.Reason)
}

var (
	_ Redactor = (*OutcomeRecorded)(nil)
	_ Redactor = (*ErrorRecorded)(nil)
	_ Redactor = (*LoopIteration)(nil)
	_ Redactor = (*RegistryImported)(nil)
	_ Redactor = (*KnowledgeSubmitted)(nil)
)
