package ui

import (
	"strings"
	"testing"
)

func TestChartEscapesTextAndDrawsWhatIsInRange(t *testing.T) {
	svg := chart{Title: `<script>alert(1)</script>`, YMax: 1,
		Lines:      []line{{Name: "a & b", Colour: "#000", Points: []point{{0, 0.2}, {1, 0.4}}}, {Name: "empty", Colour: "#111"}},
		Thresholds: []threshold{{Y: 0.3, Label: "in <range>", Colour: "#f00"}, {Y: 4, Label: "above", Colour: "#0f0"}}}.svg()
	for _, want := range []string{`aria-label="&lt;script&gt;alert(1)&lt;/script&gt;"`, "a &amp; b", "in &lt;range&gt;"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %s", want)
		}
	}
	if strings.Contains(svg, "<script>") || strings.Contains(svg, "above") {
		t.Errorf("svg has raw markup or a threshold out of range: %s", svg)
	}
	if n := strings.Count(svg, "<polyline"); n != 1 {
		t.Errorf("%d polylines, want one per line with points", n)
	}
}

func TestNumShowsIntegersAsSuchAndOthersWithFourDecimals(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{{float64(547), "547"}, {0.767352972815078, "0.7674"}, {nil, "–"}, {"x", "x"}, {float64(-2), "-2"}} {
		if got := num(tc.in); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
