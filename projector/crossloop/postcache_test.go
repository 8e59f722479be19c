package crossloop_test

import (
	"context"
	"sync"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/projector/crossloop"
)

// TestRankFollowsFold: injection queries asked while the fold keeps
// changing a registry with a shared vocabulary (the bench's workload:
// patterns extracted, merged, refreshed; each event committed on its own)
// answer without error, and once the fold has stopped, every query
// answers through the model's cache (its entries brought forward by the
// fold's deltas) exactly as the full scan of the store's postings does,
// pruned pool or not. Queries run concurrently with the fold and with
// each other (run it with -race too).
func TestRankFollowsFold(t *testing.T) {
	st, model, f := sharedRegistry(t, 3000)
	defer st.Close()
	r := st.Model(crossloop.ModelName)
	cfg := model.Config()
	reqs := sharedQueries(60)
	ctx := context.Background()
	answer := func(c crossloop.Config, req crossloop.InjectRequest) string {
		t.Helper()
		rs, err := crossloop.Rank(ctx, r, c, req, nil)
		if err != nil {
			t.Error(err)
			return ""
		}
		raw, _ := json.Marshal(rs)
		return string(raw)
	}
	for _, req := range reqs { // cache every term queried
		answer(cfg, req)
	}
	wl := benchkit.Workload{Seed: 3, Prefix: "follow"}.Stream()
	seq := f.Seq()
	for round := range 3 {
		done := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; ; i += 2 {
					select {
					case <-done:
						return
					default:
					}
					answer(cfg, reqs[i%len(reqs)])
				}
			}()
		}
		for range 400 {
			ev, _, err := wl.Next()
			if err != nil {
				t.Fatal(err)
			}
			seq++
			ev.Seq = seq
			if _, err := f.Fold(ev); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		close(done)
		wg.Wait()
		for i, req := range reqs {
			got := answer(cfg, req)
			old := crossloop.SetPrunePool(false)
			want := answer(crossloop.Uncached(cfg), req)
			crossloop.SetPrunePool(old)
			if got != want {
				t.Fatalf("round %d, query %d (%q): cached answer\n%s\nfull scan\n%s", round, i, req.Task, got, want)
			}
		}
	}
}
