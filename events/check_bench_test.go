package events_test

import (
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// benchMessage is an outcome as it is read from the log: its subject and
// its encoded envelope.
func benchMessage(b *testing.B) (string, []byte) {
	b.Helper()
	ev, err := events.New("outcome.recorded/v1", "web", "bench", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), &events.OutcomeRecorded{
		BeadID: "bd-123.1", DurationMs: 180000, RetryCount: 1, Success: true, Strategy: "file-based",
		Criteria: []string{"type_safe", "small_diff"}, FilesTouched: []string{"internal/a.go", "internal/b.go"},
		Decomposition: "1. Refactor the parser in internal/parser/cache.go, keep the handler\n2. Test the schema in internal/schema/query.go\n"})
	if err != nil {
		b.Fatal(err)
	}
	subj, err := events.SubjectFor(ev)
	if err != nil {
		b.Fatal(err)
	}
	body, err := events.Encode(ev)
	if err != nil {
		b.Fatal(err)
	}
	return subj, body
}

// BenchmarkReadChecked is what the projector does with each message it
// reads: decode the envelope and apply CheckStored (envelope, subject,
// schema, payload Check), whatever the headers say.
func BenchmarkReadChecked(b *testing.B) {
	subj, body := benchMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		ev, err := events.Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := events.CheckStored(subj, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTrustingHeader is the baseline: decode the envelope and the
// payload only, as a projector trusting a Lore-Checked header would.
func BenchmarkReadTrustingHeader(b *testing.B) {
	_, body := benchMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		ev, err := events.Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := events.DecodeData(ev); err != nil {
			b.Fatal(err)
		}
	}
}
