package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// The policy of the audit checkpoints, as a whole:
//
//   - Spacing: a point an audit starts from about every `every` events of
//     the whole log, so an audit at any point folds at most about `every`
//     events after it, whatever the log's size. The deltas the live store
//     records give one at every multiple of `every` from the checkpoint
//     below (audit_deltas.go); the live poll takes a checkpoint when the
//     read model is auditBaseEvery intervals past the newest (`every`
//     without deltas), and once after a start. The gaps no delta reaches (a
//     restart, lost deltas) are filled by folding the point below a gap
//     forward, but only while the live projector is caught up (it comes
//     first) and only for gaps wider than every+every/8 (a fill of a few
//     events would cost a checkpoint's files for nothing).
//   - Retention: by a disk budget (the disk the checkpoints and deltas hold
//     beyond the live store), and optionally a count of checkpoints; over
//     either, the checkpoint whose neighbours are closest goes (never the
//     newest nor the oldest), so the kept ones stay spread evenly and the
//     deltas reach further from each (audit_retention.go).
//   - While a bound binds, the live poll spaces its checkpoints by the gap
//     the bound keeps rather than by `every` (liveSpacing): one taken
//     sooner would be thinned out at the next, having cost a flush of the
//     live memtable, a copy and a seal for nothing.
//   - Restart: the checkpoints and their marks (cp-<seq>.json) survive a
//     restart of the node; they are dropped when the log they were folded
//     from is not the log found (its stream was created at another time, or
//     ends before them) or the models' format changed.
//
// A live checkpoint flushes the live memtable first, so it is tables shared
// with the live store plus a WAL of a few records, which it then seals into
// a table of its own (takeAuditCheckpoint): without the flush Pebble copies
// the memtable's WAL into each checkpoint (up to a memtable a checkpoint)
// and the seal would write it out again as a table the live store does not
// share.

// FileID names a file by its inode (FileIdentity): hard links to one table
// are one file.
type FileID struct {
	dev, ino uint64
	path     string // where the platform gives no inode
}

type fileRef struct {
	size int64
	n    int // kept checkpoints holding the file
}

type auditCheckpoint struct {
	dir   string
	mark  projector.AuditMark
	files map[FileID]int64 // every file of dir and its size
}

// auditCheckpoints are one node's audit checkpoints.
type auditCheckpoints struct {
	dir   string
	live  string // the live store's folder
	every uint64
	keep  int   // 0: no bound on the count
	disk  int64 // bytes beyond the live store; 0: no bound
	last  atomic.Uint64
	tmp   atomic.Uint64 // names temporary folders
	// spacing is how far past the newest checkpoint the live poll takes
	// the next (liveSpacing), set by retain; taken counts the live
	// checkpoints taken since the start.
	spacing, taken atomic.Uint64

	// The log's last sequence as the gap fill last saw it, since when it
	// has stayed there, and when the last fill began (the start, before
	// the first); owned by runAuditCheckpoints's goroutine.
	seenLog    uint64
	quietSince time.Time
	lastFill   time.Time

	// fills counts the gap fills that ended (listed, dropped or failed)
	// and fillNanos their wall time, the checkpoint's copy included: what
	// background folding cost, for reports (Node.AuditFills).
	fills, fillNanos atomic.Int64

	// deltasPending counts the deltas cut and not yet listed (or failed).
	deltasPending atomic.Int64
	// recording is set while the live store records deltas: the live
	// poll then checkpoints it every auditBaseEvery intervals.
	recording atomic.Bool
	// mergeKeys are the cross-loop merge lists of the live store's log
	// from the start of the recording on (crossloop.MergeKeys), fed with
	// each delta cut; nil without a cross-loop model or after a hole.
	// seeded counts the audit folds given a filter from them.
	mergeKeys atomic.Pointer[crossloop.MergeKeys]
	seeded    atomic.Int64

	format string     // of the models: what an audit or fill starts from
	mu     sync.Mutex // guards what follows and the files list and deltas name
	loaded bool
	list   []auditCheckpoint // by sequence
	refs   map[FileID]fileRef
	// deltas are the delta tables kept, by end (audit_deltas.go), and
	// deltaBytes their size.
	deltas     []auditDelta
	deltaBytes int64
	extra      int64 // disk beyond the live store, deltas included, as last measured
}

// auditLogFile records which log the checkpoints were folded from.
const auditLogFile = "log.json"

type auditLog struct {
	Stream  string    `json:"stream"`
	Created time.Time `json:"created"`
}

func newAuditCheckpoints(dir, live, format string, every uint64, keep int, disk int64) (*auditCheckpoints, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("audit checkpoints: %w", err)
	}
	a := &auditCheckpoints{dir: dir, live: live, format: format, every: every, keep: keep, disk: disk, refs: map[FileID]fileRef{},
		lastFill: time.Now()}
	a.spacing.Store(every)
	return a, nil
}

