package learning_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/learning"
	"github.com/loredev/lore/schemas"
)

// observationsLog is a log around many observations made at one time:
// earlier single observations, then obs (as singles or as
// pattern.observations/v1 of at most MaxObservationsPerEvent items), then
// a later single observation and a reset.
func observationsLog(t *testing.T, obs []events.PatternObserved, batched bool) *sim {
	t.Helper()
	s := newSim(t)
	observe(s, "Split by feature", 1, true, false, true)
	observe(s, "Split by layer", 1.5, false, false)
	at := day(3)
	if !batched {
		for i := range obs {
			s.must("pattern.observed/v1", at, &obs[i])
		}
	} else {
		// One event per run of one pattern (at most MaxObservationsPerEvent).
		for lo := 0; lo < len(obs); {
			hi := lo + 1
			for hi < len(obs) && hi-lo < events.MaxObservationsPerEvent && obs[hi].AggregateID() == obs[lo].AggregateID() {
				hi++
			}
			s.must("pattern.observations/v1", at, &events.PatternObservations{Observations: obs[lo:hi]})
			lo = hi
		}
	}
	observe(s, "Split by layer", 4, true)
	s.must("pattern.reset/v1", day(5), &events.PatternReset{PatternID: events.PatternIDFor("Split by risk"), Reason: "new team"})
	return s
}

// manyObservations mixes patterns named by content and by id (in runs of
// one pattern), successes
// and failures (enough to mature, deprecate and invert), tags and beads.
func manyObservations(n int) []events.PatternObserved {
	contents := []string{"Split by feature", "Split by layer", "Split by risk", "One file per step"}
	out := make([]events.PatternObserved, n)
	for i := range out {
		o := events.PatternObserved{Success: i%3 != 0 && i%7 != 1, BeadID: fmt.Sprintf("bd-%d", i%5)}
		switch k := (i / 7) % 5; k { // runs of 7 observations of one pattern
		case 4:
			o.PatternID = "pat-by-id"
		default:
			o.Content = contents[k]
		}
		if i%11 == 0 {
			o.Tags = []string{fmt.Sprintf("t%d", i%3)}
		}
		if i >= n/2 && o.Content == "Split by layer" {
			o.Success = false // turns late: an inversion in the middle of a batch
		}
		out[i] = o
	}
	return out
}

// answers is every learning query's answer about patterns, at several
// times, as JSON.
func answers(t *testing.T, m *learning.Model, r projector.Reader) string {
	t.Helper()
	var b strings.Builder
	put := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", name, raw)
	}
	proj := events.DefaultProject
	for _, now := range []time.Time{day(3), day(4.5), day(30), day(400)} {
		ps, err := m.Patterns(r, proj, now, "")
		put("patterns", ps, err)
		for _, p := range ps {
			v, ok, err := m.Pattern(r, proj, p.ID, now)
			put("pattern "+p.ID+fmt.Sprint(ok), v, err)
		}
		anti, text, err := m.AntiPatterns(r, proj, now)
		put("anti", []any{anti, text}, err)
		d, err := m.Decomposition(r, proj, now)
		put("decomposition", d, err)
		for _, tag := range []string{"t0", "t1", "t2"} {
			ps, err := m.PatternsByTag(r, proj, now, "", tag)
			put("tag "+tag, ps, err)
		}
		w, err := m.Weights(r, proj, now)
		put("weights", w, err)
	}
	return b.String()
}

// runsOfOnePattern is how many pattern.observations/v1 carry obs: one per
// run of observations of one pattern, of at most MaxObservationsPerEvent.
func runsOfOnePattern(obs []events.PatternObserved) int {
	runs := 0
	for i, size := 0, 0; i < len(obs); i++ {
		if i == 0 || size == events.MaxObservationsPerEvent || obs[i].AggregateID() != obs[i-1].AggregateID() {
			runs, size = runs+1, 0
		}
		size++
	}
	return runs
}

// TestObservationsFoldAsSingles: observations carried by
// pattern.observations/v1 events give every learning answer and every
// announcement (in order, with its key) that the same observations sent
// one by one give.
func TestObservationsFoldAsSingles(t *testing.T) {
	for _, n := range []int{1, 7, 40, 1000, 2345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			obs := manyObservations(n)
			one, many := observationsLog(t, obs, false), observationsLog(t, obs, true)
			if want := runsOfOnePattern(obs); len(one.evs)-len(many.evs) != n-want {
				t.Fatalf("%d events one by one, %d batched", len(one.evs), len(many.evs))
			}
			a, b := answers(t, one.m, one.store()), answers(t, many.m, many.store())
			if a != b {
				t.Fatalf("answers differ:\none by one:\n%s\nbatched:\n%s", a, b)
			}
			if n >= 35 && !strings.Contains(a, "pat-by-id") {
				t.Fatalf("the observations were not folded:\n%s", a)
			}
			ea, eb := emitsOf(t, one.tx.emits), emitsOf(t, many.tx.emits)
			if ea != eb {
				t.Fatalf("announcements differ:\none by one:\n%s\nbatched:\n%s", ea, eb)
			}
			if n >= 1000 && !strings.Contains(ea, "pattern.inverted/v1") {
				t.Fatalf("no inversion announced: the case does not test announcements inside a batch:\n%s", ea)
			}
		})
	}
}

