package ui

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/loredev/lore/app"
)

// The patterns page: decomposition patterns with their maturity, the
// anti-patterns with their AVOID text; a pattern's page: its decayed
// helpful/harmful over time with the thresholds, the timeline of its
// transitions, why it is in its state, and the manual actions.

type patternsData struct {
	State    string // the state filter
	Patterns any
	Anti     any
	Page     pager
}

// patternsPageSize is how many patterns a page of the list shows.
const patternsPageSize = 100

func (s *Server) patternsPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Patterns", v, err)
		return
	}
	d := patternsData{}
	p := page{Title: "Patterns", Nav: "Patterns", View: v, Data: &d}
	code := http.StatusOK
	if d.Page, err = newPager(r, patternsPageSize); err != nil {
		s.fail(w, r, "Patterns", v, err)
		return
	}
	args := map[string]any{}
	if d.State = r.FormValue("state"); d.State != "" {
		args["state"] = d.State
	}
	if d.Patterns, err = s.query(r.Context(), v, "learning", "patterns", d.Page.args(args)); err == nil {
		d.Patterns = d.Page.cut(d.Patterns)
		d.Anti, err = s.query(r.Context(), v, "learning", "anti_patterns", nil)
	}
	if err != nil {
		p.Error, code = err.Error(), status(err)
	}
	s.render(w, r, code, "patterns", p)
}

type transition struct {
	At    string
	What  string
	Exact bool // false: seen between two samples
}

type patternData struct {
	ID       string
	Pattern  any
	Plot     string
	Ratio    string
	Timeline []transition
}

// plotPoints is how many points a plot over time samples.
const plotPoints = 12

func (s *Server) patternPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Pattern", v, err)
		return
	}
	id := r.FormValue("id")
	d := patternData{ID: id}
	p := page{Title: "Pattern", Nav: "Patterns", View: v, Data: &d}
	if d.Pattern, err = s.query(r.Context(), v, "learning", "pattern", map[string]any{"pattern_id": id}); err != nil {
		p.Error = err.Error()
		s.render(w, r, status(err), "pattern", p)
		return
	}
	p.Title = "Pattern: " + fstr(d.Pattern, "content")
	created, _ := time.Parse(time.RFC3339Nano, fstr(d.Pattern, "created_at"))
	smp := s.samples(r.Context(), v, "learning", "pattern", map[string]any{"pattern_id": id}, created, plotPoints)
	cfg := app.LearningModel().Config().Maturity
	var help, harm, ratio []point
	prev := ""
	for i, x := range smp {
		var h, hm, rt float64
		state := ""
		if x.Err == nil {
			h, hm, rt = fnum(x.Res, "decayed_helpful"), fnum(x.Res, "decayed_harmful"), fnum(x.Res, "harmful_ratio")
			state = fstr(x.Res, "state")
		}
		t := float64(x.At.Unix())
		help, harm, ratio = append(help, point{t, h}), append(harm, point{t, hm}), append(ratio, point{t, rt})
		if state != "" && state != prev && i > 0 {
			d.Timeline = append(d.Timeline, transition{At: fmt.Sprintf("between %s and %s", smp[i-1].At.Format("2006-01-02 15:04"), x.At.Format("2006-01-02 15:04 UTC")),
				What: fmt.Sprintf("%s → %s", orNone(prev), state)})
		}
		prev = state
	}
	d.Plot = chart{Title: "Decayed helpful and harmful feedback over time", Time: true,
		Lines: []line{{Name: "decayed helpful", Colour: "#17663a", Points: help}, {Name: "decayed harmful", Colour: "#a8071a", Dash: "6 3", Points: harm}},
		Thresholds: []threshold{
			{Y: cfg.MinHelpful - 0.01, Label: fmt.Sprintf("proven: helpful ≥ %.2f", cfg.MinHelpful-0.01), Colour: "#17663a"},
			{Y: cfg.MinFeedback - 0.01, Label: fmt.Sprintf("candidate below total %.2f", cfg.MinFeedback-0.01), Colour: "#8a5a00"},
		}}.svg()
	d.Ratio = chart{Title: "Harmful ratio over time", Time: true, YMax: 1,
		Lines: []line{{Name: "harmful / (helpful + harmful)", Colour: "#a8071a", Points: ratio}},
		Thresholds: []threshold{
			{Y: cfg.DeprecationThreshold, Label: fmt.Sprintf("deprecated above %.2f", cfg.DeprecationThreshold), Colour: "#a8071a"},
			{Y: cfg.MaxHarmful, Label: fmt.Sprintf("proven below %.2f", cfg.MaxHarmful), Colour: "#17663a"},
		}}.svg()
	// The announcements are the exact transitions; the points of the plot
	// only bound them (the derived stream may be trimmed, or empty for a
	// pattern that never changed state).
	exact, terr := s.transitions(r.Context(), v, fstr(d.Pattern, "id"))
	if terr != nil {
		p.Error = terr.Error()
	}
	marks := []struct{ key, what string }{{"created_at", "first observed (candidate)"}}
	if len(exact) > 0 {
		d.Timeline = exact
	} else {
		marks = append(marks, struct{ key, what string }{"promoted_at", "promoted"},
			struct{ key, what string }{"inverted_at", "inverted into an anti-pattern"},
			struct{ key, what string }{"state_since", "in its state since: " + fstr(d.Pattern, "state_reason")})
	}
	for _, k := range marks {
		if t := fstr(d.Pattern, k.key); t != "" {
			d.Timeline = append(d.Timeline, transition{At: when(t), What: k.what, Exact: true})
		}
	}
	sort.SliceStable(d.Timeline, func(i, j int) bool { return timelineKey(d.Timeline[i]) < timelineKey(d.Timeline[j]) })
	s.render(w, r, http.StatusOK, "pattern", p)
}

func timelineKey(t transition) string { return strings.TrimPrefix(t.At, "between ") }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// patternAction runs promote, deprecate (with its reason) or reset through
// the command pipeline.
func (s *Server) patternAction(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	back := link("/patterns/show", v, "id", r.FormValue("id"))
	if err != nil {
		redirect(w, r, back, err.Error())
		return
	}
	act := r.FormValue("action")
	switch act {
	case "promote", "deprecate", "reset":
	default:
		redirect(w, r, back, fmt.Sprintf("unknown action %q", act))
		return
	}
	args := map[string]any{"pattern_id": r.FormValue("id")}
	if reason := strings.TrimSpace(r.FormValue("reason")); reason != "" {
		args["reason"] = reason
	}
	if _, err := s.command(r.Context(), v, "learning", act, args); err != nil {
		redirect(w, r, back, act+" refused: "+err.Error())
		return
	}
	redirect(w, r, back, act+": done")
}
