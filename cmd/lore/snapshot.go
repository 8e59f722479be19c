package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/snapshots"
)

func init() { addCommand(newCmdSnapshot) }

func newCmdSnapshot(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Store, list and restore snapshots of the read models (Pebble checkpoints in JetStream)",
		Long: `A snapshot is a Pebble checkpoint of a replica's read models with the log
sequence it holds, stored in the JetStream object store bucket ` + snapshots.DefaultBucket + `.
A new replica (` + "`lore serve`" + ` on an empty data folder) restores the newest usable
snapshot and replays only the tail of the log. A snapshot is usable when its
format equals the current read models' and its sequence meets the log.`,
	}
	cmd.AddCommand(newCmdSnapshotCreate(f), newCmdSnapshotList(f), newCmdSnapshotRestore(f))
	return cmd
}

func newCmdSnapshotCreate(f *Factory) *cobra.Command {
	var replica string
	var local bool
	var keep int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "create [--replica NAME | --local]",
		Short: "Ask a running replica (any, or --replica) to store a snapshot now",
		Long: `Ask a running lore serve to checkpoint its read models and store the snapshot.
With --local, snapshot the data folder's read model directly (lore serve must
not be running on it). Retention then keeps the newest --keep snapshots.`,
		Example: "  lore snapshot create\n  lore snapshot create --replica lore-a --json\n  lore snapshot create --local --data /var/lib/lore --nats nats://n1:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var s snapshots.Info
			var err error
			if local {
				s, err = createLocal(cmd.Context(), f, keep)
			} else {
				s, err = createRemote(cmd.Context(), f, replica, wait)
			}
			if err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(s)
			}
			fmt.Fprintf(f.Out, "stored snapshot %s: seq %d, %s, from %s\n", s.Name, s.LastSeq, humanBytes(s.Size), s.Replica)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&replica, "replica", "", "replica to snapshot (default: any running replica)")
	fl.BoolVar(&local, "local", false, "snapshot the data folder's read model directly instead of asking lore serve")
	fl.IntVar(&keep, "keep", snapshots.DefaultKeep, "with --local: snapshots to keep (older ones are deleted; a running replica uses its --snapshot-keep)")
	fl.DurationVar(&wait, "wait", 10*time.Minute, "how long to wait for the replica to store the snapshot")
	declare(fl, rules{"replica": domain("consumer-name"), "keep": atLeast(1), "wait": above(0)})
	return cmd
}

func createRemote(ctx context.Context, f *Factory, replica string, wait time.Duration) (snapshots.Info, error) {
	nc, err := f.Conn()
	if err != nil {
		return snapshots.Info{}, err
	}
	subj := node.SnapshotSubject
	if replica != "" {
		subj += "." + replica
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, subj, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return snapshots.Info{}, fmt.Errorf("no lore serve answers on %s (is it running? or use --local)", subj)
	}
	if err != nil {
		return snapshots.Info{}, fmt.Errorf("snapshot request: %w", err)
	}
	var rep node.SnapshotReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return snapshots.Info{}, fmt.Errorf("snapshot reply: %w", err)
	}
	if rep.Error != "" {
		return snapshots.Info{}, errors.New(rep.Error)
	}
	if rep.Snapshot == nil {
		return snapshots.Info{}, errors.New("snapshot reply: empty")
	}
	return *rep.Snapshot, nil
}

func createLocal(ctx context.Context, f *Factory, keep int) (snapshots.Info, error) {
	js, err := f.jetStream()
	if err != nil {
		return snapshots.Info{}, err
	}
	st, err := projector.OpenStore(filepath.Join(f.DataDir, "pebble"), projector.StoreOptions{CacheBytes: 8 << 20})
	if err != nil {
		return snapshots.Info{}, fmt.Errorf("open the data folder's read model (is lore serve running on it?): %w", err)
	}
	defer st.Close()
	if keep == 0 {
		keep = -1
	}
	return snapshots.Create(ctx, js, st, snapshots.Options{Keep: keep, TempDir: f.DataDir, Replica: "local"})
}

// snapshotStatus is one row of `lore snapshot list`.
type snapshotStatus struct {
	snapshots.Info
	// Usable tells whether a new replica of the current models would start
	// from it; Reason says why not.
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"`
}