// auditPoll is how often the node looks whether a checkpoint is due;
// every auditRetainPolls polls it measures the disk and applies the
// retention even when no checkpoint was taken.
//
// A gap is filled once the log has taken no write for auditFillQuiet (and
// the projector folded it all): a fill folds up to an interval of events
// again, and on a node taking writes (an import, a catch-up) that fold
// would compete with the live one for the same cores, and take the model
// caches the live fold keeps between events (a fill folds the same model
// instances into another store, so each event of the one evicts what the
// other holds). A log that is never quiet still gets one fill each
// auditFillEvery, while the projector is within an interval of its end.
// A live checkpoint is taken every interval whatever the load: gaps are
// what a burst or a restart left.
const (
	auditPoll        = 20 * time.Millisecond
	auditRetainPolls = 250
	auditFillQuiet   = time.Second
	auditFillEvery   = 5 * time.Minute
)

// runAuditCheckpoints reloads the checkpoints of an earlier run, then takes
// a checkpoint whenever the runtime committed every events since the
// newest, and fills gaps, until ctx ends. It watches the runtime's
// checkpoint rather than hooking its commits, so a checkpoint is never on
// the fold's path.
func (n *Node) runAuditCheckpoints(ctx context.Context) {
	a := n.audits
	if err := n.loadAuditCheckpoints(ctx); err != nil {
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("audit checkpoints: reload", "err", err)
	}
	t := time.NewTicker(auditPoll)
	defer t.Stop()
	// The deltas recorded from here on start where the live store is: a
	// checkpoint of it anchors them (those of an earlier run end at or
	// before its last commit, with a hole after).
	anchor := a.recording.Load()
	for polls := 1; ; polls++ {
		if polls%auditRetainPolls == 0 {
			// The live store's compactions leave the checkpoints more of
			// the disk as it goes, without a checkpoint being taken.
			a.mu.Lock()
			err := a.retain()
			a.mu.Unlock()
			if err != nil {
				n.log.Warn("audit checkpoint retention", "err", err)
			}
		}
		if seq := n.Runtime.Seq(); seq > 0 && (anchor || seq >= a.last.Load()+a.spacing.Load()) {
			if err := n.takeAuditCheckpoint(); err != nil {
				n.log.Warn("audit checkpoint", "err", err)
			} else {
				anchor = false
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

// loadAuditCheckpoints lists the checkpoints an earlier run left that are
// states of this log in this format, and removes everything else under the
// folder (temporary copies, checkpoints without a mark, of another log or
// format). On an error it removes them all.
func (n *Node) loadAuditCheckpoints(ctx context.Context) error {
	a := n.audits
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded {
		return nil
	}
	err := n.reloadAuditCheckpoints(ctx)
	if err != nil {
		for _, c := range a.list {
			a.unref(c)
		}
		a.list, a.deltas, a.deltaBytes = nil, nil, 0
		if rerr := clearFolder(a.dir); rerr != nil {
			return errors.Join(err, rerr)
		}
		if ctx.Err() != nil {
			return err
		}
	}
	a.loaded = true
	if k := len(a.list); k > 0 {
		a.last.Store(a.list[k-1].mark.Seq)
	}
	return err
}

func (n *Node) reloadAuditCheckpoints(ctx context.Context) error {
	a := n.audits
	stream, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		return fmt.Errorf("log stream: %w", err)
	}
	info := stream.CachedInfo()
	want := auditLog{Stream: events.LogStream, Created: info.Created.UTC()}
	var was auditLog
	b, err := os.ReadFile(filepath.Join(a.dir, auditLogFile))
	if err == nil {
		err = json.Unmarshal(b, &was)
	}
	if err != nil || !was.Created.Equal(want.Created) || was.Stream != want.Stream {
		if err := clearFolder(a.dir); err != nil {
			return err
		}
		b, _ := json.Marshal(want)
		return writeFileAtomic(filepath.Join(a.dir, auditLogFile), b)
	}
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return fmt.Errorf("audit checkpoints: %w", err)
	}
	format := a.format
	marks := map[string]projector.AuditMark{}
	deltas := map[string]bool{} // dl-<to> listed
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() && strings.HasPrefix(name, "dl-") && strings.HasSuffix(name, ".json") {
			if a.reloadDelta(name, format, info.State.LastSeq) {
				deltas[strings.TrimSuffix(name, ".json")] = true
			}
			continue
		}
		if e.IsDir() || !strings.HasPrefix(name, "cp-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		var m projector.AuditMark
		b, err := os.ReadFile(filepath.Join(a.dir, name))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err == nil && m.Format == format && m.Seq <= info.State.LastSeq {
			marks[strings.TrimSuffix(name, ".json")] = m
		}
	}
	for _, e := range entries {
		name := e.Name()
		if name == auditLogFile {
			continue
		}
		if ext := filepath.Ext(name); !e.IsDir() && (ext == ".sst" || ext == ".json") && deltas[strings.TrimSuffix(name, ext)] {
			continue // a listed delta's table or mark
		}
		m, ok := marks[name]
		if !ok || !e.IsDir() {
			if _, mine := marks[strings.TrimSuffix(name, ".json")]; mine && !e.IsDir() {
				continue // the mark of a listed checkpoint
			}
			if err := os.RemoveAll(filepath.Join(a.dir, name)); err != nil {
				return fmt.Errorf("audit checkpoints: %w", err)
			}
			continue
		}
		dir := filepath.Join(a.dir, name)
		files, err := folderFiles(dir)
		if err != nil {
			return err
		}
		a.add(auditCheckpoint{dir: dir, mark: m, files: files})
	}
	return a.retain()
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
	// Sealed: opened without a WAL, the few records Pebble copied into its
	// WAL flushed to a table, and closed. Pebble copies a WAL file whole,
	// and a recycled one is as long as a memtable (stale records after the
	// live ones): each checkpoint would hold up to a memtable of disk of
	// its own, and each audit would copy it again.
	st, err := projector.OpenStore(tmp, projector.StoreOptions{CacheBytes: auditCacheBytes, Ephemeral: true})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	mark, err := st.AuditMark()
	if err == nil {
		if err = st.DB().Flush(); err != nil {
			err = fmt.Errorf("checkpoint: flush: %w", err)
		}
	}
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close checkpoint: %w", cerr)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	a.last.Store(mark.Seq)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.has(mark.Seq) {
		return os.RemoveAll(tmp) // nothing new since the last one
	}
	a.taken.Add(1)
	return a.list1(tmp, mark)
}

// fillDue picks the gap to fill, if any: the widest gap between the
// points an audit starts from without folding (checkpoints and the deltas
// they reach, of this format; or before the first) wider than
// every+every/8, while the count and the disk leave room for one more
// checkpoint (with a tenth of the disk budget to spare: the live store's
// compactions widen the checkpoints' share as it goes). It returns where
// the fill starts (the point below the gap; the empty store before the
// first) and the sequence to fold it to: an interval on, or the interval
// below the next point when the gap is shorter than two (so a gap of
// every+d costs a fold of d events).
func (a *auditCheckpoints) fillDue() (from auditStart, target uint64, ok bool) {
	if a.full() {
		return auditStart{}, 0, false
	}
	var gap, below uint64
	prev := uint64(0)
	for _, m := range a.points(a.format) {
		if m.Format != a.format {
			continue
		}
		if g := m.Seq - prev; g > a.every+a.every/8 && g > gap {
			below, gap = prev, g
		}
		prev = m.Seq
	}
	if gap == 0 {
		return auditStart{}, 0, false
	}
	target = below + min(a.every, gap-a.every)
	if below == 0 {
		return auditStart{base: -1}, target, true
	}
	from = a.start(a.format, below, nil)
	if from.seq != below {
		return auditStart{}, 0, false // not reached after all
	}
	return from, target, true
}

// fillAuditGap adds one checkpoint to the gap fillDue picks, once the log
// is quiet and the live projector caught up, or at most each
// auditFillEvery on a log that is never quiet (auditFillQuiet): the
// checkpoint below the gap (nothing, before the first) folded forward
// without a time bound, the state of the log prefix it names, as a live
// checkpoint there would be (a fold is a function of the log prefix).
func (n *Node) fillAuditGap(ctx context.Context) error {
	a := n.audits
	a.mu.Lock()
	_, _, due := a.fillDue()
	a.mu.Unlock()
	if !due {
		return nil
	}
	stream, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		return fmt.Errorf("log stream: %w", err)
	}
	last, seq := stream.CachedInfo().State.LastSeq, n.Runtime.Seq()
	if last != a.seenLog {
		a.seenLog, a.quietSince = last, time.Now()
	}
	quiet := seq >= last && time.Since(a.quietSince) >= auditFillQuiet
	if seq+a.every < last || (!quiet && time.Since(a.lastFill) < auditFillEvery) {
		return nil // the log takes writes, or the projector folds them: they come first
	}
	a.mu.Lock()
	from, target, due := a.fillDue()
	if !due {
		a.mu.Unlock()
		return nil
	}
	start := time.Now()
	defer func() { a.fills.Add(1); a.fillNanos.Add(int64(time.Since(start))) }()
	dst := filepath.Join(a.dir, fmt.Sprintf("tmp-%d", a.tmp.Add(1)))
	if from.base >= 0 {
		err = copyCheckpoint(a.list[from.base].dir, dst)
	}
	if err == nil {
		err = linkDeltas(from.deltas, dst)
	}
	a.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dst)
		return err
	}
	a.lastFill = time.Now()
	mark, err := foldCheckpoint(ctx, n, dst, from, target)
	if err != nil {
		_ = os.RemoveAll(dst)
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.has(target) {
		return os.RemoveAll(dst) // taken meanwhile
	}
	return a.list1(dst, mark)
}

