package sim_test

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/projector/learning"
	"github.com/loredev/lore/sim"
)

func TestPhrasesExtractExactlyTheirStrategy(t *testing.T) {
	for _, label := range learning.StrategyLabels() {
		p, ok := sim.Phrase(label)
		if !ok {
			t.Errorf("%q: no phrase", label)
			continue
		}
		if got := learning.ExtractPatternsFromDescription("We'll " + p + "."); !reflect.DeepEqual(got, []string{label}) {
			t.Errorf("%q extracts %q, want only %q", p, got, label)
		}
	}
}

func TestNewWorkload(t *testing.T) {
	a, err := sim.NewWorkload(1, 6)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sim.NewWorkload(1, 6)
	c, _ := sim.NewWorkload(2, 6)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different workloads:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 1 and 2 give the same workload %v", a)
	}
	classes, labels := map[string]int{}, map[string]bool{}
	for _, s := range a {
		classes[s.Truth()]++
		labels[s.Label] = true
		if got := learning.ExtractPatternsFromDescription(s.Decomposition); !reflect.DeepEqual(got, []string{s.Label}) {
			t.Errorf("%q extracts %q, want %q", s.Decomposition, got, s.Label)
		}
	}
	if classes[sim.TruthGood] != 2 || classes[sim.TruthBad] != 2 || classes[sim.TruthMixed] != 2 || len(labels) != 6 {
		t.Errorf("classes %v, %d distinct labels; want 2 of each class, 6 labels", classes, len(labels))
	}
	for _, n := range []int{0, 13} {
		if _, err := sim.NewWorkload(1, n); err == nil || !strings.Contains(err.Error(), "strategies") {
			t.Errorf("n=%d: error %v, want one naming strategies", n, err)
		}
	}
}

func TestTruth(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{{0.7, sim.TruthGood}, {0.95, sim.TruthGood}, {0.69, sim.TruthMixed}, {0.36, sim.TruthMixed}, {0.35, sim.TruthBad}, {0, sim.TruthBad}} {
		if got := (sim.Strategy{Rate: c.rate}).Truth(); got != c.want {
			t.Errorf("rate %.2f: %s, want %s", c.rate, got, c.want)
		}
	}
}

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func TestScoreHandMade(t *testing.T) {
	universe := []string{"a", "b", "c", "d", "e"}
	nan := math.NaN()
	for _, c := range []struct {
		name          string
		claimed, good map[string]bool
		p, r          float64
		claimedN      int
	}{
		// claims a, b, c; truly a, b, d: 2 of 3 claims right, 2 of 3 found
		{"partial", set("a", "b", "c"), set("a", "b", "d"), 2.0 / 3, 2.0 / 3, 3},
		{"exact", set("a"), set("a"), 1, 1, 1},
		{"all wrong", set("c", "e"), set("a"), 0, 0, 2},
		{"nothing claimed", set(), set("a", "b"), nan, 0, 0},
		{"nothing true", set("a"), set(), 0, nan, 1},
		// labels outside the workload do not count
		{"outside universe", set("a", "zz"), set("a", "b"), 1, 0.5, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := sim.Score(c.claimed, c.good, universe)
			if !same(float64(pr.Precision), c.p) || !same(float64(pr.Recall), c.r) || pr.Claimed != c.claimedN {
				t.Errorf("got %+v, want precision %v recall %v claimed %d", pr, c.p, c.r, c.claimedN)
			}
		})
	}
}

func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-12
}

