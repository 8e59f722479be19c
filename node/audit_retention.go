package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// The retention of the audit checkpoints (the policy: audit_checkpoints.go)
// and the live spacing it sets.

// full reports whether the count or the disk leaves no room for one more
// checkpoint (a.mu held): the count is at its bound, or the disk beyond
// the live store plus one more checkpoint's mean share would pass 9/10 of
// the budget (the live store's compactions widen the checkpoints' share
// as it goes).
func (a *auditCheckpoints) full() bool {
	if a.keep > 0 && len(a.list) >= a.keep {
		return true
	}
	k := int64(len(a.list))
	return a.disk > 0 && k > 0 && a.extra+(a.extra-a.deltaBytes)/k > a.disk/10*9
}

// baseEvery is how many events apart the live poll checkpoints the live
// store when no bound binds: every interval, or every auditBaseEvery
// intervals while the store records deltas (they give the points between).
func (a *auditCheckpoints) baseEvery() uint64 {
	if a.recording.Load() {
		return a.every * auditBaseEvery
	}
	return a.every
}

// liveSpacing is how many events past the newest checkpoint the live poll
// takes the next: every, or, while the bounds leave no room for one more
// (full), the mean gap of the kept checkpoints over the log they cover
// (newest ÷ kept), if wider. Kept checkpoints about g apart and a new one s
// < g past the newest make the previous newest the one whose neighbours
// are closest (g+s against 2g): the retention drops it, and the work of
// taking it (a flush of the live memtable, a copy, a seal) bought nothing.
// Spaced by g, the gap an audit folds is the one the bounds keep anyway.
func liveSpacing(every, newest uint64, kept int, full bool) uint64 {
	if !full || kept == 0 {
		return every
	}
	return max(every, newest/uint64(kept))
}

// add lists c in sequence order (a.mu held).
func (a *auditCheckpoints) add(c auditCheckpoint) {
	i, _ := slices.BinarySearchFunc(a.list, c.mark.Seq, func(c auditCheckpoint, s uint64) int {
		return cmpU64(c.mark.Seq, s)
	})
	a.list = slices.Insert(a.list, i, c)
	for id, size := range c.files {
		r := a.refs[id]
		r.size, r.n = size, r.n+1
		a.refs[id] = r
	}
}

func (a *auditCheckpoints) unref(c auditCheckpoint) {
	for id := range c.files {
		if r := a.refs[id]; r.n <= 1 {
			delete(a.refs, id)
		} else {
			r.n--
			a.refs[id] = r
		}
	}
}

// retain measures the disk the checkpoints and deltas hold beyond the
// live store and, while the count or the disk is over its bound, drops
// deltas no checkpoint reaches, then checkpoints (thinOut: the deltas then
// reach further from the ones kept) and, once one is left, the oldest
// deltas (a.mu held). Within the bounds a delta no checkpoint reaches
// stays: a gap fill below it makes one that does.
func (a *auditCheckpoints) retain() error {
	live, err := folderFiles(a.live)
	if err != nil {
		return err
	}
	for {
		a.extra = a.deltaBytes
		for id, r := range a.refs {
			if _, shared := live[id]; !shared {
				a.extra += r.size
			}
		}
		overCount := a.keep > 0 && len(a.list) > a.keep
		overDisk := a.disk > 0 && a.extra > a.disk
		if overDisk {
			// The deltas no checkpoint reaches go first (no fill will
			// reach them while the disk is over), the oldest delta once
			// a single checkpoint is left.
			dropped := false
			for j, ok := range a.reached(a.format) {
				if !ok {
					if err := a.dropDelta(j); err != nil {
						return err
					}
					dropped = true
					break
				}
			}
			if !dropped && len(a.list) < 2 && !overCount && len(a.deltas) > 0 {
				if err := a.dropDelta(0); err != nil {
					return err
				}
				dropped = true
			}
			if dropped {
				continue
			}
		}
		over := overCount || overDisk
		if !over || len(a.list) < 2 {
			var newest uint64
			if k := len(a.list); k > 0 {
				newest = a.list[k-1].mark.Seq
			}
			a.spacing.Store(liveSpacing(a.baseEvery(), newest, len(a.list), a.full()))
			return nil
		}
		i := thinOut(a.list)
		c := a.list[i]
		// The mark goes first: a folder without one is removed on reload.
		if err := os.Remove(c.dir + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("audit checkpoint retention: %w", err)
		}
		if err := os.RemoveAll(c.dir); err != nil {
			return fmt.Errorf("audit checkpoint retention: %w", err)
		}
		a.unref(c)
		a.list = slices.Delete(a.list, i, i+1)
	}
}

// thinOut picks the checkpoint to drop when there are too many (len >= 2):
// the one whose neighbours are closest, never the newest nor, of three or
// more, the oldest, so the kept ones stay spread over the whole log with
// gaps as even as the count allows. The oldest anchors every point below
// the next one (the deltas after it reach them from it alone): dropped,
// audits there would fold from the start of the log.
func thinOut(l []auditCheckpoint) int {
	if len(l) < 3 {
		return 0
	}
	best, gap := 1, l[2].mark.Seq-l[0].mark.Seq
	for i := 2; i < len(l)-1; i++ {
		if g := l[i+1].mark.Seq - l[i-1].mark.Seq; g < gap {
			best, gap = i, g
		}
	}
	return best
}

// AuditCheckpointSpacing is how many events past the newest audit
// checkpoint the next live one is taken (the interval, or the wider gap
// the disk or count bound keeps), and AuditCheckpointsTaken how many live
// checkpoints this node took since it started.
func (n *Node) AuditCheckpointSpacing() uint64 {
	if n.audits == nil {
		return 0
	}
	return n.audits.spacing.Load()
}

// AuditCheckpointsTaken: see AuditCheckpointSpacing.
func (n *Node) AuditCheckpointsTaken() uint64 {
	if n.audits == nil {
		return 0
	}
	return n.audits.taken.Load()
}

// AuditCheckpointDisk is the disk the audit checkpoints hold beyond the
// live store, as last measured (bytes).
func (n *Node) AuditCheckpointDisk() int64 {
	if n.audits == nil {
		return 0
	}
	n.audits.mu.Lock()
	defer n.audits.mu.Unlock()
	return n.audits.extra
}
