package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// Audit checkpoints: local Pebble checkpoints of the live read model (hard
// links to its tables) about every AuditCheckpointEvery events, so an audit
// (--as-of, --at-seq) folds only what lies between the newest usable one and
// the point asked for instead of the whole log (audit_checkpoints.go takes,
// fills, keeps and reloads them).
//
// INVARIANT: a checkpoint directory under DataDir/audit is never written
// once listed: an audit folds into a copy of it (links to its tables, copies
// of its other files), so audits run side by side and a checkpoint is the
// state of the log prefix its mark names.
const (
	// DefaultAuditCheckpointEvery is the default audit checkpoint interval:
	// the events an audit folds at most (9/8 of it once gaps are filled).
	DefaultAuditCheckpointEvery = 2000
	// DefaultAuditCheckpointKeep is the default bound on the number of
	// checkpoints kept: none (the disk budget bounds them).
	DefaultAuditCheckpointKeep = 0
	// DefaultAuditCheckpointDiskMiB is the default disk budget of the
	// checkpoints beyond the live store (tables it no longer has, and the
	// checkpoints' own files), in MiB.
	DefaultAuditCheckpointDiskMiB = 4096
	// AuditDir is the folder of the audit checkpoints under the data folder.
	AuditDir = "audit"
	// auditCacheBytes is the Pebble memory of a store an audit (or a gap
	// fill) folds into.
	auditCacheBytes = 32 << 20
)

// AuditCheckpoints returns the marks of the states an audit starts from
// without folding, oldest first: the checkpoints kept and the ends of the
// deltas they reach.
func (n *Node) AuditCheckpoints() []projector.AuditMark {
	if n.audits == nil {
		return nil
	}
	n.audits.mu.Lock()
	defer n.audits.mu.Unlock()
	return n.audits.points(n.audits.format)
}

// openAudit returns a writable store holding the latest state usable for
// an audit at target as of asOf: a copy of a checkpoint with the deltas
// after it applied, or an empty in-memory store when none is; release
// closes and removes it.
//
// base is the sequence of the checkpoint copied (0: the empty store).
func (n *Node) openAudit(asOf *time.Time, target uint64) (st *projector.Store, release func(), base uint64, err error) {
	empty := func() (*projector.Store, func(), uint64, error) {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true, CacheBytes: auditCacheBytes, Ephemeral: true})
		if err != nil {
			return nil, nil, 0, err
		}
		return st, func() { st.Close() }, 0, nil
	}
	a := n.audits
	if a == nil {
		return empty()
	}
	a.mu.Lock()
	from := a.start(a.format, target, asOf)
	if from.base < 0 {
		a.mu.Unlock()
		return empty()
	}
	dst := filepath.Join(a.dir, fmt.Sprintf("tmp-%d", a.tmp.Add(1)))
	base = a.list[from.base].mark.Seq
	err = copyCheckpoint(a.list[from.base].dir, dst)
	if err == nil {
		// Linked while listed: a delta the retention drops meanwhile
		// stays readable through the link.
		err = linkDeltas(from.deltas, dst)
	}
	a.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(dst)
		return nil, nil, 0, err
	}
	// Removed once answered: nothing in it needs to be durable.
	st, err = projector.OpenStore(dst, projector.StoreOptions{CacheBytes: auditCacheBytes, Ephemeral: true, FS: projector.NoSyncFS(vfs.Default)})
	if err != nil {
		_ = os.RemoveAll(dst)
		return nil, nil, 0, err
	}
	release = func() { st.Close(); _ = os.RemoveAll(dst) }
	for i := range from.deltas {
		if err := st.ApplyDelta(deltaLink(dst, i)); err != nil {
			release()
			return nil, nil, 0, fmt.Errorf("audit: %w", err)
		}
	}
	return st, release, base, nil
}

// linkDeltas links the tables of ds into dir (deltaLink names them).
func linkDeltas(ds []auditDelta, dir string) error {
	for i, d := range ds {
		if err := os.Link(d.path, deltaLink(dir, i)); err != nil {
			return fmt.Errorf("audit delta: %w", err)
		}
	}
	return nil
}

