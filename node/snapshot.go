package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/snapshots"
)

// Subjects of snapshot requests (`lore snapshot create`): any replica of
// the group answers the first, the named replica the second.
// NB: must not change: the CLI sends to them.
const (
	SnapshotSubject      = "lore.snapshot.create"
	snapshotQueue        = "lore-snapshot"
	snapshotReplicaScope = SnapshotSubject + "." // + replica name
)

// SnapshotReply is the reply to a snapshot request.
type SnapshotReply struct {
	Snapshot *snapshots.Info `json:"snapshot,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// ReplicaName is the name of this node's projector consumer.
func (n *Node) ReplicaName() string {
	if n.cfg.Replica != "" {
		return n.cfg.Replica
	}
	return "lore-projector"
}

func (n *Node) snapshotOptions(keep int) snapshots.Options {
	return snapshots.Options{Replicas: n.cfg.Streams.Replicas, Replica: n.ReplicaName(),
		Keep: keep, TempDir: n.cfg.DataDir, Logger: n.log}
}

// Snapshot stores a snapshot of the live read models and keeps the keep
// newest (0: snapshots.DefaultKeep; negative: all).
func (n *Node) Snapshot(ctx context.Context, keep int) (snapshots.Info, error) {
	return snapshots.Create(ctx, n.JS, n.Store, n.snapshotOptions(keep))
}

// SnapshotEvery stores a snapshot every interval until ctx ends, skipping
// when the bucket already holds one of this format at or beyond the read
// model's sequence (an idle log, or another replica was quicker).
func (n *Node) SnapshotEvery(ctx context.Context, every time.Duration, keep int) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.snapshotCurrent(ctx) {
			continue
		}
		if _, err := n.Snapshot(ctx, keep); err != nil && ctx.Err() == nil && !errors.Is(err, snapshots.ErrEmpty) {
			n.log.Warn("periodic snapshot", "err", err)
		}
	}
}

// snapshotCurrent reports whether a stored snapshot already covers the read
// model's sequence in its format.
func (n *Node) snapshotCurrent(ctx context.Context) bool {
	ss, err := snapshots.List(ctx, n.JS, snapshots.Options{})
	if err != nil {
		return false
	}
	format := projector.FormatVersion(n.models)
	seq := n.Runtime.Seq()
	for _, s := range ss {
		if s.Format == format && s.LastSeq >= seq {
			return true
		}
	}
	return false
}

// RestoreSnapshot seeds a new (empty) store from the newest usable snapshot;
// the projector then replays only the tail. It must run before Run and
// Serve. ok is false, with no error, when the store is not new or no usable
// snapshot exists (the projector then folds the whole log).
func (n *Node) RestoreSnapshot(ctx context.Context) (s snapshots.Info, ok bool, err error) {
	format, err := n.Store.StoredVersion()
	if err != nil {
		return s, false, err
	}
	cp, err := n.Store.Checkpoint()
	if err != nil {
		return s, false, err
	}
	if format != "" || cp != 0 {
		return s, false, nil
	}
	dir := filepath.Join(n.cfg.DataDir, "pebble")
	if err := n.Store.Close(); err != nil {
		return s, false, fmt.Errorf("close new store: %w", err)
	}
	n.Store = nil
	if err := os.RemoveAll(dir); err != nil {
		return s, false, fmt.Errorf("remove new store: %w", err)
	}
	s, rerr := snapshots.Restore(ctx, n.JS, dir, n.models, n.snapshotOptions(0))
	if err := n.reopenStore(dir); err != nil {
		return s, false, err
	}
	if rerr != nil {
		if errors.Is(rerr, snapshots.ErrNoSnapshot) {
			return s, false, nil
		}
		return s, false, rerr
	}
	return s, true, nil
}

// reopenStore opens the store and a runtime on it as Start does.
func (n *Node) reopenStore(dir string) error {
	st, err := projector.OpenStore(dir, projector.StoreOptions{Sync: !n.cfg.NoSyncCommits, CacheBytes: n.cfg.Memory.WithDefaults().StoreCache})
	if err != nil {
		return err
	}
	n.Store = st
	n.Runtime = projector.NewRuntime(n.JS, n.Store, n.models, projector.RuntimeOptions{
		Durable: n.ReplicaName(), Logger: n.log, Sealer: n.Sealer})
	return nil
}

// ServeSnapshots answers snapshot requests (SnapshotSubject, in a queue
// group, and SnapshotSubject.<replica>) until the returned stop is called;
// stop waits for a snapshot in progress.
func (n *Node) ServeSnapshots(keep int) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex // one snapshot at a time; stop waits for it
	handle := func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		var rep SnapshotReply
		s, err := n.Snapshot(ctx, keep)
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Snapshot = &s
		}
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
	}
	group, err := n.NC.QueueSubscribe(SnapshotSubject, snapshotQueue, handle)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("subscribe %s: %w", SnapshotSubject, err)
	}
	own, err := n.NC.Subscribe(snapshotReplicaScope+n.ReplicaName(), handle)
	if err != nil {
		_ = group.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("subscribe %s: %w", snapshotReplicaScope+n.ReplicaName(), err)
	}
	return func() {
		_ = group.Unsubscribe()
		_ = own.Unsubscribe()
		cancel()
		mu.Lock()
		mu.Unlock() //nolint:staticcheck // waits for a snapshot in progress
	}, nil
}
