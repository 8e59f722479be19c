package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Audit checkpoints: local Pebble checkpoints of the live read model (hard
// links to its tables), one every AuditCheckpointEvery events, so an audit
// (--as-of, --at-seq) folds only what lies between the newest usable one and
// the point asked for instead of the whole log.
//
// INVARIANT: a checkpoint directory under DataDir/audit is never written
// once listed: an audit folds into a copy of it (links to its tables, copies
// of its other files), so audits run side by side and a checkpoint is the
// state of the log prefix its mark names. Everything under DataDir/audit is
// removed on start (checkpoints are local and cheap to take again).
const (
	// DefaultAuditCheckpointEvery is the default audit checkpoint interval.
	DefaultAuditCheckpointEvery = 2000
	// DefaultAuditCheckpointKeep is the default number of checkpoints kept.
	DefaultAuditCheckpointKeep = 64
	// AuditDir is the folder of the audit checkpoints under the data folder.
	AuditDir = "audit"
)

type auditCheckpoint struct {
	dir  string
	mark projector.AuditMark
}

// auditCheckpoints are one node's audit checkpoints.
type auditCheckpoints struct {
	dir   string
	every uint64
	keep  int
	last  atomic.Uint64 // sequence of the newest checkpoint taken
	tmp   atomic.Uint64 // names temporary folders

	mu   sync.Mutex // guards list and the folders it names
	list []auditCheckpoint
}

// newAuditCheckpoints removes whatever a previous process left in dir.
func newAuditCheckpoints(dir string, every uint64, keep int) (*auditCheckpoints, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("audit checkpoints: clean %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("audit checkpoints: %w", err)
	}
	return &auditCheckpoints{dir: dir, every: every, keep: keep}, nil
}

// auditPoll is how often the node looks whether a checkpoint is due.
const auditPoll = 20 * time.Millisecond

// runAuditCheckpoints takes a checkpoint whenever the runtime committed
// every events since the last one, until ctx ends. It watches the
// runtime's checkpoint rather than hooking its commits, so a checkpoint is
// never on the fold's path.
func (n *Node) runAuditCheckpoints(ctx context.Context) {
	a := n.audits
	t := time.NewTicker(auditPoll)
	defer t.Stop()
	for {
		if seq := n.Runtime.Seq(); seq > 0 && seq >= a.last.Load()+a.every {
			if err := n.takeAuditCheckpoint(); err != nil {
				n.log.Warn("audit checkpoint", "err", err)
			}
		} else if err := n.fillAuditGap(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("audit checkpoint gap", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// takeAuditCheckpoint checkpoints the live store, reads the checkpoint's
// mark, lists it and applies the retention.
func (n *Node) takeAuditCheckpoint() error {
	a := n.audits
	tmp := filepath.Join(a.dir, fmt.Sprintf("tmp-%d", a.tmp.Add(1)))
	// Flushed first: the checkpoint is then tables shared with the live
	// store and a WAL of a few records, not a copy of the memtable's log.
	if err := n.Store.DB().Flush(); err != nil {
		return fmt.Errorf("checkpoint: flush: %w", err)
	}
	if err := n.Store.DB().Checkpoint(tmp, pebble.WithFlushedWAL()); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("checkpoint: %w", err)
	}
	st, err := projector.OpenStore(tmp, projector.StoreOptions{CacheBytes: 1 << 20, ReadOnly: true})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	mark, err := st.AuditMark()
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close checkpoint: %w", cerr)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	a.last.Store(mark.Seq)
	final := filepath.Join(a.dir, fmt.Sprintf("cp-%020d", mark.Seq))
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.list); n > 0 && a.list[n-1].mark.Seq >= mark.Seq {
		return os.RemoveAll(tmp) // nothing new since the last one
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("checkpoint: %w", err)
	}
	a.list = append(a.list, auditCheckpoint{dir: final, mark: mark})
	for len(a.list) > a.keep {
		i := thinOut(a.list)
		if err := os.RemoveAll(a.list[i].dir); err != nil {
			return fmt.Errorf("audit checkpoint retention: %w", err)
		}
		a.list = append(a.list[:i], a.list[i+1:]...)
	}
	return nil
}

// fillAuditGap adds one checkpoint to the widest gap between kept
// checkpoints (or before the first) longer than every, while fewer than
// keep are kept: the poll takes a checkpoint only when it sees the read
// model every events on, so a fast ingest leaves gaps of several intervals,
// and an audit folds up to its gap. The new checkpoint is the one below the
// gap (nothing, before the first) folded forward every events without a
// time bound: the state of the log prefix it names, as a live checkpoint
// there would be (a fold is a function of the log prefix).
func (n *Node) fillAuditGap(ctx context.Context) error {
	a := n.audits
	format := projector.FormatVersion(n.models)
	a.mu.Lock()
	if len(a.list) >= a.keep {
		a.mu.Unlock()
		return nil
	}
	var src string
	var below, gap uint64
	prev, prevDir := uint64(0), ""
	for _, c := range a.list {
		if c.mark.Format != format {
			prev, prevDir = c.mark.Seq, ""
			continue
		}
		if g := c.mark.Seq - prev; g > a.every && g > gap && (prevDir != "" || prev == 0) {
			src, below, gap = prevDir, prev, g
		}
		prev, prevDir = c.mark.Seq, c.dir
	}
	if gap == 0 {
		a.mu.Unlock()
		return nil
	}
	dst := filepath.Join(a.dir, fmt.Sprintf("tmp-%d", a.tmp.Add(1)))
	var err error
	if src != "" {
		err = copyCheckpoint(src, dst)
	}
	a.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dst)
		return err
	}
	target := below + a.every
	mark, err := foldCheckpoint(ctx, n, dst, below, target)
	if err != nil {
		_ = os.RemoveAll(dst)
		return err
	}
	final := filepath.Join(a.dir, fmt.Sprintf("cp-%020d", target))
	a.mu.Lock()
	defer a.mu.Unlock()
	i := 0
	for i < len(a.list) && a.list[i].mark.Seq < target {
		i++
	}
	if i < len(a.list) && a.list[i].mark.Seq == target {
		return os.RemoveAll(dst) // taken meanwhile
	}
	if err := os.Rename(dst, final); err != nil {
		_ = os.RemoveAll(dst)
		return fmt.Errorf("checkpoint: %w", err)
	}
	a.list = append(a.list[:i], append([]auditCheckpoint{{dir: final, mark: mark}}, a.list[i:]...)...)
	for len(a.list) > a.keep {
		i := thinOut(a.list)
		if err := os.RemoveAll(a.list[i].dir); err != nil {
			return fmt.Errorf("audit checkpoint retention: %w", err)
		}
		a.list = append(a.list[:i], a.list[i+1:]...)
	}
	return nil
}

// foldCheckpoint folds the store in dir (a copy of the checkpoint at
// below, or an empty folder when below is 0) to target and returns its
// mark; the store is flushed and closed, so dir holds tables and a WAL of
// a few records, like a checkpoint taken of the live store.
func foldCheckpoint(ctx context.Context, n *Node, dir string, below, target uint64) (projector.AuditMark, error) {
	st, err := projector.OpenStore(dir, projector.StoreOptions{CacheBytes: 32 << 20, Ephemeral: true})
	if err != nil {
		return projector.AuditMark{}, err
	}
	_, err = projector.FoldRanges(ctx, n.JS, st, n.models, []projector.SeqRange{{From: below + 1, To: target}}, target, nil)
	var mark projector.AuditMark
	if err == nil {
		err = st.DB().Flush()
	}
	if err == nil {
		mark, err = st.AuditMark()
	}
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close checkpoint: %w", cerr)
	}
	if err == nil && mark.Seq != target {
		err = fmt.Errorf("checkpoint folded to %d, want %d", mark.Seq, target)
	}
	if err != nil {
		return mark, fmt.Errorf("fill audit checkpoint %d: %w", target, err)
	}
	return mark, nil
}

