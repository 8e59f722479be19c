package eventlog_test

import (
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
)

// TestLastTimeIsTheNewest: a backfilled event appended after a newer one
// leaves the newest event time where it was; a newer one moves it on.
func TestLastTimeIsTheNewest(t *testing.T) {
	t.Parallel()
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var evs []*events.Event
	for i, s := range []string{"2026-03-01T10:00:00.5Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"} {
		ev, err := events.New("clock.ticked/v1", "", "test", at(s), &events.ClockTicked{})
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	check := func(want, wantHuman string) {
		t.Helper()
		s, err := eventlog.Read(st.Model(eventlog.Name))
		if err != nil {
			t.Fatal(err)
		}
		if s.LastTime != want {
			t.Errorf("last_event_time %q, want %q", s.LastTime, want)
		}
		if line := "newest event time: " + wantHuman + "\n"; !strings.Contains(eventlog.Format(s), line) {
			t.Errorf("format lacks %q:\n%s", line, eventlog.Format(s))
		}
	}
	if _, err := projector.FoldEvents(st, []projector.Model{eventlog.Model{}}, evs); err != nil {
		t.Fatal(err)
	}
	check("2026-03-01T10:00:00.5Z", "2026-03-01T10:00:00Z")
	later, err := events.New("clock.ticked/v1", "", "test", at("2026-04-01T00:00:00Z"), &events.ClockTicked{})
	if err != nil {
		t.Fatal(err)
	}
	later.Seq = 4
	if _, err := projector.FoldEvents(st, []projector.Model{eventlog.Model{}}, []*events.Event{later}); err != nil {
		t.Fatal(err)
	}
	check("2026-04-01T00:00:00Z", "2026-04-01T00:00:00Z")
}
