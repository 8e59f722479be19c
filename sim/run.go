package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Lore is what a run needs from lore: record an attempt's outcome, and
// read the state at a time (pattern maturity and the decomposition prompt).
type Lore interface {
	Record(ctx context.Context, o Outcome) error
	State(ctx context.Context, now time.Time) (State, error)
}

// Outcome is one attempt of a task with one strategy.
type Outcome struct {
	BeadID        string
	Decomposition string
	Success       bool
	// Attempt counts from 1 (retry_count = Attempt-1).
	Attempt int
	Time    time.Time
}

// State is lore's view of the strategies at a time.
type State struct {
	// Patterns maps a pattern's content to its maturity state.
	Patterns map[string]PatternState
	// Guidance is what the decomposition prompt injects.
	Guidance Guidance
}

// PatternState is one pattern as lore reports it.
type PatternState struct {
	State    string `json:"state"`
	Inverted bool   `json:"inverted"`
	// Evidence is that of the maturity state, InversionEvidence that of
	// the inversion (nil when not inverted).
	Evidence          Verdict  `json:"evidence"`
	InversionEvidence *Verdict `json:"inversion_evidence,omitempty"`
}

// Verdict is what the simulation reads of a verdict's evidence.
type Verdict struct {
	// Confident: the interval lies entirely on the verdict's side of its threshold.
	Confident bool `json:"confident"`
}

// Anti reports whether lore tells loops to avoid the pattern.
func (p PatternState) Anti() bool { return p.Inverted || p.State == "deprecated" }

// ConfidentBad reports whether lore calls the pattern bad with confidence:
// under the seed policy every bad verdict (the seed has no other kind),
// under the evidence policy a deprecation or an inversion whose interval
// lies below its threshold.
func (p PatternState) ConfidentBad(policy string) bool {
	if policy != PolicyEvidence {
		return p.Anti()
	}
	return (p.State == "deprecated" && p.Evidence.Confident) || (p.Inverted && p.InversionEvidence != nil && p.InversionEvidence.Confident)
}

// Good reports whether lore recommends the pattern: proven or
// established, and neither inverted nor deprecated.
func (p PatternState) Good() bool {
	return !p.Inverted && (p.State == "proven" || p.State == "established")
}

// Policies (lore's learning.configure evidence.policy).
const (
	PolicySeed     = "seed"
	PolicyEvidence = "evidence"
)

// LoreConfig is the learning configuration a run sets: the evidence
// policy and the half-lives (0: lore's default, 90 days).
type LoreConfig struct {
	Policy       string
	HalfLifeDays float64
	// ExplorationShare is evidence.exploration_share (nil: lore's default).
	ExplorationShare *float64
}

// Configurer is a Lore whose configuration can be set before a run.
type Configurer interface {
	Configure(ctx context.Context, c LoreConfig, at time.Time) error
}

// Arms.
const (
	ArmUnguided = "unguided"
	ArmSteered  = "steered"
)

// Config is one run: one arm, one seed.
type Config struct {
	Arm string
	// Workload is default or hard; Policy seed or evidence ("" leaves
	// lore's configuration alone: the seed policy).
	Workload string
	Policy   string
	// HalfLifeDays sets lore's learning and maturity half-lives (0: lore's
	// default).
	HalfLifeDays float64
	// ExplorationShare sets evidence.exploration_share (nil: lore's default).
	ExplorationShare *float64
	Seed             uint64
	Loops            int
	Tasks            int // per loop
	Strategies       int
	// MaxAttempts bounds a task's iterations; a task that fails them all failed.
	MaxAttempts int
	// Start is the simulated time of round 0; Step the time between rounds.
	Start time.Time
	Step  time.Duration
}

// withDefaults fills zero fields: 5 attempts, round 0 on 2026-01-05 09:00 UTC, 20-minute rounds.
func (c Config) withDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	}
	if c.Step == 0 {
		c.Step = 20 * time.Minute
	}
	return c
}

