package eventlog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// TestChainAndCounts: the chain is sha256 over the previous link and the
// event id, link after link in log order (the first link hashes the id
// alone), and the counts count every event, by type and by project.
func TestChainAndCounts(t *testing.T) {
	t.Parallel()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var evs []*events.Event
	var link []byte
	for i, proj := range []string{"a", "b", "a"} {
		ev, err := events.New("clock.ticked/v1", proj, "test", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), &events.ClockTicked{})
		if err != nil {
			t.Fatal(err)
		}
		ev.ID = fmt.Sprintf("%s-event-%d", strings.Repeat("x", 40*i), i) // ids of several lengths
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
		h := sha256.Sum256(append(append([]byte(nil), link...), ev.ID...))
		link = h[:]
	}
	if _, err := projector.FoldEvents(st, []projector.Model{eventlog.Model{}}, evs); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Read(st.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	if s.Chain != hex.EncodeToString(link) {
		t.Errorf("chain %s, want %x", s.Chain, link)
	}
	if s.Total != 3 || s.ByType["clock.ticked/v1"] != 3 || s.ByProject["a"] != 2 || s.ByProject["b"] != 1 {
		t.Errorf("counts: %+v", s)
	}
}
