package sim_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/loredev/lore/sim"
)

func TestNewHardWorkload(t *testing.T) {
	a, b, c := sim.NewHardWorkload(1), sim.NewHardWorkload(1), sim.NewHardWorkload(2)
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Fatal("the hard workload is not a function of its seed")
	}
	labels, drift, early, late := map[string]bool{}, 0, map[string]int{}, map[string]int{}
	for _, s := range a {
		labels[s.Label] = true
		for _, r := range []float64{s.Rate, s.Late()} {
			if r < 0.4 || r > 0.9 || (r > 0.62 && r < 0.75) {
				t.Errorf("%s: rate %v outside [0.4, 0.62] and [0.75, 0.9]", s.Label, r)
			}
		}
		if s.Drifts() {
			drift++
			if s.EarlyTruth() == s.Truth() {
				t.Errorf("%s drifts within its class", s.Label)
			}
		}
		early[s.EarlyTruth()]++
		late[s.Truth()]++
	}
	if len(labels) != 12 || drift != 4 || early[sim.TruthGood] != 6 || early[sim.TruthBad] != 6 || late[sim.TruthMixed] != 0 {
		t.Errorf("%d labels, %d drifting, early truth %v, late truth %v", len(labels), drift, early, late)
	}
	if _, err := sim.Workload("other", 1, 6); err == nil {
		t.Error("unknown workload accepted")
	}
}

// TestChooseSteeredExploresTentative: with an exploration share, tentative
// excluded strategies are chosen about that share of the time; without
// it, never; and the stream of draws is the same either way.
func TestChooseSteeredExploresTentative(t *testing.T) {
	ss := sim.NewHardWorkload(3)
	g := sim.Guidance{Excluded: set(ss[0].Label, ss[1].Label), Tentative: set(ss[1].Label)}
	const n = 20000
	for _, share := range []float64{0, 0.1} {
		g.ExploreShare = share
		rng := rand.New(rand.NewPCG(5, 6))
		hits := 0
		for range n {
			switch sim.ChooseSteered(rng, ss, g) {
			case 0:
				t.Fatal("a confident exclusion was chosen")
			case 1:
				hits++
			}
		}
		if got := float64(hits) / n; got < share-0.01 || got > share+0.01 {
			t.Errorf("share %v: tentative chosen %.3f of the time", share, got)
		}
		if next := rng.Uint64(); next != streamAfter(n) {
			t.Errorf("share %v: the stream of draws changed", share)
		}
	}
}

func streamAfter(n int) uint64 {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2 * n {
		rng.Float64()
	}
	return rng.Uint64()
}

func TestConfidentBad(t *testing.T) {
	for _, c := range []struct {
		p      sim.PatternState
		policy string
		want   bool
	}{
		{sim.PatternState{State: "deprecated"}, sim.PolicySeed, true},
		{sim.PatternState{State: "deprecated"}, sim.PolicyEvidence, false},
		{sim.PatternState{State: "deprecated", Evidence: sim.Verdict{Confident: true}}, sim.PolicyEvidence, true},
		{sim.PatternState{State: "candidate", Inverted: true, InversionEvidence: &sim.Verdict{}}, sim.PolicyEvidence, false},
		{sim.PatternState{State: "candidate", Inverted: true, InversionEvidence: &sim.Verdict{Confident: true}}, sim.PolicyEvidence, true},
		{sim.PatternState{State: "proven", Evidence: sim.Verdict{Confident: true}}, sim.PolicyEvidence, false},
	} {
		if got := c.p.ConfidentBad(c.policy); got != c.want {
			t.Errorf("%+v under %s: %v", c.p, c.policy, got)
		}
	}
}

// TestRealRunsRepeat runs one seed of the hard workload twice on real
// embedded lore nodes under the evidence policy: the same figures, strategy
// by strategy (a round's records are appended in loop order).
func TestRealRunsRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two embedded lore nodes")
	}
	ctx := context.Background()
	var rs []sim.Result
	for range 2 {
		l, err := sim.StartLocal(ctx, t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.Run(ctx, l.Lore, sim.Config{Arm: sim.ArmSteered, Workload: sim.WorkloadHard, Policy: sim.PolicyEvidence,
			HalfLifeDays: sim.HardHalfLifeDays, Seed: 3, Loops: 4, Tasks: 15})
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	// JSON: an undefined precision (NaN) is null in both.
	a, _ := json.Marshal(rs[0])
	b, _ := json.Marshal(rs[1])
	if rs[0].Policy != sim.PolicyEvidence || string(a) != string(b) {
		t.Errorf("two runs of seed 3 differ:\n%s\n%s", a, b)
	}
}
