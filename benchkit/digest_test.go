package benchkit_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestCrossloopDigest (BENCHKIT_DIGEST=1) folds the workload into the
// crossloop model and prints a digest of its query answers: every pattern,
// the stats and a few hundred injection rankings (cold and cached), taken
// at several points of the fold. Compare the digest across commits.
func TestCrossloopDigest(t *testing.T) {
	if os.Getenv("BENCHKIT_DIGEST") == "" {
		t.Skip("BENCHKIT_DIGEST not set")
	}
	n, kn, pn := envInt("BENCHKIT_EVENTS", 20000), envInt("BENCHKIT_KNOWLEDGE", 100), envInt("BENCHKIT_PATTERNS", 5000)
	evs := preparedWorkload(t, n, kn, pn)
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := crossloop.New(crossloop.Config{})
	f, err := projector.NewFolder(st, []projector.Model{m}, false)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	cats := []string{"", "debugging", "refactor", "feature", "testing", "perf"}
	snap := func(stage int) {
		r := st.Model(crossloop.ModelName)
		all, err := crossloop.AllPatterns(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := crossloop.LoadStats(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(all)
		h.Write(b)
		b, _ = json.Marshal(stats)
		h.Write(b)
		rng := rand.New(rand.NewPCG(uint64(stage), 7))
		for q := range 150 {
			task := benchkit.PatternTask(rng)
			if q%3 == 0 {
				task = benchkit.KnowledgeTask(rng)
			}
			req := crossloop.InjectRequest{Task: task, Category: cats[rng.IntN(len(cats))], TopK: 1 + rng.IntN(10)}
			if q%5 == 0 {
				req.Types = []string{crossloop.TypeError, crossloop.TypeAnti}
			}
			if q%7 == 0 {
				z := 0.0
				req.MinRate = &z
			}
			for pass := range 2 { // cold, then cached
				res, err := crossloop.Rank(context.Background(), r, m.Config(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				h.Write(b)
				if pass == 0 && q < 3 {
					t.Logf("stage %d q %d: %d results", stage, q, len(res))
				}
			}
		}
		t.Logf("stage %d: %d patterns, digest so far %x", stage, len(all), h.Sum(nil)[:8])
	}
	for i, ev := range evs {
		if _, err := f.Fold(ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
		if f.Pending() >= 997 {
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		if (i+1)%(len(evs)/4) == 0 {
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			snap(i)
		}
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	snap(len(evs))
	fmt.Printf("DIGEST %x\n", h.Sum(nil))
}