func newCmdSnapshotList(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List stored snapshots, newest first, and whether each can seed a replica of the current read models",
		Example: "  lore snapshot list\n  lore snapshot list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			js, err := f.jetStream()
			if err != nil {
				return err
			}
			ss, err := snapshots.List(ctx, js, snapshots.Options{})
			if err != nil {
				return err
			}
			first, last, err := snapshots.LogBounds(ctx, js)
			if err != nil {
				return err
			}
			format := projector.FormatVersion(app.Models())
			rows := make([]snapshotStatus, 0, len(ss))
			for _, s := range ss {
				row := snapshotStatus{Info: s, Usable: true}
				if err := snapshots.Check(s, format, first, last); err != nil {
					row.Usable, row.Reason = false, err.Error()
				}
				rows = append(rows, row)
			}
			if f.JSON {
				return f.PrintJSON(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(f.Out, "no snapshots stored")
				return nil
			}
			fmt.Fprintf(f.Out, "%-10s  %-24s  %-10s  %-14s  %s\n", "SEQ", "CREATED", "SIZE", "REPLICA", "USABLE")
			for _, r := range rows {
				usable := "yes"
				if !r.Usable {
					usable = "no: " + r.Reason
				}
				fmt.Fprintf(f.Out, "%-10d  %-24s  %-10s  %-14s  %s\n", r.LastSeq, r.Created.Format(time.RFC3339),
					humanBytes(r.Size), r.Replica, usable)
			}
			return nil
		},
	}
}

func newCmdSnapshotRestore(f *Factory) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "restore [--name NAME]",
		Short: "Restore the newest usable snapshot (or --name) into an empty data folder",
		Long: `Download a snapshot into the data folder's read model (DATA/pebble, which must
be absent or empty). Then ` + "`lore serve --nats URL --data DATA`" + ` replays only the tail of
the log after the snapshot's sequence. (lore serve does this by itself when it
starts on an empty data folder.)`,
		Example: "  lore snapshot restore --data /var/lib/lore --nats nats://n1:4222\n  lore snapshot restore --name seq-00000000000001000000-20260101T000000.000000000Z-lore-a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			js, err := f.jetStream()
			if err != nil {
				return err
			}
			dir := filepath.Join(f.DataDir, "pebble")
			s, err := snapshots.Restore(cmd.Context(), js, dir, app.Models(), snapshots.Options{Name: name})
			if errors.Is(err, snapshots.ErrNotEmpty) {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			if err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(s)
			}
			fmt.Fprintf(f.Out, "restored snapshot %s (seq %d) into %s; lore serve replays the log from seq %d\n", s.Name, s.LastSeq, dir, s.LastSeq+1)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "snapshot to restore (default: the newest usable)")
	freeText(cmd.Flags(), "name")
	return cmd
}

// jetStream returns a JetStream handle on the factory's connection.
func (f *Factory) jetStream() (jetstream.JetStream, error) {
	nc, err := f.Conn()
	if err != nil {
		return nil, err
	}
	return events.NewJetStream(nc)
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// snapshotServeOptions are lore serve's snapshot flags.
type snapshotServeOptions struct {
	every time.Duration
	keep  int
}

func (o *snapshotServeOptions) bind(fl *pflag.FlagSet) {
	fl.DurationVar(&o.every, "snapshot-every", time.Hour, "store a snapshot of the read models this often (0 disables); a new replica starts from the newest")
	fl.IntVar(&o.keep, "snapshot-keep", snapshots.DefaultKeep, "snapshots to keep in the bucket (older ones are deleted)")
	declare(fl, rules{"snapshot-every": atLeast(0), "snapshot-keep": atLeast(1)})
}

// start restores a snapshot into a new read model, then answers `lore
// snapshot create` and stores periodic snapshots until the returned stop.
// Call it after node.Start and before Serve and Run.
func (o snapshotServeOptions) start(ctx context.Context, f *Factory, n *node.Node) (stop func(), err error) {
	s, ok, err := n.RestoreSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore snapshot: %w", err)
	}
	if ok {
		fmt.Fprintf(f.Err, "restored snapshot %s (seq %d); replaying the tail of the log\n", s.Name, s.LastSeq)
	}
	stopServe, err := n.ServeSnapshots(o.keep)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); n.SnapshotEvery(lctx, o.every, o.keep) }()
	return func() { cancel(); <-done; stopServe() }, nil
}