func deltaLink(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("delta-%d.sst", i)) }

// AuditCheckpointFor is the sequence of the state an audit at target as
// of asOf starts from (0: the start of the log).
func (n *Node) AuditCheckpointFor(asOf *time.Time, target uint64) uint64 {
	if n.audits == nil {
		return 0
	}
	n.audits.mu.Lock()
	defer n.audits.mu.Unlock()
	if from := n.audits.start(n.audits.format, target, asOf); from.base >= 0 {
		return from.seq
	}
	return 0
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
// and/or atSeq, for audits: the live read model when it folded exactly the
// events the audit takes, and otherwise a view whose read models are each
// folded on their first read (auditView). The answer is the one a fold of
// the whole log to that point gives.
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
	if v, release, ok := n.liveAudit(asOf, target); ok {
		return v, release, nil
	}
	v := &auditView{ctx: ctx, n: n, asOf: asOf, target: target, folds: map[string]*auditFold{}}
	return v, v.release, nil
}

// auditView is an audit's view when the live read model is not it: each
// read model is folded on its first read, alone, into a copy of the
// newest usable audit checkpoint (or an empty store), from it to the audit's
// point (the events after it that the audit takes, found with the live
// store's time index). A query reads one or two of the models, and a model
// folded alone costs a fraction of the fold of every model.
//
// INVARIANT: a model folded alone passes over the events the live store's
// poison index names (projector.Store.Poisoned): what any model refused
// left no trace in the others. Where that index does not tell what the
// audit's fold refuses (as of a time, where a model may refuse what the
// live fold did not; a store folded by an older lore; an audit beyond the
// live model), the model is folded with the models whose refusals can
// reach it (projector.FoldSet), and with every model, once, into one copy
// when that set cannot tell (projector.ErrForeignDuplicate).
type auditView struct {
	ctx    context.Context
	n      *Node
	asOf   *time.Time
	target uint64

	mu     sync.Mutex
	folds  map[string]*auditFold // by model name; a fold set's copy under each of its models not folded before
	all    *auditFold            // every model folded together, when it came to that
	copies []*auditFold          // every copy folded, to release
}

// auditFold is one copy of a checkpoint brought to the audit's point.
type auditFold struct {
	st      *projector.Store
	release func()
	err     error
	foldErr error // the fold's own error, when err is one
}

func (v *auditView) Seq() uint64 { return v.target }

func (v *auditView) Model(name string) projector.Reader {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.folds == nil {
		return errReader{fmt.Errorf("audit: model %q read after the view's release", name)}
	}
	if v.all != nil {
		return v.all.reader(name)
	}
	if f, ok := v.folds[name]; ok {
		return f.reader(name)
	}
	i := slices.IndexFunc(v.n.models, func(m projector.Model) bool { return m.Name() == name })
	if i < 0 {
		return errReader{fmt.Errorf("audit: no read model named %q", name)}
	}
	f, models := v.fold(v.n.models[i], false)
	if errors.Is(f.foldErr, projector.ErrForeignDuplicate) {
		f.close()
		f, models = v.fold(v.n.models[i], true)
	}
	v.copies = append(v.copies, f)
	if len(models) == len(v.n.models) && !slices.ContainsFunc(models, projector.RefusalsOnly) {
		v.all = f
	} else {
		for _, m := range models {
			if _, ok := v.folds[m.Name()]; !ok && !projector.RefusalsOnly(m) {
				v.folds[m.Name()] = f
			}
		}
	}
	return f.reader(name)
}

