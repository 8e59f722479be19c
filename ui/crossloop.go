package ui

import (
	"context"
	"net/http"
	"sort"
	"time"
)

// The cross-loop page: the pattern registry with each pattern's lineage
// and effectiveness trend, the loops with what was injected into them and
// what they applied, and the improvement percentage over time (the
// registry's metrics as of earlier times).

type crossloopData struct {
	Patterns    any
	Trends      map[string]string
	Metrics     any
	Loops       any
	Applied     map[string][]string // loop id → titles of this page's patterns it applied
	Improvement string              // SVG
	Page        pager               // the registry's page
}

// registryPage is how many patterns a page of the registry shows;
// impactLoops how many loops the impact table lists.
const (
	registryPage = 50
	impactLoops  = 50
)

func (s *Server) crossloopPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Cross-loop", v, err)
		return
	}
	d := crossloopData{Trends: map[string]string{}, Applied: map[string][]string{}}
	p := page{Title: "Cross-loop", Nav: "Cross-loop", View: v, Data: &d}
	if d.Page, err = newPager(r, registryPage); err != nil {
		s.fail(w, r, "Cross-loop", v, err)
		return
	}
	ctx := r.Context()
	if d.Patterns, err = s.query(ctx, v, "patterns", "list", d.Page.args(nil)); err == nil {
		if d.Metrics, err = s.query(ctx, v, "patterns", "metrics", map[string]any{"loops": impactLoops}); err == nil {
			d.Loops, err = s.query(ctx, v, "loop", "list", map[string]any{"limit": 200})
		}
	}
	if err != nil {
		p.Error = err.Error()
		s.render(w, r, status(err), "crossloop", p)
		return
	}
	d.Patterns = d.Page.cut(d.Patterns)
	for _, pat := range asList(d.Patterns) {
		var pts []point
		for _, t := range asList(field(pat, "effectiveness_trend")) {
			at, err := time.Parse(time.RFC3339Nano, fstr(t, "timestamp"))
			if err != nil {
				continue
			}
			pts = append(pts, point{float64(at.Unix()), fnum(t, "success_rate_snapshot")})
		}
		d.Trends[fstr(pat, "pattern_id")] = chart{Title: "Success rate of " + fstr(pat, "title"), W: 320, H: 150, YMax: 1,
			Time: true, Lines: []line{{Name: "success rate", Colour: "#0b5cad", Points: pts}}}.svg()
		for _, src := range asList(field(pat, "source_loops")) {
			if fstr(src, "role") == "applied" {
				id := fstr(src, "loop_id")
				d.Applied[id] = append(d.Applied[id], fstr(pat, "title"))
			}
		}
	}
	for k := range d.Applied {
		sort.Strings(d.Applied[k])
	}
	// The improvement over time starts at the log's first loop: the
	// metrics alone (no loop list) at each point.
	if first, ok := s.firstLoopStart(ctx); ok {
		var pts []point
		for _, x := range s.samples(ctx, v, "patterns", "metrics", map[string]any{"loops": 0}, first, plotPoints) {
			if x.Err != nil {
				continue
			}
			b := field(field(x.Res, "effectiveness_metrics"), "cross_loop_benefit")
			pts = append(pts, point{float64(x.At.Unix()), fnum(b, "improvement_percentage")})
		}
		d.Improvement = chart{Title: "Improvement in iterations with injected patterns (%) over time", Time: true,
			Lines: []line{{Name: "improvement %", Colour: "#17663a", Points: pts}}}.svg()
	}
	s.render(w, r, http.StatusOK, "crossloop", p)
}

// firstLoopStart is the time of the log's first loop.started (ok false:
// none yet).
func (s *Server) firstLoopStart(ctx context.Context) (time.Time, bool) {
	res, err := s.query(ctx, view{}, "events", "tail", map[string]any{"from_seq": 1, "limit": 1, "types": []string{"loop.started"}})
	if err != nil {
		return time.Time{}, false
	}
	evs := asList(field(res, "events"))
	if len(evs) == 0 {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, fstr(field(evs[0], "event"), "time"))
	return at, err == nil
}
