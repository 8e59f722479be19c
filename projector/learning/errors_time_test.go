package learning_test

import (
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// TestErrorContextTimeIsRFC3339Seconds: the Time: line is RFC 3339 UTC to
// the second whatever the event time's precision or zone: a time lore
// stamped from the clock (nanoseconds) renders like a backfilled one.
func TestErrorContextTimeIsRFC3339Seconds(t *testing.T) {
	t.Parallel()
	s := newSim(t)
	east := time.FixedZone("east", 2*3600)
	for i, at := range []time.Time{
		time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC),
		time.Date(2026, 3, 4, 7, 6, 8, 999999999, east),
	} {
		s.must("error.recorded/v1", at, &events.ErrorRecorded{BeadID: "bd-7", ErrorType: "timeout", Message: "slow " + string(rune('a'+i))})
	}
	ctx, err := s.m.ErrorContext(s.store(), "default", "bd-7", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  - Time: 2026-03-04T05:06:07Z\n", "  - Time: 2026-03-04T05:06:08Z\n"} {
		if !strings.Contains(ctx, want) {
			t.Errorf("context lacks %q:\n%s", want, ctx)
		}
	}
}
