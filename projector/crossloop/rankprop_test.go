package crossloop_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestRankPrunedEqualsExhaustive: on random registries of a small shared
// vocabulary (every query term has hundreds of postings, texts of varied
// lengths with repeated words, many equal scores), Rank through the
// model's posting cache (preloaded, pruned pool, bounds) answers exactly
// what the exhaustive ranking answers (no cache, every posting scored,
// every candidate's scoring record read), for random tasks (with words no
// pattern holds, one-word tasks), categories, top-k, rates, types and
// candidate pools.
func TestRankPrunedEqualsExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	rounds, size := 4, 2500
	if testing.Short() {
		rounds, size = 2, 1200
	}
	types := []string{crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeAnti, crossloop.TypeTemplate}
	cats := []string{"debugging", "testing", "perf"}
	for round := range rounds {
		vocab := make([]string, 15+rng.IntN(25))
		for i := range vocab {
			vocab[i] = fmt.Sprintf("v%c%d", 'a'+rune(round), i)
		}
		text := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = vocab[rng.IntN(len(vocab))]
				if rng.IntN(5) == 0 {
					ws[i] = "the " + ws[i] // a stop word: bigrams beyond the terms
				}
			}
			return strings.Join(ws, " ")
		}
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		model := crossloop.New(crossloop.Config{})
		f, err := projector.NewFolder(st, []projector.Model{model}, false)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < size; i += 500 {
			d := &events.RegistryImported{}
			for j := i; j < min(i+500, size); j++ {
				typ := types[rng.IntN(len(types))]
				id := fmt.Sprintf("pat-%s-r%d-%05d", typ, round, j)
				if typ == crossloop.TypeTemplate {
					id = fmt.Sprintf("tmpl-r%d-%05d", round, j)
				}
				p := crossloop.Pattern{ID: id, Type: typ, Title: text(1 + rng.IntN(3)),
					Category: cats[rng.IntN(len(cats))], Successful: rng.IntN(6), Failed: rng.IntN(3), FirstDiscovered: at, LastUsed: at}
				p.UsageCount = p.Successful + p.Failed
				if p.UsageCount > 0 {
					p.SuccessRate = float64(p.Successful) / float64(p.UsageCount)
				}
				switch typ {
				case crossloop.TypeError:
					p.ErrorType, p.ErrorPattern, p.FixDescription = "TypeError", text(2+rng.IntN(12)), text(1+rng.IntN(8))
				case crossloop.TypeSuccess:
					p.TaskPattern, p.Approach = text(2+rng.IntN(10)), text(1+rng.IntN(6))
				case crossloop.TypeAnti:
					p.FailureMode, p.WhyItFails = "scope_creep", text(2+rng.IntN(12))
				default:
					p.UseCase, p.Language = text(2+rng.IntN(10)), "go"
				}
				raw, _ := json.Marshal(p)
				d.Patterns = append(d.Patterns, raw)
			}
			ev, err := events.New("registry.imported/v1", "default", "test", at, d)
			if err != nil {
				t.Fatal(err)
			}
			ev.Seq = uint64(i/500 + 1)
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		r := st.Model(crossloop.ModelName)
		answered := 0
		for q := range 150 {
			req := crossloop.InjectRequest{Task: "fix " + text(2+rng.IntN(5)), TopK: 1 + rng.IntN(12)}
			switch q % 5 {
			case 1: // a word no pattern holds, inside the task's bigrams
				req.Task += " zz" + fmt.Sprint(rng.IntN(9)) + " " + text(1)
			case 2: // a one-word task: its bigram set is the word
				req.Task = text(1)
				if strings.HasPrefix(req.Task, "the ") {
					req.Task = req.Task[4:]
				}
			}
			if q%2 == 0 {
				req.Category = cats[rng.IntN(len(cats))]
			}
			if q%3 == 0 {
				req.MinRate = new(float64)
			}
			if q%4 == 0 {
				req.Types = types[:1+rng.IntN(4)]
			}
			cfg := model.Config()
			cfg.CandidatePool = []int{1, 5, 50, 200, 600}[rng.IntN(5)]
			cfg.MaxInjected = 20
			got, err := crossloop.Rank(context.Background(), r, cfg, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			oldPrune, oldBound := crossloop.SetPrunePool(false), crossloop.SetBoundScoring(false)
			want, err := crossloop.Rank(context.Background(), r, crossloop.Uncached(cfg), req, nil)
			crossloop.SetPrunePool(oldPrune)
			crossloop.SetBoundScoring(oldBound)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) > 0 {
				answered++
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("round %d, query %d (%+v, pool %d):\ngot  %s\nwant %s", round, q, req, cfg.CandidatePool, g, w)
			}
		}
		st.Close()
		if answered < 75 { // a one-word task of a common word reads no term
			t.Fatalf("round %d: %d of 150 queries answered", round, answered)
		}
	}
}