// fold brings a copy of the newest usable checkpoint to the audit's point,
// folding model alone when the live store's poison index covers the fold,
// else its fold set (projector.FoldSet), or every model when all; models
// are the models folded.
func (v *auditView) fold(model projector.Model, all bool) (f *auditFold, models []projector.Model) {
	n := v.n
	models = []projector.Model{model}
	st, release, base, err := n.openAudit(v.asOf, v.target)
	if err != nil {
		return &auditFold{err: fmt.Errorf("audit: %w", err)}, models
	}
	f = &auditFold{st: st, release: release}
	from, err := st.Checkpoint()
	if err != nil {
		f.err = fmt.Errorf("audit: %w", err)
		return f, models
	}
	ranges, err := n.Store.AuditRanges(from, v.target, v.asOf)
	if err != nil {
		f.err = fmt.Errorf("audit: %w", err)
		return f, models
	}
	var poisoned map[uint64]bool
	covered := false
	if v.asOf == nil && !all { // as of a time, the refusals can differ from the live fold's
		if poisoned, covered, err = n.Store.Poisoned(from, v.target); err != nil {
			f.err = fmt.Errorf("audit: %w", err)
			return f, models
		}
	}
	switch {
	case all:
		models = n.models
	case !covered:
		models = projector.FoldSet(n.models, model)
	}
	if err := n.seedMergeFilter(f, models, base, from); err != nil {
		f.err = fmt.Errorf("audit: %w", err)
		return f, models
	}
	ids, err := n.Store.AuditIDs(from, v.target)
	if err != nil {
		f.err = fmt.Errorf("audit: %w", err)
		return f, models
	}
	if _, err := projector.FoldRanges(v.ctx, n.JS, st, models, ranges, v.target, v.asOf, poisoned, ids, n.Sealer); err != nil {
		f.err = fmt.Errorf("audit replay: %w", err)
		f.foldErr = err
	}
	return f, models
}

// AuditMergeFilters counts the audit folds given a filter of their merge
// lists from the live store's merge keys (seedMergeFilter).
func (n *Node) AuditMergeFilters() int64 {
	if n.audits == nil {
		return 0
	}
	return n.audits.seeded.Load()
}

// seedMergeFilter gives the cross-loop fold of f's copy (a checkpoint at
// base brought to from by deltas) the filter of its merge lists, when the
// live store's merge keys cover both states; the filter leaves the model
// with the copy.
func (n *Node) seedMergeFilter(f *auditFold, models []projector.Model, base, from uint64) error {
	cl := n.crossloop()
	if n.audits == nil || cl == nil || !slices.Contains(models, projector.Model(cl)) {
		return nil
	}
	mk := n.audits.mergeKeys.Load()
	if mk == nil || !mk.Covers(base, from) {
		return nil
	}
	drop, err := cl.SeedMergeFilter(f.st.Model(crossloop.ModelName), mk)
	if err != nil || drop == nil {
		return err
	}
	n.audits.seeded.Add(1)
	release := f.release
	f.release = func() { drop(); release() }
	return nil
}

func (f *auditFold) reader(name string) projector.Reader {
	if f.err != nil {
		return errReader{f.err}
	}
	return f.st.Model(name)
}

// release closes and removes every copy the view folded.
func (v *auditView) release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.copies {
		f.close()
	}
	v.folds, v.all, v.copies = nil, nil, nil
}

func (f *auditFold) close() {
	if f.release != nil {
		f.release()
		f.release = nil
	}
}

// errReader answers every read with the error that kept an audit from
// folding its model.
type errReader struct{ err error }

func (r errReader) Get([]byte) ([]byte, bool, error)                 { return nil, false, r.err }
func (r errReader) Scan([]byte, func(key, value []byte) error) error { return r.err }

// liveAudit answers an audit from a snapshot of the live read model when
// that model folded exactly the events the audit takes: the log up to
// target, every one of them no later than asOf (an --at-seq at the head
// of the log, an --as-of after its latest event time). Nothing is copied
// or folded; ok is false otherwise.
func (n *Node) liveAudit(asOf *time.Time, target uint64) (app.View, func(), bool) {
	snap := n.Store.Snapshot()
	m, err := snap.AuditMark()
	if err != nil || m.Seq != target || m.Format != projector.FormatVersion(n.models) || !m.UsableFor(asOf, target) {
		_ = snap.Close()
		return nil, nil, false
	}
	return snapshotView{snap: snap, seq: target}, func() { _ = snap.Close() }, true
}

// snapshotView is an app.View over a snapshot of a store.
type snapshotView struct {
	snap *projector.Snapshot
	seq  uint64
}

func (v snapshotView) Model(name string) projector.Reader { return v.snap.Model(name) }
func (v snapshotView) Seq() uint64                        { return v.seq }
