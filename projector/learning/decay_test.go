package learning_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loredev/lore/projector/learning"
)

// TestDecaySumsMatchDirect folds many random feedback terms (in random
// order, so some are backfilled) into DecaySums and compares the O(1)
// evaluation with the direct formula Σ v·0.5^(age/H), within 1e-9 relative.
func TestDecaySumsMatchDirect(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		halfLife float64
		spanDays float64
		n        int
	}{
		{"90-day half-life over two years", 90, 730, 20000},
		{"one-day half-life over ten years (epoch re-based)", 1, 3650, 20000},
		{"short span, many terms", 90, 2, 50000},
		{"fractional half-life", 0.25, 400, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.n)))
			type term struct {
				at  time.Time
				typ learning.FeedbackType
				v   float64
			}
			terms := make([]term, tc.n)
			var newest time.Time
			for i := range terms {
				at := base.Add(time.Duration(rng.Float64() * tc.spanDays * 24 * float64(time.Hour))).Truncate(time.Millisecond)
				typ := []learning.FeedbackType{learning.Helpful, learning.Harmful, learning.Neutral}[rng.IntN(3)]
				terms[i] = term{at, typ, rng.Float64()}
				if typ != learning.Neutral && at.After(newest) {
					newest = at
				}
			}
			var s learning.DecaySums
			for _, tm := range terms {
				s.Add(tm.at, tm.typ, tm.v, tc.halfLife)
			}
			for _, now := range []time.Time{newest, newest.Add(time.Hour), newest.Add(45 * 24 * time.Hour)} {
				var h, x float64
				for _, tm := range terms {
					d, err := learning.DecayFactor(tm.at, now, tc.halfLife)
					if err != nil {
						t.Fatal(err)
					}
					switch tm.typ {
					case learning.Helpful:
						h += tm.v * d
					case learning.Harmful:
						x += tm.v * d
					}
				}
				gh, gx, exact := s.At(now, tc.halfLife)
				if !exact {
					t.Fatalf("At(%s) not exact with newest %s", now, newest)
				}
				for _, c := range []struct {
					name      string
					got, want float64
				}{{"helpful", gh, h}, {"harmful", gx, x}} {
					if rel := math.Abs(c.got-c.want) / math.Max(math.Abs(c.want), 1e-300); c.want != 0 && rel > 1e-9 {
						t.Errorf("now %s: %s = %v, direct %v (relative error %g)", now, c.name, c.got, c.want, rel)
					}
				}
				if w, d := learning.CriterionWeight(gh, gx), learning.CriterionWeight(h, x); math.Abs(w-d) > 1e-9 {
					t.Errorf("weight %v, direct %v", w, d)
				}
			}
			if _, _, exact := s.At(newest.Add(-time.Second), tc.halfLife); exact {
				t.Errorf("At before the newest term must ask for a direct sum")
			}
		})
	}
}

func TestDecayFactorRefusesBadHalfLife(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, hl := range []float64{0, -5, math.NaN(), math.Inf(1)} {
		if _, err := learning.DecayFactor(now, now, hl); err == nil {
			t.Errorf("half-life %v accepted", hl)
		}
	}
	if d, err := learning.DecayFactor(now.Add(time.Hour), now, 90); err != nil || d != 1 {
		t.Errorf("future time: %v %v, want 1 (age clamped at 0)", d, err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := learning.DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := []func(*learning.Config){
		func(c *learning.Config) { c.Learning.HalfLifeDays = 0 },
		func(c *learning.Config) { c.Maturity.MaxHarmful = 2 },
		func(c *learning.Config) { c.AntiPattern.FailureRatioThreshold = math.NaN() },
		func(c *learning.Config) { c.CriterionHalfLifeDays = map[string]float64{"x": -1} },
		func(c *learning.Config) { c.Learning.SlowCompletionThresholdMs = 1 },
	}
	for i, f := range bad {
		c := learning.DefaultConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: invalid config accepted", i)
		}
		if _, err := learning.New(c); err == nil {
			t.Errorf("case %d: New accepted an invalid config", i)
		}
	}
}
