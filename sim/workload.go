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

// Strategy is one way to decompose a task, with its hidden success rate.
type Strategy struct {
	// Label is the pattern content lore extracts (learning.StrategyLabels).
	Label string `json:"label"`
	// Decomposition is the text a loop reports; lore extracts Label from it.
	Decomposition string  `json:"decomposition"`
	Rate          float64 `json:"rate"`
}

// Truth classifies the strategy by its true success rate.
func (s Strategy) Truth() string {
	switch {
	case s.Rate >= GoodRate:
		return TruthGood
	case s.Rate <= BadRate:
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
		out[i] = Strategy{Label: l, Decomposition: "We'll " + phrases[l] + ".", Rate: float64(int(rate*100+0.5)) / 100}
	}
	return out, nil
}

// Phrase returns the words that make lore extract a strategy label.
func Phrase(label string) (string, bool) {
	p, ok := phrases[label]
	return p, ok
}
