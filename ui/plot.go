package ui

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// Plots are SVG written by hand, as sim/plot.go writes its own: a line
// chart with labelled axes, one colour and dash per series, and the
// thresholds as labelled horizontal lines. Every text is escaped.

type point struct{ X, Y float64 }

type line struct {
	Name   string
	Colour string
	Dash   string
	Points []point
}

type threshold struct {
	Y      float64
	Label  string
	Colour string
}

type chart struct {
	Title  string
	W, H   int
	XLabel func(x float64) string
	// Time labels x (Unix seconds) as dates, with the time of day when
	// the span is under three days (XLabel then unused).
	Time       bool
	YMin, YMax float64 // YMax 0: from the data
	Lines      []line
	Thresholds []threshold
}

const (
	plotML, plotMR, plotMT, plotMB = 48, 12, 28, 52
)

// svg renders the chart; its title is the image's accessible name.
func (c chart) svg() string {
	if c.W == 0 {
		c.W, c.H = 560, 240
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	maxY := c.YMax
	for _, l := range c.Lines {
		for _, p := range l.Points {
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
			if c.YMax == 0 {
				maxY = math.Max(maxY, p.Y)
			}
		}
	}
	if c.YMax == 0 {
		for _, t := range c.Thresholds {
			maxY = math.Max(maxY, t.Y)
		}
		maxY = niceCeil(maxY * 1.05)
	}
	if math.IsInf(minX, 1) {
		minX, maxX = 0, 1
	}
	if maxX == minX {
		maxX = minX + 1
	}
	if maxY <= c.YMin {
		maxY = c.YMin + 1
	}
	pw, ph := float64(c.W-plotML-plotMR), float64(c.H-plotMT-plotMB)
	sx := func(x float64) float64 { return plotML + (x-minX)/(maxX-minX)*pw }
	sy := func(y float64) float64 { return plotMT + (1-(y-c.YMin)/(maxY-c.YMin))*ph }
	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s" class="plot">`, c.W, c.H, esc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="#fff" stroke="#888"/>`, plotML, plotMT, pw, ph)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`, plotML, esc(c.Title))
	for i := 0; i <= 4; i++ {
		y := c.YMin + (maxY-c.YMin)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`, plotML, plotML+pw, sy(y), sy(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text>`, plotML-4, sy(y)+3, trimNum(y))
	}
	for i := 0; i <= 3; i++ {
		x := minX + (maxX-minX)*float64(i)/3
		label := trimNum(x)
		switch {
		case c.Time && maxX-minX < 3*86400:
			label = time.Unix(int64(x), 0).UTC().Format("01-02 15:04")
		case c.Time:
			label = time.Unix(int64(x), 0).UTC().Format("2006-01-02")
		case c.XLabel != nil:
			label = c.XLabel(x)
		}
		anchor := "middle"
		if i == 3 {
			anchor = "end"
		} else if i == 0 {
			anchor = "start"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s">%s</text>`, sx(x), plotMT+ph+14, anchor, esc(label))
	}
	for i, t := range c.Thresholds {
		if t.Y < c.YMin || t.Y > maxY {
			continue
		}
		// Labels alternate sides so that close thresholds stay readable.
		tx, anchor := plotML+pw-3, "end"
		if i%2 == 1 {
			tx, anchor = plotML+3, "start"
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>`, plotML, plotML+pw, sy(t.Y), sy(t.Y), t.Colour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s" fill="%s">%s</text>`, tx, sy(t.Y)-3, anchor, t.Colour, esc(t.Label))
	}
	lx := float64(plotML)
	for _, l := range c.Lines {
		var pts []string
		for _, p := range l.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Y)))
		}
		dash := ""
		if l.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, l.Dash)
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, l.Colour, dash, strings.Join(pts, " "))
			for _, p := range l.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, sx(p.X), sy(p.Y), l.Colour)
			}
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, lx, lx+18, c.H-12, c.H-12, l.Colour, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11">%s</text>`, lx+22, c.H-8, esc(l.Name))
		lx += 40 + 7*float64(len(l.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func trimNum(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