func TestChooseSteered(t *testing.T) {
	ss, _ := sim.NewWorkload(3, 6)
	rng := rand.New(rand.NewPCG(1, 2))
	g := sim.Guidance{Proven: set(ss[0].Label), Excluded: set(ss[1].Label, ss[2].Label)}
	counts := make([]int, len(ss))
	const n = 10000
	for range n {
		counts[sim.ChooseSteered(rng, ss, g)]++
	}
	if counts[1] != 0 || counts[2] != 0 {
		t.Errorf("excluded strategies chosen: %v", counts)
	}
	// proven: 1-Explore, plus its share of exploration (1 of 4 allowed)
	want := (1 - sim.Explore) + sim.Explore/4
	if got := float64(counts[0]) / n; math.Abs(got-want) > 0.02 {
		t.Errorf("proven chosen %.3f of the time, want about %.3f", got, want)
	}
	labels := func(is ...int) map[string]bool {
		m := map[string]bool{}
		for _, i := range is {
			m[ss[i].Label] = true
		}
		return m
	}
	for _, c := range []struct {
		name string
		g    sim.Guidance
		want []int
	}{
		{"nothing known", sim.Guidance{}, []int{0, 1, 2, 3, 4, 5}},
		// everything excluded: the anti-patterns are still avoided
		{"all excluded", sim.Guidance{Excluded: labels(0, 1, 2, 3, 4, 5), Anti: labels(0, 1, 2, 3)}, []int{4, 5}},
		{"all anti", sim.Guidance{Excluded: labels(0, 1, 2, 3, 4, 5), Anti: labels(0, 1, 2, 3, 4, 5)}, []int{0, 1, 2, 3, 4, 5}},
		// a proven strategy that is also an anti-pattern is not preferred
		{"proven but anti", sim.Guidance{Proven: labels(0), Excluded: labels(0), Anti: labels(0)}, []int{1, 2, 3, 4, 5}},
	} {
		seen := map[int]bool{}
		for range 500 {
			seen[sim.ChooseSteered(rng, ss, c.g)] = true
		}
		want := map[int]bool{}
		for _, i := range c.want {
			want[i] = true
		}
		if !reflect.DeepEqual(seen, want) {
			t.Errorf("%s: chose %v, want exactly %v", c.name, seen, c.want)
		}
	}
}

func TestMeanCurve(t *testing.T) {
	a := []sim.Point{{Obs: 0, SuccessRate: sim.Undefined}, {Obs: 4, SuccessRate: 0.5}, {Obs: 10, SuccessRate: 1}}
	b := []sim.Point{{Obs: 0, SuccessRate: sim.Undefined}, {Obs: 2, SuccessRate: 0}, {Obs: 8, SuccessRate: 0.25}}
	if v := sim.StepAt(a, 6, sim.MetricSuccess); float64(v) != 0.5 {
		t.Errorf("StepAt(a, 6) = %v, want 0.5 (the value holds until the next point)", v)
	}
	got := sim.MeanCurve([][]sim.Point{a, b}, sim.MetricSuccess, 4) // x = 0, 2, 4, 6, 8
	want := []float64{nan(), 0, 0.25, 0.25, 0.375}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %d points up to the shortest curve", got, len(want))
	}
	for i, p := range got {
		if p.X != float64(2*i) || !same(p.Y, want[i]) {
			t.Errorf("point %d: %v, want (%d, %v)", i, p, 2*i, want[i])
		}
	}
}

func nan() float64 { return math.NaN() }

func TestSummarize(t *testing.T) {
	rs := []sim.Result{
		{Attempts: 10, Successes: 5, Iterations: 2, Failed: 1, Proven: sim.PR{Precision: 1, Recall: 0.5}, Anti: sim.PR{Precision: sim.Undefined, Recall: 0},
			Strategies: []sim.StrategyResult{{Truth: sim.TruthGood, ProvenAfter: 6}, {Truth: sim.TruthBad, AntiAfter: 3}, {Truth: sim.TruthGood}}},
		{Attempts: 10, Successes: 8, Iterations: 1, Failed: 0, Proven: sim.PR{Precision: 0.5, Recall: 1}, Anti: sim.PR{Precision: 1, Recall: 1},
			Strategies: []sim.StrategyResult{{Truth: sim.TruthGood, ProvenAfter: 10}}},
	}
	s := sim.Summarize(rs)
	if s.Iterations != 1.5 || s.Failed != 0.5 || !same(float64(s.SuccessRate), 0.65) || s.ProvenP != 0.75 || s.AntiP != 1 ||
		s.ObsToProven != 8 || s.ObsToAnti != 3 || s.Good != 3 || s.ProvenDetected != 2 {
		t.Errorf("summary %+v", s)
	}
}

func TestPlotIsWellFormedSVG(t *testing.T) {
	curve := []sim.Point{{Obs: 0, SuccessRate: sim.Undefined, Proven: sim.PR{Precision: sim.Undefined}},
		{Obs: 50, SuccessRate: 0.6, Proven: sim.PR{Precision: 1, Recall: 0.5}}, {Obs: 90, SuccessRate: 0.7, Proven: sim.PR{Precision: 1, Recall: 1}}}
	var b strings.Builder
	err := sim.Plot(&b, []sim.Result{{Arm: sim.ArmUnguided, Curve: curve}, {Arm: sim.ArmSteered, Curve: curve[:2]}})
	if err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	d := xml.NewDecoder(strings.NewReader(svg))
	paths := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			paths++
		}
	}
	if paths == 0 || strings.Contains(svg, "NaN") || !strings.Contains(svg, ">100</text>") {
		t.Errorf("%d paths, NaN in output: %v, x axis to 100: %v", paths, strings.Contains(svg, "NaN"), strings.Contains(svg, ">100</text>"))
	}
}