// thinOut picks the checkpoint to drop when there are too many (len >= 2):
// the one (never the newest) whose neighbours are closest, so the kept ones
// stay spread over the whole log with gaps as even as the count allows.
func thinOut(l []auditCheckpoint) int {
	if len(l) < 3 {
		return 0
	}
	best, gap := 0, l[1].mark.Seq // dropping the oldest leaves 0..l[1]
	for i := 1; i < len(l)-1; i++ {
		if g := l[i+1].mark.Seq - l[i-1].mark.Seq; g < gap {
			best, gap = i, g
		}
	}
	return best
}

// AuditCheckpoints returns the marks of the audit checkpoints kept, oldest
// first.
func (n *Node) AuditCheckpoints() []projector.AuditMark {
	if n.audits == nil {
		return nil
	}
	n.audits.mu.Lock()
	defer n.audits.mu.Unlock()
	out := make([]projector.AuditMark, len(n.audits.list))
	for i, c := range n.audits.list {
		out[i] = c.mark
	}
	return out
}

// openAudit returns a writable store holding the newest checkpoint usable
// for an audit at target as of asOf (a copy of it), or an empty in-memory
// store when none is; release closes and removes it.
func (n *Node) openAudit(asOf *time.Time, target uint64) (*projector.Store, func(), error) {
	empty := func() (*projector.Store, func(), error) {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true, CacheBytes: 32 << 20, Ephemeral: true})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	a := n.audits
	if a == nil {
		return empty()
	}
	format := projector.FormatVersion(n.models)
	a.mu.Lock()
	var src string
	for i := len(a.list) - 1; i >= 0; i-- {
		if m := a.list[i].mark; m.Format == format && m.UsableFor(asOf, target) {
			src = a.list[i].dir
			break
		}
	}
	if src == "" {
		a.mu.Unlock()
		return empty()
	}
	dst := filepath.Join(a.dir, fmt.Sprintf("tmp-%d", a.tmp.Add(1)))
	err := copyCheckpoint(src, dst)
	a.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dst)
		return nil, nil, err
	}
	st, err := projector.OpenStore(dst, projector.StoreOptions{CacheBytes: 32 << 20, Ephemeral: true})
	if err != nil {
		_ = os.RemoveAll(dst)
		return nil, nil, err
	}
	return st, func() { st.Close(); _ = os.RemoveAll(dst) }, nil
}

