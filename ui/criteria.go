package ui

import (
	"fmt"
	"net/http"
	"time"
)

// The criteria page: criterion weights (decayed helpful vs harmful), each
// with its curve: the decayed sums over the past (audits at earlier
// times) and, dashed, how they decay from here if nothing new arrives
// (the same query evaluated at later times). Deprecated criteria are
// marked with their effective weight.

type criteriaData struct {
	Weights any
	Plots   map[string]string
}

// curveDays is how far back and ahead a curve reaches.
const curveDays = 180

func (s *Server) criteriaPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Criteria", v, err)
		return
	}
	d := criteriaData{Plots: map[string]string{}}
	p := page{Title: "Criteria", Nav: "Criteria", View: v, Data: &d}
	if d.Weights, err = s.query(r.Context(), v, "learning", "weights", nil); err != nil {
		p.Error = err.Error()
		s.render(w, r, status(err), "criteria", p)
		return
	}
	base := s.cfg.Clock().UTC()
	if v.AsOf != nil {
		base = *v.AsOf
	}
	type curve struct{ help, harm, helpF, harmF []point }
	curves := map[string]*curve{}
	at := func(res any, t time.Time, future bool) {
		for _, c := range asList(res) {
			name := fstr(c, "criterion")
			cv := curves[name]
			if cv == nil {
				cv = &curve{}
				curves[name] = cv
			}
			day := t.Sub(base).Hours() / 24
			if future {
				cv.helpF = append(cv.helpF, point{day, fnum(c, "decayed_helpful")})
				cv.harmF = append(cv.harmF, point{day, fnum(c, "decayed_harmful")})
			} else {
				cv.help = append(cv.help, point{day, fnum(c, "decayed_helpful")})
				cv.harm = append(cv.harm, point{day, fnum(c, "decayed_harmful")})
			}
		}
	}
	for _, x := range s.samples(r.Context(), v, "learning", "weights", nil, base.AddDate(0, 0, -curveDays), 7) {
		if x.Err == nil {
			at(x.Res, x.At, false)
		}
	}
	for k := 0; k <= 6; k++ {
		t := base.AddDate(0, 0, k*curveDays/6)
		res, err := s.queryAt(r.Context(), v, "learning", "weights", nil, &t)
		if err != nil {
			p.Error = err.Error()
			break
		}
		at(res, t, true)
	}
	for name, cv := range curves {
		d.Plots[name] = chart{Title: "Criterion " + name + ": decayed feedback", W: 500, H: 220,
			XLabel: func(x float64) string { return fmt.Sprintf("%+.0f d", x) },
			Lines: []line{
				{Name: "helpful", Colour: "#17663a", Points: cv.help}, {Name: "harmful", Colour: "#a8071a", Points: cv.harm},
				{Name: "helpful ahead", Colour: "#17663a", Dash: "5 3", Points: cv.helpF}, {Name: "harmful ahead", Colour: "#a8071a", Dash: "5 3", Points: cv.harmF},
			}}.svg()
	}
	s.render(w, r, http.StatusOK, "criteria", p)
}