// fakeLore proves a strategy after 5 successes without failure and
// excludes it after 3 failures: enough to test the rounds.
type fakeLore struct {
	mu   sync.Mutex
	succ map[string]int
	fail map[string]int
	n    int
}

func (f *fakeLore) Record(_ context.Context, o sim.Outcome) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := learning.ExtractPatternsFromDescription(o.Decomposition)[0]
	if o.Success {
		f.succ[l]++
	} else {
		f.fail[l]++
	}
	f.n++
	return nil
}

func (f *fakeLore) State(context.Context, time.Time) (sim.State, error) {
	st := sim.State{Patterns: map[string]sim.PatternState{}, Guidance: sim.Guidance{Proven: map[string]bool{}, Excluded: map[string]bool{}, Anti: map[string]bool{}}}
	for _, l := range learning.StrategyLabels() {
		s, x := f.succ[l], f.fail[l]
		switch {
		case x >= 3:
			st.Patterns[l] = sim.PatternState{State: "deprecated", Inverted: true}
			st.Guidance.Excluded[l], st.Guidance.Anti[l] = true, true
		case s >= 5 && x == 0:
			st.Patterns[l] = sim.PatternState{State: "proven"}
			st.Guidance.Proven[l] = true
		case s+x > 0:
			st.Patterns[l] = sim.PatternState{State: "candidate"}
		}
	}
	return st, nil
}

func TestRunIsReproducible(t *testing.T) {
	run := func(arm string) (sim.Result, int) {
		f := &fakeLore{succ: map[string]int{}, fail: map[string]int{}}
		r, err := sim.Run(context.Background(), f, sim.Config{Arm: arm, Seed: 4, Loops: 5, Tasks: 12, Strategies: 6})
		if err != nil {
			t.Fatal(err)
		}
		return r, f.n
	}
	for _, arm := range []string{sim.ArmUnguided, sim.ArmSteered} {
		a, recorded := run(arm)
		b, _ := run(arm)
		if !reflect.DeepEqual(a.Strategies, b.Strategies) || a.Attempts != b.Attempts || a.Iterations != b.Iterations {
			t.Errorf("%s: two runs of seed 4 differ: %d vs %d attempts", arm, a.Attempts, b.Attempts)
		}
		obs := 0
		for _, s := range a.Strategies {
			obs += s.Observations
		}
		if a.Tasks != 60 || a.Attempts != recorded || obs != recorded || a.Curve[len(a.Curve)-1].Obs != recorded {
			t.Errorf("%s: %d tasks (want 60), %d attempts, %d observations, %d recorded", arm, a.Tasks, a.Attempts, obs, recorded)
		}
	}
	if _, err := sim.Run(context.Background(), &fakeLore{}, sim.Config{Arm: "other", Loops: 1, Tasks: 1, Strategies: 3}); err == nil {
		t.Error("unknown arm accepted")
	}
}

// TestSteeredBeatsUnguided runs both arms of one seed on real embedded lore
// nodes: loops steered by lore's decomposition prompt need fewer iterations
// per task and succeed more often than loops that ignore it.
func TestSteeredBeatsUnguided(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two embedded lore nodes")
	}
	ctx := context.Background()
	res := map[string]sim.Result{}
	for _, arm := range []string{sim.ArmUnguided, sim.ArmSteered} {
		l, err := sim.StartLocal(ctx, t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.Run(ctx, l.Lore, sim.Config{Arm: arm, Seed: 1, Loops: 4, Tasks: 20, Strategies: 6})
		l.Close()
		if err != nil {
			t.Fatalf("%s: %v", arm, err)
		}
		res[arm] = r
	}
	u, s := res[sim.ArmUnguided], res[sim.ArmSteered]
	t.Logf("unguided: %.2f iterations/task, %d/%d attempts succeeded; steered: %.2f, %d/%d",
		u.Iterations, u.Successes, u.Attempts, s.Iterations, s.Successes, s.Attempts)
	if !(s.Iterations < u.Iterations) {
		t.Errorf("steered %.2f iterations per task, unguided %.2f: steering did not help", s.Iterations, u.Iterations)
	}
	if !(float64(s.Successes)/float64(s.Attempts) > float64(u.Successes)/float64(u.Attempts)) {
		t.Errorf("steered success rate not above unguided")
	}
	// lore saw every bad strategy fail in the unguided arm and inverted it
	if u.Anti.Recall != 1 {
		t.Errorf("unguided anti-pattern recall %v, want 1: %+v", u.Anti.Recall, u.Strategies)
	}
}