// StrategyResult is what lore made of one strategy.
type StrategyResult struct {
	Strategy
	Truth        string `json:"truth"`
	Observations int    `json:"observations"`
	FinalState   string `json:"final_state"`
	Inverted     bool   `json:"inverted"`
	// ProvenAfter / AntiAfter are the strategy's observations when lore's
	// state first said proven / inverted-or-deprecated (0: never).
	ProvenAfter int `json:"proven_after"`
	AntiAfter   int `json:"anti_after"`
	// EarlyTruth is the truth before any drift; GoodAfter the
	// observations when lore first recommended the strategy (proven or
	// established, not inverted: PatternState.Good), 0 for never.
	EarlyTruth string `json:"early_truth"`
	GoodAfter  int    `json:"good_after"`
}

// Result is one run's figures.
type Result struct {
	Arm      string `json:"arm"`
	Workload string `json:"workload"`
	Policy   string `json:"policy"`
	// HalfLifeDays is the half-life the run configured (0: lore\'s default).
	HalfLifeDays float64 `json:"half_life_days,omitempty"`
	Seed         uint64  `json:"seed"`
	Tasks        int     `json:"tasks"`
	Attempts     int     `json:"attempts"`
	Successes    int     `json:"successes"`
	Failed       int     `json:"failed_tasks"`
	Iterations   float64 `json:"mean_iterations"`
	Proven       PR      `json:"proven"`
	Anti         PR      `json:"anti"`
	// ConfidentBad scores what lore calls bad with confidence
	// (PatternState.ConfidentBad) against the bad strategies.
	ConfidentBad PR               `json:"confident_bad"`
	Strategies   []StrategyResult `json:"strategies"`
	Curve        []Point          `json:"curve"`
}

// loopState is one simulated loop: its own random stream and current task.
type loopState struct {
	rng     *rand.Rand
	task    int
	attempt int // of the current task, from 1
}

