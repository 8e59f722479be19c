package test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

// apiClient calls a node's API over NATS, as the CLI does.
type apiClient struct {
	t *testing.T
	c *api.Client
}

func serveAPI(t *testing.T, n *node.Node) apiClient {
	t.Helper()
	svc, err := n.Serve(api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, _ := natstest.Connect(t, n.ClientURL())
	return apiClient{t: t, c: api.NewClient(nc)}
}

// call sends args to lore.api.<group>.<name>; mod adjusts the request.
func (a apiClient) call(group, name string, args any, out any, mod ...func(*api.Request)) error {
	req, err := api.NewRequest(args)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Project = "web"
	for _, m := range mod {
		m(&req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.c.Call(ctx, group, name, req, out)
}

func at(t time.Time) func(*api.Request) { return func(r *api.Request) { r.Now = &t } }
func asOf(t time.Time) func(*api.Request) {
	return func(r *api.Request) { r.AsOf = &t }
}

type patternView struct {
	ID             string  `json:"id"`
	State          string  `json:"state"`
	DecayedHelpful float64 `json:"decayed_helpful"`
	Inverted       bool    `json:"inverted"`
	AntiPattern    string  `json:"anti_pattern"`
}

// TestLearningOverTwoHundredDays: concurrent loops record outcomes over 200
// simulated days through the API; a strategy becomes proven, another is
// inverted, a stale one decays back, and --as-of reproduces day 100.
func TestLearningOverTwoHundredDays(t *testing.T) {
	n := startNode(t, node.Config{})
	runNode(t, n)
	a := serveAPI(t, n)
	strategies := []struct {
		text     string
		days     [2]int // active from, to
		succeeds func(day, i int) bool
	}{
		{"We split by feature", [2]int{0, 200}, func(d, i int) bool { return true }},
		{"We'll split by file type", [2]int{0, 200}, func(d, i int) bool { return i%5 == 0 }},
		{"Sequential execution order", [2]int{0, 12}, func(d, i int) bool { return true }},
	}
	record := func(from, to int) {
		var wg sync.WaitGroup
		for loop := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for d := from + loop; d < to; d += 4 {
					for i, s := range strategies {
						if d < s.days[0] || d >= s.days[1] {
							continue
						}
						ok := s.succeeds(d, d+i)
						dur := 120_000
						if !ok {
							dur = 40 * 60_000
						}
						when := day0.AddDate(0, 0, d).Add(time.Duration(i) * time.Hour)
						err := a.call("learning", "record_outcome", map[string]any{
							"bead_id": fmt.Sprintf("bd-%d.%d", d, i), "duration_ms": dur, "error_count": 0,
							"retry_count": map[bool]int{true: 0, false: 2}[ok], "success": ok,
							"decomposition": s.text, "time": when.Format(time.RFC3339)}, nil)
						if err != nil {
							t.Errorf("record: %v", err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	pattern := func(content string, mods ...func(*api.Request)) patternView {
		t.Helper()
		var p patternView
		if err := a.call("learning", "pattern", map[string]any{"content": content}, &p, mods...); err != nil {
			t.Fatalf("pattern %q: %v", content, err)
		}
		return p
	}
	day100 := day0.AddDate(0, 0, 100).Add(-time.Second) // phase 2 starts at day 100 00:00
	record(0, 100)
	var atDay100 []json.RawMessage
	for _, c := range []string{"Split by feature", "Split by file type", "Sequential execution order"} {
		var raw json.RawMessage
		if err := a.call("learning", "pattern", map[string]any{"content": c}, &raw, at(day100)); err != nil {
			t.Fatal(err)
		}
		atDay100 = append(atDay100, raw)
	}
	record(100, 200)
	end := day0.AddDate(0, 0, 200)

	if p := pattern("Split by feature", at(end)); p.State != "proven" {
		t.Errorf("split by feature: %s (decayed helpful %.2f), want proven", p.State, p.DecayedHelpful)
	}
	if p := pattern("Split by file type", at(end)); !p.Inverted || p.AntiPattern == "" {
		t.Errorf("split by file type not inverted: %+v", p)
	}
	if p := pattern("Sequential execution order", at(day0.AddDate(0, 0, 13))); p.State != "proven" {
		t.Errorf("sequential at day 13: %s, want proven", p.State)
	}
	if p := pattern("Sequential execution order", at(end)); p.State == "proven" {
		t.Errorf("sequential at day 200 is still proven (decayed helpful %.2f): stale patterns must decay", p.DecayedHelpful)
	}
	// --as-of day 100 reproduces what the live model said at day 100.
	for i, c := range []string{"Split by feature", "Split by file type", "Sequential execution order"} {
		var raw json.RawMessage
		if err := a.call("learning", "pattern", map[string]any{"content": c}, &raw, asOf(day100)); err != nil {
			t.Fatal(err)
		}
		var got, want any
		_ = json.Unmarshal(raw, &got)
		_ = json.Unmarshal(atDay100[i], &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: --as-of day 100 differs from the state at day 100:\n got %s\nwant %s", c, raw, atDay100[i])
		}
	}
}

func jsonUnmarshalTest(raw []byte, v any) error { return json.Unmarshal(raw, v) }
