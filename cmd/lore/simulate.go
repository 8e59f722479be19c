package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/sim"
)

type simulateOptions struct {
	seeds             string
	loops, tasks, nst int
	attempts          int
	plot              string
	workload, policy  string
	halfLife          float64
	explore           float64
}

// halfLifeDays is --half-life, else the workload's: lore's default (90
// days) for the default workload, half a day for the hard one, whose
// drift happens within hours of simulated time.
func (o simulateOptions) halfLifeDays() float64 {
	if o.halfLife > 0 || o.workload != sim.WorkloadHard {
		return o.halfLife
	}
	return sim.HardHalfLifeDays
}

// policies names the policies --policy runs.
func (o simulateOptions) policies() []string {
	if o.policy == "both" {
		return []string{sim.PolicySeed, sim.PolicyEvidence}
	}
	return []string{o.policy}
}

func init() { addCommand(newCmdSimulate) }

func newCmdSimulate(f *Factory) *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Measure how well lore learns: simulated loops with hidden strategy success rates, steered vs unguided",
		Long: `Run the learning-efficacy simulation. Per seed, a workload of decomposition
strategies with hidden true success rates is drawn; simulated loops work
through tasks (up to 5 attempts each) in two arms, each on its own embedded
lore: "unguided" loops choose uniformly, "steered" loops follow lore's
decomposition prompt (skip excluded anti-patterns and deprecated patterns,
prefer proven ones, explore 20% of the time). Every attempt is recorded with
learning.record_outcome. Reported per run: mean iterations per task, failed
tasks, success rate, precision and recall of proven patterns (truth: rate >=
0.7) and anti-patterns (truth: rate <= 0.35), and the observations lore
needed to detect each. --plot writes the curves as SVG.

--workload hard draws all twelve strategies with true rates between 0.4
and 0.9 (good >= 0.75, bad <= 0.62; truth line 0.7), four of which drift
halfway (good becomes bad and bad good); lore's half-lives are set to half a
day there (--half-life), the time scale of that drift. --policy runs lore with its seed
policy, its evidence policy, or both on the same seeds (default both);
each run also reports the precision of what lore calls bad with
confidence and the share of good strategies found within 20 observations.`,
		Example: `  lore simulate
  lore simulate --seeds 1,2,3,4,5 --loops 8 --tasks 60 --plot sim.svg
  lore simulate --workload hard --policy both --json
  lore simulate --seeds 7 --policy seed --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			seeds, err := parseSeeds(o.seeds)
			if err != nil {
				return err
			}
			if o.loops < 1 || o.tasks < 1 || o.attempts < 1 || o.nst < 1 || o.nst > 12 {
				return fmt.Errorf("%w: --loops, --tasks and --attempts must be >= 1, --strategies between 1 and 12", errBadInput)
			}
			if o.workload != sim.WorkloadDefault && o.workload != sim.WorkloadHard {
				return fmt.Errorf("%w: --workload: %q is not default or hard", errBadInput, o.workload)
			}
			if o.policy != "both" && o.policy != sim.PolicySeed && o.policy != sim.PolicyEvidence {
				return fmt.Errorf("%w: --policy: %q is not seed, evidence or both", errBadInput, o.policy)
			}
			return runSimulate(cmd, f, o, seeds)
		},
	}
	cmd.Flags().StringVar(&o.seeds, "seeds", "1,2,3", "comma-separated seeds (one workload and two runs per seed)")
	cmd.Flags().IntVar(&o.loops, "loops", 8, "concurrent simulated loops")
	cmd.Flags().IntVar(&o.tasks, "tasks", 60, "tasks per loop")
	cmd.Flags().IntVar(&o.nst, "strategies", 6, "strategies in the workload (1-12)")
	cmd.Flags().IntVar(&o.attempts, "attempts", 5, "attempts per task before it counts as failed")
	cmd.Flags().StringVar(&o.plot, "plot", "", "write the curves to this SVG file")
	cmd.Flags().StringVar(&o.workload, "workload", sim.WorkloadDefault, "default, or hard (12 strategies, rates 0.4-0.9, drift halfway)")
	cmd.Flags().StringVar(&o.policy, "policy", "both", "lore's evidence policy: seed, evidence or both (same seeds)")
	cmd.Flags().Float64Var(&o.explore, "exploration-share", 0.05, "evidence.exploration_share of the evidence policy (0 turns exploration off)")
	cmd.Flags().Float64Var(&o.halfLife, "half-life", 0, "lore's learning and maturity half-life in days (0: 90, or 0.5 for --workload hard)")
	declare(cmd.Flags(), rules{"seeds": intList, "loops": atLeast(1), "tasks": atLeast(1), "strategies": between(1, 12), "attempts": atLeast(1),
		"workload": oneOf(sim.WorkloadDefault, sim.WorkloadHard), "policy": oneOf("both", sim.PolicySeed, sim.PolicyEvidence), "half-life": atLeast(0), "exploration-share": between(0, 0.5)})
	freeText(cmd.Flags(), "plot")
	return cmd
}

func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: --seeds: %q is not a non-negative integer", errBadInput, p)
		}
		out = append(out, v)
	}
	return out, nil
}

// simulateReport is the --json output: means.<policy>.<arm>.
type simulateReport struct {
	Workload string                            `json:"workload"`
	Policies []string                          `json:"policies"`
	Runs     []sim.Result                      `json:"runs"`
	Means    map[string]map[string]sim.Summary `json:"means"`
}

func runSimulate(cmd *cobra.Command, f *Factory, o simulateOptions, seeds []uint64) error {
	ctx := cmd.Context()
	began := time.Now()
	var runs []sim.Result
	for _, seed := range seeds {
		for _, policy := range o.policies() {
			var pair []sim.Result
			for _, arm := range []string{sim.ArmUnguided, sim.ArmSteered} {
				l, err := sim.StartLocal(ctx, "", version)
				if err != nil {
					return err
				}
				r, err := sim.Run(ctx, l.Lore, sim.Config{Arm: arm, Workload: o.workload, Policy: policy, Seed: seed,
					HalfLifeDays: o.halfLifeDays(), ExplorationShare: o.explorationShare(cmd), Loops: o.loops, Tasks: o.tasks, Strategies: o.nst, MaxAttempts: o.attempts})
				l.Close()
				if err != nil {
					return fmt.Errorf("seed %d, policy %s, %s arm: %w", seed, policy, arm, err)
				}
				pair = append(pair, r)
			}
			runs = append(runs, pair...)
			if !f.JSON {
				printSeed(f.Out, seed, policy, pair)
			}
		}
	}
	means := map[string]map[string]sim.Summary{}
	for _, policy := range o.policies() {
		means[policy] = map[string]sim.Summary{}
		for _, arm := range []string{sim.ArmUnguided, sim.ArmSteered} {
			var rs []sim.Result
			for _, r := range runs {
				if r.Arm == arm && r.Policy == policy {
					rs = append(rs, r)
				}
			}
			means[policy][arm] = sim.Summarize(rs)
		}
	}
	if o.plot != "" {
		fh, err := os.Create(o.plot)
		if err != nil {
			return err
		}
		if err := sim.Plot(fh, runs); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	if f.JSON {
		return f.PrintJSON(simulateReport{Workload: o.workload, Policies: o.policies(), Runs: runs, Means: means})
	}
	fmt.Fprintf(f.Out, "mean over %d seed(s), workload %s, half-life %s\n", len(seeds), o.workload, halfLifeText(o.halfLifeDays()))
	tw := tabwriter.NewWriter(f.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tarm\titer/task\tfailed tasks\tsuccess\tproven P\tproven R\tanti P\tanti R\tconfident bad P\tgood found ≤20\tobs→proven\tobs→anti")
	for _, policy := range o.policies() {
		for _, arm := range []string{sim.ArmUnguided, sim.ArmSteered} {
			m := means[policy][arm]
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", policy, arm, m.Iterations, m.Failed, pct(m.SuccessRate),
				pct(m.ProvenP), pct(m.ProvenR), pct(m.AntiP), pct(m.AntiR), pct(m.ConfidentBadP), pct(m.GoodFound20),
				num(m.ObsToProven), num(m.ObsToAnti))
		}
	}
	tw.Flush()
	if o.plot != "" {
		fmt.Fprintf(f.Out, "\nplot: %s\n", o.plot)
	}
	fmt.Fprintf(f.Err, "simulated %d run(s) in %s\n", len(runs), time.Since(began).Round(100*time.Millisecond))
	return nil
}

func printSeed(w io.Writer, seed uint64, policy string, pair []sim.Result) {
	fmt.Fprintf(w, "seed %d, policy %s\n", seed, policy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  strategy\trate\ttruth\tobs unguided\tobs steered\tstate unguided\tstate steered\tproven after\tanti after")
	for i, s := range pair[0].Strategies {
		t := pair[1].Strategies[i]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\t%s / %s\t%s / %s\n", s.Label, rateOf(s.Strategy), s.Truth, s.Observations, t.Observations,
			stateOf(s), stateOf(t), after(s.ProvenAfter), after(t.ProvenAfter), after(s.AntiAfter), after(t.AntiAfter))
	}
	fmt.Fprintln(tw, "  \t\t\t\t\t\t\t(unguided / steered, observations of the strategy)")
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  arm\ttasks\tattempts\titer/task\tfailed tasks\tsuccess\tproven P\tproven R\tanti P\tanti R\tconfident bad P")
	for _, r := range pair {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Arm, r.Tasks, r.Attempts, r.Iterations, r.Failed,
			pct(sim.Ratio(float64(r.Successes)/float64(max(r.Attempts, 1)))), pct(r.Proven.Precision), pct(r.Proven.Recall),
			pct(r.Anti.Precision), pct(r.Anti.Recall), pct(r.ConfidentBad.Precision))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// explorationShare is --exploration-share when given (lore's default else).
func (o simulateOptions) explorationShare(cmd *cobra.Command) *float64 {
	if !cmd.Flags().Changed("exploration-share") {
		return nil
	}
	v := o.explore
	return &v
}

func halfLifeText(d float64) string {
	if d == 0 {
		return "90 days (lore's default)"
	}
	return strconv.FormatFloat(d, 'g', -1, 64) + " days"
}

// rateOf is a strategy's true rate, "0.85→0.45" when it drifts.
func rateOf(s sim.Strategy) string {
	if s.Drifts() {
		return fmt.Sprintf("%.2f→%.2f", s.Rate, s.Late())
	}
	return fmt.Sprintf("%.2f", s.Rate)
}

func stateOf(s sim.StrategyResult) string {
	switch {
	case s.FinalState == "":
		return "unseen"
	case s.Inverted:
		return s.FinalState + ", inverted"
	}
	return s.FinalState
}

func after(n int) string {
	if n == 0 {
		return "–"
	}
	return strconv.Itoa(n)
}

func pct(r sim.Ratio) string {
	if !r.Defined() {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(r))
}

func num(r sim.Ratio) string {
	if !r.Defined() {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(r))
}
