package crossloop_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
)

// TestListEqualsFilteringEveryPattern: List reads heads and loads only the
// page asked for; its answer is the one of filtering every pattern read
// whole (Match) in the listing's order, then cutting, for every filter
// (lineage included) and page.
func TestListEqualsFilteringEveryPattern(t *testing.T) {
	g, err := benchkit.Workload{Seed: 4, Loops: 24, Prefix: "list"}.Generate(6000)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*events.Event
	for _, ev := range g.Events {
		if strings.HasPrefix(ev.Type, "loop.") || strings.HasPrefix(ev.Type, "pattern.") || strings.HasPrefix(ev.Type, "registry.") {
			ev.Seq = uint64(len(evs) + 1)
			evs = append(evs, ev)
		}
	}
	_, r := fold(t, evs)
	all, err := crossloop.AllPatterns(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	loops, tags := map[string]bool{}, map[string]bool{}
	for _, p := range all {
		for _, s := range p.SourceLoops {
			loops[s.LoopID] = true
		}
		for _, tg := range p.Tags {
			tags[tg] = true
		}
	}
	t.Logf("%d patterns, %d loops in lineages, %d tags", len(all), len(loops), len(tags))
	if len(all) < 20 || len(loops) < 5 {
		t.Fatalf("the workload made %d patterns from %d loops: too few to test", len(all), len(loops))
	}
	half, low := 0.5, 0.3
	filters := []crossloop.ListFilter{{}, {Archived: true}, {MinSuccessRate: &half}, {MaxSuccessRate: &low}}
	for _, typ := range []string{crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeAnti, crossloop.TypeTemplate} {
		filters = append(filters, crossloop.ListFilter{Type: typ})
	}
	n := 0
	for l := range loops {
		if n++; n > 4 {
			break
		}
		filters = append(filters, crossloop.ListFilter{FromLoop: l}, crossloop.ListFilter{FromLoop: l, Archived: true})
	}
	for tg := range tags {
		filters = append(filters, crossloop.ListFilter{Tag: tg})
	}
	filters = append(filters, crossloop.ListFilter{FromLoop: "no-such-loop"}, crossloop.ListFilter{Tag: "no-such-tag"})
	order := map[string]int{crossloop.TypeError: 0, crossloop.TypeSuccess: 1, crossloop.TypeAnti: 2, crossloop.TypeTemplate: 3}
	for _, f := range filters {
		for _, page := range [][2]int{{0, 0}, {0, 3}, {2, 5}, {7, 0}, {len(all), 4}} {
			f.Offset, f.Limit = page[0], page[1]
			want, err := crossloop.AllPatterns(r, f.Match)
			if err != nil {
				t.Fatal(err)
			}
			sort.Slice(want, func(i, j int) bool {
				if want[i].Type != want[j].Type {
					return order[want[i].Type] < order[want[j].Type]
				}
				return want[i].ID < want[j].ID
			})
			want = want[min(f.Offset, len(want)):]
			if f.Limit > 0 && len(want) > f.Limit {
				want = want[:f.Limit]
			}
			got, err := crossloop.List(r, f)
			if err != nil {
				t.Fatal(err)
			}
			jg, _ := json.Marshal(got)
			jw, _ := json.Marshal(want)
			if string(jg) != string(jw) {
				t.Fatalf("List(%s) differs from filtering every pattern:\n got %s\nwant %s", show(f), jg, jw)
			}
		}
	}
}

func show(f crossloop.ListFilter) string {
	b, _ := json.Marshal(f)
	return fmt.Sprint(string(b))
}
