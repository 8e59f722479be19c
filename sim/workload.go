// Package sim is lore's learning-efficacy simulation: a swarm of simulated
// loops chooses among decomposition strategies whose true success rates lore
// never sees, records how each attempt ended, and (in the steered arm) lets
// lore's decomposition prompt steer later choices. The pure parts — the
// seeded workload, the choice policies, the metrics and the SVG plot — are
// here; run.go drives a lore node through its NATS API.
package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/loredev/lore/projector/learning"
)

// Truth thresholds: a strategy whose true success rate is >= GoodRate should
// become proven; one <= BadRate should be inverted (or deprecated).
const (
	GoodRate = 0.7
	BadRate  = 0.35
)

// Truth classes.
const (
	TruthGood  = "good"
	TruthBad   = "bad"
	TruthMixed = "mixed"
)

// phrases name each of lore's twelve strategies in words its extraction
// recognises (one phrase matches exactly its own strategy; tested).
var phrases = map[string]string{
	"Split by file type":             "split by file type",
	"Split by component":             "split by component",
	"Split by layer (UI/logic/data)": "split by layer",
	"Split by feature":               "split by feature",
	"One file per subtask":           "one file per subtask",
	"Handle shared types first":      "shared types first",
	"Separate API routes":            "keep api routes separate",
	"Tests alongside implementation": "tests alongside implementation",
	"Tests in separate subtask":      "tests in separate subtask",
	"Maximize parallelization":       "parallelize everything",
	"Sequential execution order":     "sequential execution",
	"Respect dependency chain":       "dependency order",
}

// Workloads.
const (
	WorkloadDefault = "default"
	WorkloadHard    = "hard"
)

// HardBadRate is the hard workload's truth line: there every strategy
// below GoodRate is bad (lore's own deprecation line, a harmful ratio above
// 0.3), and no rate is drawn near the line (0.62 < rate < 0.75) except by
// drift.
const HardBadRate = 0.7

// HardHalfLifeDays is the half-life the hard workload runs lore with by
// default: its drift happens within hours of simulated time, which lore's
// default of 90 days could not follow (the seeds' own advice: tune
// halfLifeDays to the project).
const HardHalfLifeDays = 0.5

// Strategy is one way to decompose a task, with its hidden success rate.
type Strategy struct {
	// Label is the pattern content lore extracts (learning.StrategyLabels).
	Label string `json:"label"`
	// Decomposition is the text a loop reports; lore extracts Label from it.
	Decomposition string  `json:"decomposition"`
	Rate          float64 `json:"rate"`
	// LateRate is the true rate after the drift (halfway through the
	// tasks); equal to Rate for a strategy that does not drift.
	LateRate float64 `json:"late_rate"`
	// BadBelow, when set, is the rate under which the strategy is bad
	// (hard workload: HardBadRate); else BadRate inclusive.
	BadBelow float64 `json:"bad_below,omitempty"`
}

// Late is the true rate after the drift (Rate when LateRate is unset).
func (s Strategy) Late() float64 {
	if s.LateRate == 0 {
		return s.Rate
	}
	return s.LateRate
}

// Drifts reports whether the strategy's true rate changes halfway.
func (s Strategy) Drifts() bool { return s.Late() != s.Rate }

// Truth classifies the strategy by its true success rate at the end (after
// any drift): what lore's final verdicts are scored against.
func (s Strategy) Truth() string { return s.truthOf(s.Late()) }

// EarlyTruth classifies the strategy by its rate before any drift: what
// detection within the first observations is scored against.
func (s Strategy) EarlyTruth() string { return s.truthOf(s.Rate) }

func (s Strategy) truthOf(rate float64) string {
	switch {
	case rate >= GoodRate:
		return TruthGood
	case s.BadBelow > 0 && rate < s.BadBelow:
		return TruthBad
	case s.BadBelow == 0 && rate <= BadRate:
		return TruthBad
	}
	return TruthMixed
}

// rate ranges of the three classes the workload mixes.
var classRanges = [3][2]float64{
	{0.75, 0.97}, // good
	{0.05, 0.30}, // bad
	{0.45, 0.62}, // mixed
}

// NewWorkload draws n strategies (1..12) for a seed: distinct labels in a
// seeded order, classes cycling good, bad, mixed (so every workload of three
// or more strategies has each class), rates uniform within the class range
// rounded to 0.01. The same seed and n give the same workload.
func NewWorkload(seed uint64, n int) ([]Strategy, error) {
	labels := learning.StrategyLabels()
	if n < 1 || n > len(labels) {
		return nil, fmt.Errorf("strategies: must be between 1 and %d, got %d", len(labels), n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	perm := rng.Perm(len(labels))
	out := make([]Strategy, n)
	for i := range n {
		l := labels[perm[i]]
		r := classRanges[i%3]
		rate := r[0] + rng.Float64()*(r[1]-r[0])
		r2 := float64(int(rate*100+0.5)) / 100
		out[i] = Strategy{Label: l, Decomposition: "We'll " + phrases[l] + ".", Rate: r2, LateRate: r2}
	}
	return out, nil
}

// hardRanges are the hard workload's classes: good and bad strategies
// close together (0.40 to 0.90 in all), away from the truth line.
var hardRanges = [2][2]float64{
	{0.75, 0.90}, // good
	{0.40, 0.62}, // bad
}

// NewHardWorkload draws the hard workload of a seed: all twelve strategies
// in a seeded order, alternately good (0.75–0.90) and bad (0.40–0.62), and
// four of them drift halfway through the tasks: the first two good ones
// become bad and the first two bad ones good (each to a rate drawn in the
// other class's range). The same seed gives the same workload.
func NewHardWorkload(seed uint64) []Strategy {
	labels := learning.StrategyLabels()
	rng := rand.New(rand.NewPCG(seed, 0x4a2d))
	perm := rng.Perm(len(labels))
	round := func(v float64) float64 { return float64(int(v*100+0.5)) / 100 }
	draw := func(class int) float64 {
		r := hardRanges[class]
		return round(r[0] + rng.Float64()*(r[1]-r[0]))
	}
	out := make([]Strategy, len(labels))
	for i := range out {
		l := labels[perm[i]]
		class := i % 2
		rate := draw(class)
		late := rate
		if i < 4 { // strategies 0 and 2 (good), 1 and 3 (bad) drift
			late = draw(1 - class)
		}
		out[i] = Strategy{Label: l, Decomposition: "We'll " + phrases[l] + ".", Rate: rate, LateRate: late, BadBelow: HardBadRate}
	}
	return out
}

// Workload returns the named workload of a seed (n strategies for the
// default one; the hard one has all twelve).
func Workload(name string, seed uint64, n int) ([]Strategy, error) {
	switch name {
	case WorkloadDefault, "":
		return NewWorkload(seed, n)
	case WorkloadHard:
		return NewHardWorkload(seed), nil
	}
	return nil, fmt.Errorf("workload: %q is not %s or %s", name, WorkloadDefault, WorkloadHard)
}

// Phrase returns the words that make lore extract a strategy label.
func Phrase(label string) (string, bool) {
	p, ok := phrases[label]
	return p, ok
}
