package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/benchkit"
)

func init() { addCommand(newCmdBench) }

func newCmdBench(f *Factory) *cobra.Command {
	var o benchkit.Options
	var so benchkit.SoakOptions
	var cpuProfile string
	var pool int
	var serveFlags []string
	var mem memoryFlags
	cmd := &cobra.Command{
		Use:   "bench [--events N] [--knowledge N] [--patterns N] [--seed S]",
		Short: "Measure lore against raw JetStream on an embedded server, in one run (seeded workload)",
		Long: `Start a throwaway embedded node and measure, in the same run and on the same server:
raw async JetStream publish (with Nats-Msg-Id) vs lore's append; raw ordered-consumer
drain vs lore's live projection and a full rebuild (every read model); each model
rebuilt alone, with its fold cost per event over the workload's first and last
window (a tenth of it, 1 000 to 50 000 events: growth with the history shows in one
run); the lag from append ack to
projector commit under a steady paced load, with its worst runs of events and what
the node did around each (lag_episodes: audit checkpoints, the live store's flushes
and compactions begun and running, Go collections; the worst wait for delivery to the
projector and for fold and commit, and the slowest commit fsync); knowledge.inject and patterns.inject
latencies in-process and over NATS; the peak RSS.

The workload is generated from --seed: concurrent agent loops emitting loop events,
outcomes with decomposition texts, errors, pattern observations and lessons. It is
streamed: the bench holds 50 000 generated events at a time, whatever --events.
Compare runs by their ratios: absolute rates depend on the machine.

The full figures: --events 1000000 --knowledge 100000 --patterns 100000.
--cpuprofile FILE writes a CPU profile of the whole run (go tool pprof FILE; the
bench's own work is labelled with its phase: -tagfocus phase=audits);
--heap-profiles DIR a heap profile at the end of each phase, and one each time the
resident set reaches a new peak (heap-peak-PHASE.pprof; the progress line says how
much of the peak is Go memory and how much lies outside it, such as Pebble's cache).
The report gives each phase's wall time and peak RSS, and the audit checkpoint gap
fills that ran beside it (background folds; audit_fills, audit_fill_s). Progress
lines go to stderr, with --json too (the report alone is on stdout).

The process's memory is set as lore serve sets its own: the same --store-cache,
--pattern-cache, --knowledge-cache, --memory-limit and --gc, with the same defaults (the
rebuilds' stores share the store cache); with --soak they go to the serving process.
The report gives them.

--pool N measures one large project pool instead: on a fresh node per size (100,
then N), with the caps raised to hold it, N swarm lessons and N/2 hive lessons in
one project and N registry patterns; it times knowledge.inject and patterns.inject
(in-process and over NATS), phase.complete with nothing to archive, knowledge.add
(acknowledged) and knowledge.add then the knowledge.inject showing the lesson, one
call after another (--queries each, 200 by default), and reports p50 and p99 with
their ratio to the same figures at 100 (1: nothing grows with the pool).

--soak DURATION measures memory under load instead: it starts ` + "`lore serve`" + ` as a
child process (so the load generator is not measured), appends the workload at
--rate events/s and makes --inject-rate knowledge.inject and patterns.inject
calls/s over the NATS API, and samples the server's RSS (/proc/<pid>/status),
Go heap and Pebble block cache and memtables (its /metrics) every
--sample-every. It reports the RSS growth over the soak's second half (the
goal: at most 10 %). --heap-profiles DIR saves the server's heap profiles
five times during the soak (compare two with go tool pprof -base).
--soak-serve passes a flag to the serving process, once per flag (for example
--soak-serve=--knowledge-cache=32 to measure a smaller cache budget).`,
		Example: "  lore bench\n  lore bench --events 1000000 --knowledge 100000 --patterns 100000 --json\n  lore bench --soak 10m --rate 2000 --inject-rate 50\n  lore bench --pool 10000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("soak") && cmd.Flags().Changed("pool") {
				return fmt.Errorf("%w: --pool and --soak are separate modes: give one", errBadInput)
			}
			if cmd.Flags().Changed("soak") {
				so.Rate, so.Seed, so.Dir = o.PacedRate, o.Seed, o.Dir
				// The memory flags are the serving process's.
				return runSoak(cmd, f, so, append(mem.changed(), serveFlags...))
			}
			// This process runs the node: its memory is set as lore
			// serve sets its own (the limit, the cache budgets).
			var stopGC func()
			o.Memory, stopGC = mem.apply(f.Err)
			defer stopGC()
			if cpuProfile != "" {
				pf, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if cmd.Flags().Changed("pool") {
				return runPool(cmd, f, benchkit.PoolOptions{N: pool, Queries: o.Queries, Seed: o.Seed,
					NoSyncCommits: o.NoSyncCommits, Memory: o.Memory, Dir: o.Dir}, cmd.Flags().Changed("queries"))
			}
			if o.Events <= 0 || o.Knowledge < 0 || o.Patterns < 0 || o.Writers <= 0 || o.PacedRate <= 0 || o.Queries <= 0 {
				return fmt.Errorf("%w: --events, --writers, --rate and --queries must be > 0; --knowledge and --patterns >= 0", errBadInput)
			}
			o.HeapProfiles = so.ProfileDir
			o.Logf = progressLog(f)
			rep, err := benchkit.Run(cmd.Context(), o)
			if err != nil {
				return stopped(cmd, err)
			}
			if f.JSON {
				return f.PrintJSON(rep)
			}
			rep.Print(f.Out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Events, "events", 200_000, "workload events to append, project and rebuild")
	fl.IntVar(&o.Knowledge, "knowledge", 10_000, "knowledge entries seeded before the workload (100 per project)")
	fl.IntVar(&o.Patterns, "patterns", 10_000, "cross-loop registry patterns seeded before the workload")
	fl.Int64Var(&o.Seed, "seed", 1, "workload seed: the same seed gives the same events")
	fl.IntVar(&o.Writers, "writers", 4, "concurrent appenders of the workload")
	fl.IntVar(&o.PacedRate, "rate", 2000, "events/s of the paced load of the lag measurement")
	fl.DurationVar(&o.PacedFor, "rate-for", 3*time.Second, "duration of the paced load")
	fl.IntVar(&o.Queries, "queries", 2000, "injection calls per endpoint in-process (a quarter over NATS)")
	fl.BoolVar(&o.NoSyncCommits, "no-sync-commits", false, "skip Pebble's fsync on projector commits, as lore serve --no-sync-commits")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fl.StringVar(&o.Dir, "dir", "", "folder for the throwaway node (default: a temp folder, removed)")
	fl.IntVar(&pool, "pool", 0, "measure one project pool of N lessons instead (100 to 10000; see above)")
	fl.DurationVar(&so.Duration, "soak", 0, "measure memory under load for this long instead (lore serve as a child; see above)")
	fl.IntVar(&so.InjectRate, "inject-rate", 50, "with --soak: injection calls/s over NATS")
	fl.DurationVar(&so.Every, "sample-every", 5*time.Second, "with --soak: sampling period")
	fl.IntVar(&so.Knowledge, "soak-knowledge", 1000, "with --soak: knowledge entries seeded first")
	fl.IntVar(&so.Patterns, "soak-patterns", 1000, "with --soak: patterns seeded first")
	fl.StringArrayVar(&serveFlags, "soak-serve", nil, "with --soak: a flag for the serving lore serve (repeat for more), e.g. --soak-serve=--memory-limit=512")
	mem.bind(fl)
	fl.StringVar(&so.ProfileDir, "heap-profiles", "", "save heap profiles in this folder: one per phase (with --soak: the server's, five times)")
	declare(fl, rules{"events": atLeast(1), "knowledge": atLeast(0), "patterns": atLeast(0), "writers": atLeast(1),
		"rate": atLeast(1), "rate-for": above(0), "queries": atLeast(1),
		"pool": between(benchkit.PoolBase, benchkit.PoolMax),
		"soak": atLeast(0), "inject-rate": atLeast(0), "sample-every": above(0), "soak-knowledge": atLeast(0), "soak-patterns": atLeast(0)})
	freeText(fl, "seed", "cpuprofile", "dir", "heap-profiles", "soak-serve")
	return cmd
}

// runSoak runs `lore bench --soak`: this executable serves as the child.
func runSoak(cmd *cobra.Command, f *Factory, so benchkit.SoakOptions, serveFlags []string) error {
	for _, fl := range serveFlags {
		if !strings.HasPrefix(fl, "--") {
			return fmt.Errorf("%w: --soak-serve %q: give a flag of lore serve, such as --knowledge-cache=32", errBadInput, fl)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	so.Server = func(dataDir, metricsAddr string) *exec.Cmd {
		if abs, err := filepath.Abs(dataDir); err == nil {
			dataDir = abs
		}
		args := append([]string{"serve", "--data", dataDir, "--port", "-1", "--metrics", metricsAddr, "--pprof", "--ui", ""}, serveFlags...) // no dashboard: the soak measures the serving process as before
		c := exec.Command(exe, args...)
		c.Env = append(os.Environ(), soakChildEnv+"=1")
		// Started in its own data folder, the child's serve record names
		// that folder: commands run where the bench runs never reach it.
		c.Dir = dataDir
		return c
	}
	so.Logf = progressLog(f)
	rep, err := benchkit.Soak(cmd.Context(), so)
	if err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(rep)
	}
	rep.Print(f.Out)
	return nil
}

// runPool runs `lore bench --pool N`; queries is the --queries given
// (the pool's own default, 200, otherwise).
func runPool(cmd *cobra.Command, f *Factory, po benchkit.PoolOptions, queriesGiven bool) error {
	if !queriesGiven {
		po.Queries = 0
	}
	po.Logf = progressLog(f)
	rep, err := benchkit.Pool(cmd.Context(), po)
	if err != nil {
		return stopped(cmd, err)
	}
	if f.JSON {
		return f.PrintJSON(rep)
	}
	rep.Print(f.Out)
	return nil
}

// progressLog writes a bench's progress lines, timed, on stderr, with
// --json too (the report alone goes to stdout): a run at scale takes
// minutes and says where it is.
func progressLog(f *Factory) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(f.Err, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
}

// stopped names an error of a bench cut short by SIGINT or SIGTERM (the
// command's context): the bench stopped at its next check and removed its
// temporary data.
func stopped(cmd *cobra.Command, err error) error {
	if cmd.Context().Err() != nil {
		return fmt.Errorf("bench stopped by a signal: %w", err)
	}
	return err
}

// soakChildEnv marks the serving child of a soak (tests run it through
// their own binary: see TestMain).
const soakChildEnv = "LORE_SOAK_CHILD"