// Run runs one arm. Loops work in rounds: at the start of a round lore's
// state is read once (what every loop would be injected with then), each
// active loop makes one attempt of its current task, the attempts are
// recorded in loop order, and the round ends when lore has folded them. So
// a seed gives the same choices, outcomes and figures on every run.
func Run(ctx context.Context, l Lore, c Config) (Result, error) {
	c = c.withDefaults()
	if c.Loops < 1 || c.Tasks < 1 {
		return Result{}, fmt.Errorf("loops and tasks: must be >= 1, got %d and %d", c.Loops, c.Tasks)
	}
	if c.Arm != ArmUnguided && c.Arm != ArmSteered {
		return Result{}, fmt.Errorf("arm: %q is not %s or %s", c.Arm, ArmUnguided, ArmSteered)
	}
	ss, err := Workload(c.Workload, c.Seed, c.Strategies)
	if err != nil {
		return Result{}, err
	}
	policy := c.Policy
	if policy == "" {
		policy = PolicySeed
	}
	if policy != PolicySeed && policy != PolicyEvidence {
		return Result{}, fmt.Errorf("policy: %q is not %s or %s", c.Policy, PolicySeed, PolicyEvidence)
	}
	if c.Policy != "" || c.HalfLifeDays > 0 || c.ExplorationShare != nil {
		cf, ok := l.(Configurer)
		if !ok {
			return Result{}, fmt.Errorf("policy %s: this lore cannot be configured", c.Policy)
		}
		if err := cf.Configure(ctx, LoreConfig{Policy: policy, HalfLifeDays: c.HalfLifeDays, ExplorationShare: c.ExplorationShare}, c.Start.Add(-time.Minute)); err != nil {
			return Result{}, fmt.Errorf("configure policy %s: %w", c.Policy, err)
		}
	}
	good, bad := TruthSets(ss)
	labels := make([]string, len(ss))
	workload := c.Workload
	if workload == "" {
		workload = WorkloadDefault
	}
	res := Result{Arm: c.Arm, Workload: workload, Policy: policy, HalfLifeDays: c.HalfLifeDays, Seed: c.Seed, Strategies: make([]StrategyResult, len(ss))}
	for i, s := range ss {
		labels[i] = s.Label
		res.Strategies[i] = StrategyResult{Strategy: s, Truth: s.Truth(), EarlyTruth: s.EarlyTruth()}
	}
	loops := make([]*loopState, c.Loops)
	for i := range loops {
		// the same streams in both arms: common random numbers
		loops[i] = &loopState{rng: rand.New(rand.NewPCG(c.Seed, uint64(i)+1)), attempt: 1}
	}
	observe := func(st State) {
		proven, anti, confident := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i, s := range ss {
			p, ok := st.Patterns[s.Label]
			if !ok {
				continue
			}
			sr := &res.Strategies[i]
			if p.State == "proven" {
				proven[s.Label] = true
				if sr.ProvenAfter == 0 {
					sr.ProvenAfter = sr.Observations
				}
			}
			if p.Anti() {
				anti[s.Label] = true
				if sr.AntiAfter == 0 {
					sr.AntiAfter = sr.Observations
				}
			}
			if p.ConfidentBad(policy) {
				confident[s.Label] = true
			}
			if p.Good() && sr.GoodAfter == 0 {
				sr.GoodAfter = sr.Observations
			}
			sr.FinalState, sr.Inverted = p.State, p.Inverted
		}
		res.Proven, res.Anti, res.ConfidentBad = Score(proven, good, labels), Score(anti, bad, labels), Score(confident, bad, labels)
		res.Curve = append(res.Curve, Point{Obs: res.Attempts, SuccessRate: ratio(res.Successes, res.Attempts),
			Proven: res.Proven, Anti: res.Anti, ConfidentBad: res.ConfidentBad})
	}
	type attempt struct {
		loop, strategy int
		ok             bool
	}
	iterations := 0
	// A drifting strategy's true rate changes once half the tasks are done.
	rate := func(k int) float64 {
		if 2*res.Tasks >= c.Loops*c.Tasks {
			return ss[k].Late()
		}
		return ss[k].Rate
	}
	for round := 0; ; round++ {
		now := c.Start.Add(time.Duration(round) * c.Step)
		st, err := l.State(ctx, now)
		if err != nil {
			return res, fmt.Errorf("round %d: state: %w", round, err)
		}
		observe(st)
		var batch []attempt
		for i, ls := range loops {
			if ls.task >= c.Tasks {
				continue
			}
			var k int
			if c.Arm == ArmSteered {
				k = ChooseSteered(ls.rng, ss, st.Guidance)
			} else {
				k = ChooseUniform(ls.rng, ss)
			}
			batch = append(batch, attempt{loop: i, strategy: k, ok: ls.rng.Float64() < rate(k)})
		}
		if len(batch) == 0 {
			break
		}
		// One after another, in loop order: the seed's inversion rule counts
		// observations in log order, so the order must not depend on the
		// scheduling for a seed to give the same figures on every run.
		errs := make([]error, len(batch))
		for j, a := range batch {
			ls := loops[a.loop]
			o := Outcome{BeadID: fmt.Sprintf("sim-%s-%d-l%d-t%d", c.Arm, c.Seed, a.loop, ls.task), Attempt: ls.attempt,
				Decomposition: ss[a.strategy].Decomposition, Success: a.ok, Time: now.Add(time.Duration(a.loop+1) * time.Second)}
			errs[j] = l.Record(ctx, o)
		}
		for j, a := range batch {
			if errs[j] != nil {
				return res, fmt.Errorf("round %d loop %d: record: %w", round, a.loop, errs[j])
			}
			ls := loops[a.loop]
			res.Attempts++
			res.Strategies[a.strategy].Observations++
			if a.ok {
				res.Successes++
			}
			if a.ok || ls.attempt == c.MaxAttempts {
				if !a.ok {
					res.Failed++
				}
				iterations += ls.attempt
				res.Tasks++
				ls.task, ls.attempt = ls.task+1, 1
			} else {
				ls.attempt++
			}
		}
	}
	if res.Tasks > 0 {
		res.Iterations = float64(iterations) / float64(res.Tasks)
	}
	return res, nil
}
