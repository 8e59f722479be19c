package benchkit_test

import (
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// TestWorkloadIsReproducible: the same seed gives the same events.
func TestWorkloadIsReproducible(t *testing.T) {
	a, err := benchkit.Workload{Seed: 7}.Generate(2000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := benchkit.Workload{Seed: 7}.Generate(2000)
	if err != nil {
		t.Fatal(err)
	}
	c, err := benchkit.Workload{Seed: 8}.Generate(2000)
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for i := range a.Events {
		ea, eb := a.Events[i], b.Events[i]
		if ea.ID != eb.ID || ea.Type != eb.Type || string(ea.Data) != string(eb.Data) || !ea.Time.Equal(eb.Time) || a.Writer[i] != b.Writer[i] {
			t.Fatalf("event %d differs between two runs of seed 7", i)
		}
		same = same && string(a.Events[i].Data) == string(c.Events[i].Data)
	}
	if same {
		t.Fatal("seeds 7 and 8 gave the same workload")
	}
}

// TestWorkloadIsValidAndFolds: every generated event passes the appender's
// validation and folds into every model without a poison event; it logs
// each model's fold rate.
func TestWorkloadIsValidAndFolds(t *testing.T) {
	n, kn, pn := envInt("BENCHKIT_EVENTS", 5000), envInt("BENCHKIT_KNOWLEDGE", 300), envInt("BENCHKIT_PATTERNS", 1000)
	if testing.Short() {
		n = 1000
	}
	evs := preparedWorkload(t, n, kn, pn)
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Type]++
	}
	for _, typ := range []string{"loop.started/v1", "loop.iteration/v1", "loop.completed/v1", "outcome.recorded/v1",
		"error.recorded/v1", "pattern.observed/v1", "knowledge.submitted/v1", "registry.imported/v1"} {
		if types[typ] == 0 {
			t.Errorf("the workload has no %s", typ)
		}
	}
	for _, m := range app.Models() {
		if only := os.Getenv("BENCHKIT_MODEL"); only != "" && only != m.Name() {
			continue
		}
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		f, err := projector.NewFolder(st, []projector.Model{m}, false)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, ev := range evs {
			c := *ev
			if _, err := f.Fold(&c); err != nil {
				if errors.Is(err, projector.ErrPoison) {
					t.Errorf("model %s: poison %s: %v", m.Name(), ev.Type, err)
					continue
				}
				t.Fatal(err)
			}
			if f.Pending() >= 1000 {
				if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("model %-12s %8.0f events/s", m.Name(), float64(len(evs))/d.Seconds())
		st.Close()
	}
}

// preparedWorkload returns the seeded knowledge and patterns followed by n
// workload events of seed 1, each checked by the appender's Prepare (which
// also sets its subject) and numbered from sequence 1.
func preparedWorkload(tb testing.TB, n, knowledge, patterns int) []*events.Event {
	tb.Helper()
	g, err := benchkit.Workload{Seed: 1}.Generate(n)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := benchkit.SeedKnowledge(1, knowledge)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := benchkit.SeedPatterns(1, patterns)
	if err != nil {
		tb.Fatal(err)
	}
	evs := append(append(k, p...), g.Events...)
	a := events.NewAppender(nil)
	for i, ev := range evs {
		c := *ev
		if _, err := a.Prepare(&c); err != nil {
			tb.Fatalf("event %d (%s) invalid: %v", i, ev.Type, err)
		}
		ev.Subject = c.Subject
		ev.Seq = uint64(i + 1)
	}
	return evs
}

// envInt reads a size from the environment (diagnostics of fold rates).
func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v >= 0 {
		return v
	}
	return def
}

// TestLanesFoldAsSequential folds the workload into every model model
// after model, and with a lane per model (as the runtime and replays do),
// committing every 97 events: the two stores must hold the same bytes.
func TestLanesFoldAsSequential(t *testing.T) {
	evs := preparedWorkload(t, 3000, 300, 500)
	digest := func(parallel bool) string {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f, err := projector.NewFolder(st, app.Models(), true)
		if err != nil {
			t.Fatal(err)
		}
		if parallel {
			f.Parallel()
			defer f.Close()
		}
		commit := func() {
			if poison, err := f.Settle(); err != nil || len(poison) > 0 {
				t.Fatalf("settle: %v, %v", poison, err)
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range evs {
			c := *ev
			c.Checked = true
			if _, err := f.Fold(&c); err != nil {
				t.Fatalf("%s: %v", ev.Type, err)
			}
			if f.Pending() >= 97 {
				commit()
			}
		}
		commit()
		d, err := st.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if seq, par := digest(false), digest(true); seq != par {
		t.Errorf("lanes fold to %s, model after model to %s", par, seq)
	}
}