func emitsOf(t *testing.T, ds []projector.Derived) string {
	t.Helper()
	var b strings.Builder
	for _, d := range ds {
		raw, err := json.Marshal(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s %s %s\n", d.Type, d.Project, d.Subject, d.Key, raw)
	}
	return b.String()
}

// TestObservationsCheckedPerItem: each item of a pattern.observations/v1
// is checked by pattern.observed/v1's rules; the error names its index.
func TestObservationsCheckedPerItem(t *testing.T) {
	ok := `{"content":"Split by feature","success":true}`
	for name, c := range map[string]struct{ data, want string }{
		"unknown key":         {`{"observations":[` + ok + `,` + ok + `,{"content":"x","success":true,"bogus":1}]}`, `data.observations.2.bogus`},
		"missing success":     {`{"observations":[` + ok + `,{"pattern_id":"p"}]}`, `data.observations.1.success`},
		"neither id nor text": {`{"observations":[{"success":true}]}`, `data.observations.0`},
		"blank content":       {`{"observations":[` + ok + `,{"content":"   ","success":false}]}`, `data.observations.1.pattern_id`},
		"id with a space":     {`{"observations":[{"pattern_id":"a b","success":true}]}`, `data.observations.0.pattern_id`},
		"empty":               {`{"observations":[]}`, `data.observations`},
		"two patterns":        {`{"observations":[` + ok + `,{"pattern_id":"other","success":true}]}`, `data.observations.1.pattern_id`},
		"too many":            {`{"observations":[` + strings.Repeat(ok+",", events.MaxObservationsPerEvent) + ok + `]}`, `data.observations`},
	} {
		err := events.ValidateData("pattern.observations/v1", []byte(c.data))
		if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid event naming %s", name, err, c.want)
		}
	}
	if err := events.ValidateData("pattern.observations/v1", []byte(`{"observations":[`+ok+`,{"pattern_id":"`+events.PatternIDFor("Split by feature")+`","success":false,"tags":["a"],"bead_id":"bd-1"}]}`)); err != nil {
		t.Fatalf("valid observations refused: %v", err)
	}
	// Credentials in an item's content are redacted at append, refused
	// from a raw publisher, naming the item.
	// (Items of one pattern named by id: a content's pattern id is derived
	// from the content as stored, redacted.)
	secret := `{"observations":[{"pattern_id":"p-sec","success":true},{"pattern_id":"p-sec","content":"use AKIAIOSFODNN7EXAMPLE here","success":true}]}`
	if err := events.ValidateData("pattern.observations/v1", []byte(secret)); err == nil || !strings.Contains(err.Error(), "data.observations.1.content") {
		t.Fatalf("credential: %v, want refused naming data.observations.1.content", err)
	}
	red, err := events.RedactData("pattern.observations/v1", []byte(secret))
	if err != nil || strings.Contains(string(red), "AKIA") || !strings.Contains(string(red), "REDACTED") {
		t.Fatalf("redacted: %s %v", red, err)
	}
}

// TestObservationsItemSchemaIsObserved: the item schema of
// pattern.observations/v1 is pattern.observed/v1's, rule for rule.
func TestObservationsItemSchemaIsObserved(t *testing.T) {
	read := func(name string) map[string]any {
		raw, err := schemasFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	single, batch := read("pattern.observed.v1.json"), read("pattern.observations.v1.json")
	item := batch["properties"].(map[string]any)["observations"].(map[string]any)["items"].(map[string]any)
	for _, k := range []string{"type", "additionalProperties", "required", "anyOf", "properties"} {
		a, _ := json.Marshal(single[k])
		b, _ := json.Marshal(item[k])
		if string(a) != string(b) {
			t.Errorf("%s: pattern.observed/v1 %s, item of pattern.observations/v1 %s", k, a, b)
		}
	}
	if max := batch["properties"].(map[string]any)["observations"].(map[string]any)["maxItems"]; max != float64(events.MaxObservationsPerEvent) {
		t.Errorf("maxItems %v, want %d", max, events.MaxObservationsPerEvent)
	}
}

var schemasFS = schemas.FS