// copyCheckpoint copies a Pebble folder: tables (immutable) as hard links,
// every other file (manifest, options, WAL) as a copy.
func copyCheckpoint(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case strings.HasSuffix(p, ".sst") || strings.HasSuffix(p, ".blob"):
			if err := os.Link(p, to); err != nil {
				return fmt.Errorf("audit copy: %w", err)
			}
			return nil
		default:
			return copyFile(p, to)
		}
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("audit copy: %w", err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("audit copy: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("audit copy %s: %w", from, err)
	}
	return out.Close()
}

// At returns the state of the read models folded up to asOf (event time)
// and/or atSeq, for audits: the newest usable audit checkpoint (or nothing)
// plus a fold, announcing nothing, of the events after it that the audit
// takes, found with the live store's time index. The answer is the one a
// fold of the whole log to that point gives.
func (n *Node) At(ctx context.Context, asOf *time.Time, atSeq uint64) (app.View, func(), error) {
	stream, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: log stream: %w", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: log stream info: %w", err)
	}
	target := info.State.LastSeq
	if atSeq > 0 && atSeq < target {
		target = atSeq
	}
	st, release, err := n.openAudit(asOf, target)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	from, err := st.Checkpoint()
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	ranges, err := n.Store.AuditRanges(from, target, asOf)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	stats, err := projector.FoldRanges(ctx, n.JS, st, n.models, ranges, target, asOf)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("audit replay: %w", err)
	}
	return storeView{st: st, seq: func() uint64 { return stats.Seq }}, release, nil
}
