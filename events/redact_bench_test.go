package events

import (
	"testing"
	"time"

	"github.com/loredev/lore/safety"
)

func benchErrorEvent(b *testing.B) *Event {
	ev, err := New("error.recorded/v1", "default", "bench", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), &ErrorRecorded{
		BeadID: "bd-1", ErrorType: "tool_failure",
		Message:    "connection refused: dial tcp 127.0.0.1:5432: connect: connection refused while running migrations",
		StackTrace: "at migrate (db/migrate.ts:88:11)\nat main (cli.ts:12:3)",
		Context:    "retrying the deploy after the registry timeout"})
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// BenchmarkPrepareErrorRecorded is the appender's whole Prepare of an
// error with clean text, redaction hook included.
func BenchmarkPrepareErrorRecorded(b *testing.B) {
	a := NewAppender(nil)
	proto := benchErrorEvent(b)
	if err := safety.RulesError(); err != nil { // loads the rules once, outside the loop
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ev := *proto
		ev.ID = ""
		if _, err := a.Prepare(&ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactHookErrorRecorded is the redaction hook alone on the same
// payload: the part of Prepare the safety rules add.
func BenchmarkRedactHookErrorRecorded(b *testing.B) {
	if err := safety.RulesError(); err != nil {
		b.Fatal(err)
	}
	p := &ErrorRecorded{}
	if err := decodeStrict(benchErrorEvent(b).Data, p); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		q := *p
		redactPayload(&q)
	}
}
