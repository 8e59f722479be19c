package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
)

type replayOptions struct {
	untilSeq  uint64
	untilTime string
	out       string
}

func init() { addCommand(newCmdReplay) }

func newCmdReplay(f *Factory) *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay --out DIR [--until-seq N | --until-time T]",
		Short: "Rebuild the read models from the log into a fresh Pebble folder (whole, or up to a point, for audits)",
		Long: `Fold the log into the read model of a new data folder DIR (its Pebble store,
DIR/pebble): the whole log, up to a stream sequence (--until-seq), or the events
that happened up to a time (--until-time). A replay announces nothing.

Query the result by serving DIR on its own: ` + "`lore serve --data DIR --port -1 --tick 0`" + `
starts a lore with an empty log of its own, so the read model stays as replayed;
then run any query with --data DIR (lore stats --data DIR, lore weights --data DIR).
Or ask the live lore with --as-of/--at-seq on any query: the same fold, up to
the same point.`,
		Example: `  lore replay --out /tmp/audit --until-time 2026-03-01T00:00:00Z
  lore serve --data /tmp/audit --port -1 --tick 0 &
  lore stats --data /tmp/audit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return fmt.Errorf("%w: --out DIR is required", errBadInput)
			}
			return runReplay(cmd.Context(), f, o)
		},
	}
	cmd.Flags().Uint64Var(&o.untilSeq, "until-seq", 0, "stop after this stream sequence")
	cmd.Flags().StringVar(&o.untilTime, "until-time", "", "fold only events that happened up to this time (RFC 3339)")
	cmd.Flags().StringVar(&o.out, "out", "", "new data folder for the replayed read model (must be empty or absent; the store goes to DIR/pebble)")
	declare(cmd.Flags(), rules{"until-seq": atLeast(0), "until-time": timestamp})
	freeText(cmd.Flags(), "out")
	return cmd
}

func runReplay(ctx context.Context, f *Factory, o replayOptions) error {
	var ro projector.ReplayOptions
	ro.UntilSeq = o.untilSeq
	if o.untilTime != "" {
		t, err := parseTime(o.untilTime)
		if err != nil {
			return fmt.Errorf("%w: --until-time: %v", errBadInput, err)
		}
		ro.UntilTime = t
	}
	if entries, err := os.ReadDir(o.out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: --out %s is not empty", errBadInput, o.out)
	}
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	js, err := events.NewJetStream(nc)
	if err != nil {
		return err
	}
	// The serve of this data folder sealed what it appended: with its key
	// those events are not checked again (same executable only).
	if key, err := events.LoadSealKey(f.DataDir, false); err != nil {
		return err
	} else if key != nil {
		ro.Sealer, _ = events.NewSealer(key) // nil: every event checked
	}
	// NB: DIR/pebble is where lore serve --data DIR finds a read model.
	st, err := projector.OpenStore(filepath.Join(o.out, "pebble"), projector.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	if isTerminal(f.Err) {
		ro.Progress = func(seq, target uint64) {
			fmt.Fprintf(f.Err, "\rreplay seq %d/%d", seq, target)
		}
	}
	start := time.Now()
	stats, err := projector.Replay(ctx, js, st, app.Models(), ro)
	if ro.Progress != nil {
		fmt.Fprintln(f.Err)
	}
	if err != nil {
		return err
	}
	log, err := eventlog.Read(st.Model(eventlog.Name))
	if err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(struct {
			projector.ReplayStats
			Out   string         `json:"out"`
			Stats eventlog.Stats `json:"eventlog"`
		}{stats, o.out, log})
	}
	fmt.Fprintf(f.Out, "replayed to seq %d into %s in %s: %d folded, %d later than --until-time, %d undecodable, %d duplicate ids\n",
		stats.Seq, o.out, time.Since(start).Round(time.Millisecond), stats.Folded, stats.Skipped, stats.Poison, stats.Duplicates)
	return nil
}
