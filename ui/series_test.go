package ui

import (
	"testing"
	"time"
)

// A plot's point moves to the nearest checkpoint time within half the
// spacing (an audit there folds almost nothing), else stays on the minute
// grid.
func TestSnapToCheckpointTimes(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	marks := []time.Time{base.Add(10 * time.Minute), base.Add(50*time.Minute + 7*time.Second), base.Add(55 * time.Minute)}
	for _, c := range []struct {
		t      time.Time
		within time.Duration
		want   time.Time
	}{
		{base.Add(12 * time.Minute), 5 * time.Minute, marks[0]},                                  // after the nearest
		{base.Add(8*time.Minute + 30*time.Second), 5 * time.Minute, marks[0]},                    // before it
		{base.Add(52 * time.Minute), 5 * time.Minute, marks[1]},                                  // two within: the nearer
		{base.Add(54 * time.Minute), 5 * time.Minute, marks[2]},                                  // the later is nearer
		{base.Add(30*time.Minute + 20*time.Second), 5 * time.Minute, base.Add(30 * time.Minute)}, // none within: the grid
		{base.Add(12 * time.Minute), time.Minute, base.Add(12 * time.Minute)},                    // beyond the bound
		{base.Add(90*time.Minute + 59*time.Second), time.Hour, marks[2]},                         // past the last
	} {
		if got := snap(c.t, c.within, marks); !got.Equal(c.want) {
			t.Errorf("snap(%s, %s) = %s, want %s", c.t.Format(time.TimeOnly), c.within, got.Format(time.TimeOnly), c.want.Format(time.TimeOnly))
		}
	}
	if got := snap(base.Add(61*time.Second), time.Hour, nil); !got.Equal(base.Add(time.Minute)) {
		t.Errorf("without checkpoints: %s, want the minute", got)
	}
}

// A plot's points are multiples of a round step: as the present moves on,
// the earlier points stay where they were (their answers are cached), at
// most n+1 points, the last one the present.
func TestGridStaysPutAsThePresentMoves(t *testing.T) {
	from := time.Date(2026, 1, 1, 9, 13, 27, 0, time.UTC)
	to := from.Add(300 * 24 * time.Hour)
	prev := grid(from, to, 12, nil)
	for m := 1; m <= 120; m++ {
		now := to.Add(time.Duration(m) * time.Minute)
		g := grid(from, now, 12, nil)
		if len(g) > 13 || !g[len(g)-1].Equal(now) {
			t.Fatalf("grid to %s: %d points ending %s", now, len(g), g[len(g)-1])
		}
		for i := 0; i < len(prev)-1 && i < len(g)-1; i++ {
			if !g[i].Equal(prev[i]) {
				t.Fatalf("point %d moved from %s to %s as the present moved a minute", i, prev[i], g[i])
			}
		}
		step := g[1].Sub(g[0])
		for i := 1; i < len(g)-1; i++ {
			if g[i].Sub(g[i-1]) != step {
				t.Fatalf("uneven grid: %v", g)
			}
		}
		prev = g
	}
	// A mark within half a step moves its point there.
	mark := prev[3].Add(-2 * time.Hour)
	if g := grid(from, to, 12, []time.Time{mark}); !g[3].Equal(mark) {
		t.Errorf("point 3 at %s, want the mark %s", g[3], mark)
	}
}