// AuditFills reports the audit checkpoint gap fills this node ran in the
// background since it started (fold of the events between two
// checkpoints, beside the live projector) and their wall time in all.
func (n *Node) AuditFills() (fills int64, busy time.Duration) {
	if n.audits == nil {
		return 0, 0
	}
	return n.audits.fills.Load(), time.Duration(n.audits.fillNanos.Load())
}

// foldCheckpoint folds the store in dir (a copy of from's checkpoint, or
// an empty folder before the first) to target, after applying from's
// deltas, and returns its
// mark; the store is flushed and closed, so dir holds tables and a WAL of
// a few records, like a checkpoint taken of the live store.
func foldCheckpoint(ctx context.Context, n *Node, dir string, from auditStart, target uint64) (projector.AuditMark, error) {
	st, err := projector.OpenStore(dir, projector.StoreOptions{CacheBytes: auditCacheBytes, Ephemeral: true})
	if err != nil {
		return projector.AuditMark{}, err
	}
	for i := range from.deltas {
		if err = st.ApplyDelta(deltaLink(dir, i)); err != nil {
			break
		}
	}
	var ids *projector.AuditIDs
	if err == nil {
		ids, err = n.Store.AuditIDs(from.seq, target)
	}
	if err == nil {
		_, err = projector.FoldRanges(ctx, n.JS, st, n.models, []projector.SeqRange{{From: from.seq + 1, To: target}}, target, nil, nil, ids, n.Sealer)
	}
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

// has reports whether a checkpoint at seq is listed (a.mu held).
func (a *auditCheckpoints) has(seq uint64) bool {
	_, found := slices.BinarySearchFunc(a.list, seq, func(c auditCheckpoint, s uint64) int {
		return cmpU64(c.mark.Seq, s)
	})
	return found
}

func cmpU64(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// list1 names the finished checkpoint in tmp after its sequence, writes its
// mark beside it, lists it and applies the retention (a.mu held). The mark
// is written last: a folder without one is not a checkpoint (a reload
// removes it).
func (a *auditCheckpoints) list1(tmp string, mark projector.AuditMark) error {
	final := filepath.Join(a.dir, fmt.Sprintf("cp-%020d", mark.Seq))
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("checkpoint: %w", err)
	}
	b, err := json.Marshal(mark)
	if err == nil {
		err = writeFileAtomic(final+".json", b)
	}
	var files map[FileID]int64
	if err == nil {
		files, err = folderFiles(final)
	}
	if err != nil {
		_ = os.Remove(final + ".json")
		_ = os.RemoveAll(final)
		return fmt.Errorf("checkpoint: %w", err)
	}
	a.add(auditCheckpoint{dir: final, mark: mark, files: files})
	return a.retain()
}

// folderFiles lists the files under dir by inode with their sizes; a file
// removed while it is walked (the live store compacts) is passed over.
func folderFiles(dir string) (map[FileID]int64, error) {
	out := map[FileID]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		out[FileIdentity(p, fi)] = fi.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit checkpoints: files of %s: %w", dir, err)
	}
	return out, nil
}

// clearFolder removes everything in dir, keeping dir.
func clearFolder(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("audit checkpoints: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("audit checkpoints: %w", err)
		}
	}
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// AuditCheckpointsSettled reports whether the checkpoints and deltas are
// where the policy puts them for the read model as it stands: the newest
// point an audit starts from less than an interval behind it, the newest
// checkpoint less than the live spacing, no delta waiting for its table
// and no gap left that the node would fill.
func (n *Node) AuditCheckpointsSettled() bool {
	a := n.audits
	if a == nil {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.loaded {
		return false
	}
	var newest, base uint64
	if p := a.points(a.format); len(p) > 0 {
		newest = p[len(p)-1].Seq
	}
	if k := len(a.list); k > 0 {
		base = a.list[k-1].mark.Seq
	}
	seq := n.Runtime.Seq()
	_, _, due := a.fillDue()
	return newest+a.every > seq && base+a.spacing.Load() > seq && !due && a.deltasPending.Load() == 0
}
