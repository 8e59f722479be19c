package ui

import (
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
	Applied     map[string][]string // loop id → titles of patterns it applied
	Improvement string              // SVG
}

func (s *Server) crossloopPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Cross-loop", v, err)
		return
	}
	d := crossloopData{Trends: map[string]string{}, Applied: map[string][]string{}}
	p := page{Title: "Cross-loop", Nav: "Cross-loop", View: v, Data: &d}
	ctx := r.Context()
	if d.Patterns, err = s.query(ctx, v, "patterns", "list", nil); err == nil {
		if d.Metrics, err = s.query(ctx, v, "patterns", "metrics", nil); err == nil {
			d.Loops, err = s.query(ctx, v, "loop", "list", map[string]any{"limit": 200})
		}
	}
	if err != nil {
		p.Error = err.Error()
		s.render(w, r, status(err), "crossloop", p)
		return
	}
	var first time.Time
	for _, pat := range asList(d.Patterns) {
		var pts []point
		for _, t := range asList(field(pat, "effectiveness_trend")) {
			at, err := time.Parse(time.RFC3339Nano, fstr(t, "timestamp"))
			if err != nil {
				continue
			}
			pts = append(pts, point{float64(at.Unix()), fnum(t, "success_rate_snapshot")})
			if first.IsZero() || at.Before(first) {
				first = at
			}
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
	for _, l := range asList(d.Loops) {
		if at, err := time.Parse(time.RFC3339Nano, fstr(l, "started_at")); err == nil && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	for k := range d.Applied {
		sort.Strings(d.Applied[k])
	}
	if !first.IsZero() {
		var pts []point
		for _, x := range s.samples(ctx, v, "patterns", "metrics", nil, first, plotPoints) {
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
