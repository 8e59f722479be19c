package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// The plot is an SVG written by hand: three panels side by side —
// cumulative success rate, precision/recall of proven patterns, and of
// anti-patterns — each over observations (recorded attempts), one colour
// per arm, the mean over seeds bold (each seed faint for the success rate).

const (
	panelW, panelH = 400, 300
	marginL        = 50
	marginR        = 15
	marginT        = 40
	marginB        = 45
	legendH        = 50
	gridSteps      = 200
)

// colours of the series: the arms of one policy, or each policy's arms.
var seriesColour = map[string]string{ArmUnguided: "#d95f02", ArmSteered: "#1b9e77",
	PolicySeed + " " + ArmUnguided: "#d95f02", PolicySeed + " " + ArmSteered: "#1b9e77",
	PolicyEvidence + " " + ArmUnguided: "#7570b3", PolicyEvidence + " " + ArmSteered: "#e7298a"}

// seriesOf names runs' series: by arm when the runs have one policy, else
// by policy and arm; in the order seed, evidence and unguided, steered.
func seriesOf(runs []Result) (keys []string, key func(Result) string) {
	policies := map[string]bool{}
	for _, r := range runs {
		policies[r.Policy] = true
	}
	if len(policies) <= 1 {
		return []string{ArmUnguided, ArmSteered}, func(r Result) string { return r.Arm }
	}
	for _, p := range []string{PolicySeed, PolicyEvidence} {
		for _, a := range []string{ArmUnguided, ArmSteered} {
			keys = append(keys, p+" "+a)
		}
	}
	return keys, func(r Result) string { return r.Policy + " " + r.Arm }
}

type panel struct {
	title   string
	metrics []Metric
	dashes  []string // per metric
	names   []string
}

// Plot writes the SVG of runs (any number of seeds, both arms, one or
// both policies).
func Plot(w io.Writer, runs []Result) error {
	panels := []panel{
		{"cumulative success rate of attempts", []Metric{MetricSuccess}, []string{""}, []string{"success rate"}},
		{"proven patterns vs good strategies", []Metric{MetricProvenP, MetricProvenR}, []string{"", "6 4"}, []string{"precision", "recall"}},
		{"anti-patterns vs bad strategies", []Metric{MetricAntiP, MetricAntiR}, []string{"", "6 4"}, []string{"precision", "recall"}},
		{"confident bad verdicts vs bad strategies", []Metric{MetricConfP, MetricConfR}, []string{"", "6 4"}, []string{"precision", "recall"}},
	}
	series, keyOf := seriesOf(runs)
	curves := map[string][][]Point{}
	maxX := 0
	for _, r := range runs {
		curves[keyOf(r)] = append(curves[keyOf(r)], r.Curve)
		if n := len(r.Curve); n > 0 && r.Curve[n-1].Obs > maxX {
			maxX = r.Curve[n-1].Obs
		}
	}
	if maxX == 0 {
		maxX = 1
	}
	maxX = niceCeil(maxX)
	W, H := len(panels)*(panelW+marginL+marginR)+20, panelH+marginT+marginB+legendH+18*(len(series)-2)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	for pi, p := range panels {
		x0 := 10 + pi*(panelW+marginL+marginR) + marginL
		y0 := marginT
		sx := func(x float64) float64 { return float64(x0) + x/float64(maxX)*panelW }
		sy := func(y float64) float64 { return float64(y0) + (1-y)*panelH }
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", x0+panelW/2, y0-15, p.title)
		// grid and axes
		for i := 0; i <= 5; i++ {
			y := float64(i) / 5
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e0e0e0"/>`+"\n", x0, sy(y), x0+panelW, sy(y))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", x0-6, sy(y)+4, y)
		}
		for i := 0; i <= 4; i++ {
			x := float64(maxX) * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0e0e0"/>`+"\n", sx(x), y0, sx(x), y0+panelH)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", sx(x), y0+panelH+16, int(x))
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>`+"\n", x0, y0, panelW, panelH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">observations (recorded attempts)</text>`+"\n", x0+panelW/2, y0+panelH+34)
		// the unguided arm is drawn wider, under the steered one, so that
		// equal values (often 0 or 1) show both colours
		for ai, arm := range series {
			width := []float64{4, 2}[ai%2]
			for mi, m := range p.metrics {
				if pi == 0 { // precision and recall flip too often to show each seed
					for _, c := range curves[arm] {
						path(&b, seedLine(c, m), sx, sy, seriesColour[arm], p.dashes[mi], 1, 0.3)
					}
				}
				path(&b, MeanCurve(curves[arm], m, gridSteps), sx, sy, seriesColour[arm], p.dashes[mi], width, 1)
			}
		}
		// legend under the panel
		ly := y0 + panelH + 52
		lx := x0
		for si, arm := range series {
			for mi := range p.metrics {
				dash := ""
				if p.dashes[mi] != "" {
					dash = fmt.Sprintf(` stroke-dasharray="%s"`, p.dashes[mi])
				}
				fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`+"\n", lx, ly-4, lx+24, ly-4, seriesColour[arm], dash)
				label := arm
				if len(p.metrics) > 1 {
					label += " " + p.names[mi]
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+30, ly, label)
				lx += 30 + 8*len(label) + 10
				// a line per series when a panel has several metrics, else per
				// two series
				if mi == len(p.metrics)-1 && (len(p.metrics) > 1 || si%2 == 1) && si < len(series)-1 {
					lx, ly = x0, ly+18
				}
			}
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">bold: mean over %d seed(s), up to the shortest run; faint: each seed. Precision is undefined (a gap) while lore claims nothing.</text>`+"\n",
		10+marginL, H-6, len(curves[series[len(series)-1]]))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// seedLine is one seed's curve as steps: each value holds until the next point.
func seedLine(c []Point, m Metric) []XY {
	out := make([]XY, 0, 2*len(c))
	for i, p := range c {
		y := float64(m(p))
		if i > 0 {
			out = append(out, XY{X: float64(p.Obs), Y: float64(m(c[i-1]))})
		}
		out = append(out, XY{X: float64(p.Obs), Y: y})
	}
	return out
}

// path draws a polyline, starting a new piece after each NaN gap.
func path(b *strings.Builder, pts []XY, sx, sy func(float64) float64, colour, dash string, width, opacity float64) {
	var d strings.Builder
	pen := false
	for _, p := range pts {
		if math.IsNaN(p.Y) {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, sx(p.X), sy(p.Y))
		pen = true
	}
	if d.Len() == 0 {
		return
	}
	extra := ""
	if dash != "" {
		extra = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="%g" stroke-opacity="%g"%s/>`+"\n",
		strings.TrimSpace(d.String()), colour, width, opacity, extra)
}

// niceCeil rounds n up to four times a round tick (1, 2, 2.5 or 5 times a
// power of ten), so that the x axis ends near the data on a round number.
func niceCeil(n int) int {
	for p := 1; ; p *= 10 {
		for _, k := range []float64{1, 2, 2.5, 5} {
			if q := k * float64(p); 4*q >= float64(n) && q == math.Trunc(q) {
				return 4 * int(q)
			}
		}
	}
}
