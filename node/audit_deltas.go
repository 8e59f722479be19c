package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// Audit deltas: the live store records what its commits wrote over each
// interval of `every` events (projector.Delta) and the node keeps each as
// a table beside the checkpoints (dl-<to>.sst, its mark in dl-<to>.json).
// A checkpoint at b and the deltas that follow it without a hole give the
// state at the end of any of them: an audit copies the checkpoint and
// ingests the deltas (Pebble links each table in; nothing is folded), then
// folds what lies between the last one and its point. So the live store is
// checkpointed (a memtable flush, a copy, a seal, and a checkpoint's share
// of the disk as compactions move on) only every baseEvery deltas, and a
// point every interval costs a table of that interval's writes.
//
// INVARIANT: a delta is listed only once its table and mark are written
// (the mark last, by rename); a reload lists the deltas whose mark names
// this format and removes every other dl- file.

// auditBaseEvery is how many intervals apart the live poll checkpoints the
// live store while deltas are recorded (the bound binding widens it).
const auditBaseEvery = 16

// auditDeltaQueue is how many cut deltas may wait for their table to be
// written before the commit that cuts the next waits.
const auditDeltaQueue = 16

// auditDelta is a delta table kept for audits: applied to a state at any
// sequence in [from, mark.Seq], it gives the state at mark.Seq.
type auditDelta struct {
	path string
	from uint64
	mark projector.AuditMark
	size int64
}

// deltaFile is a delta's mark file.
type deltaFile struct {
	From uint64              `json:"from"`
	Mark projector.AuditMark `json:"mark"`
}

func deltaName(to uint64) string { return fmt.Sprintf("dl-%020d", to) }

// recordDeltas makes the live store record its commits into deltas and
// writes their tables (writeDeltas) until stop, which ends the recording,
// lets the tables of the deltas cut so far be written and returns. A delta
// cut after stop (nothing commits to the live store once its runtime
// ended) is dropped.
func (n *Node) recordDeltas() (stop func(), err error) {
	a := n.audits
	if err := n.startMergeKeys(); err != nil {
		n.log.Warn("audit merge keys", "err", err)
	}
	q := make(chan *projector.Delta, auditDeltaQueue)
	var mu sync.Mutex // guards closed and the sends on q
	closed := false
	err = n.Store.RecordDeltas(a.every, func(d *projector.Delta) {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			a.deltasPending.Add(1)
			q <- d // writeDeltas drains q without mu
		}
	})
	if err != nil {
		return nil, err
	}
	wrote := make(chan struct{})
	go func() { defer close(wrote); n.writeDeltas(q) }()
	return func() {
		n.Store.StopDeltas()
		mu.Lock()
		closed = true
		close(q)
		mu.Unlock()
		<-wrote
	}, nil
}

// writeDeltas writes the tables of the deltas q hands over and lists them,
// until q is closed. A delta that cannot be written leaves a hole: audits
// past it start from a checkpoint after it (or a gap fill's).
func (n *Node) writeDeltas(q <-chan *projector.Delta) {
	a := n.audits
	for d := range q {
		if err := a.writeDelta(d); err != nil {
			n.log.Warn("audit delta", "to", d.To, "err", err)
		}
		a.deltasPending.Add(-1)
	}
}

// startMergeKeys scans the live store's cross-loop merge lists at its
// checkpoint, where the deltas about to be recorded start (nothing
// commits before the runtime runs), for the audits' copies
// (crossloop.MergeKeys).
func (n *Node) startMergeKeys() error {
	n.audits.mergeKeys.Store(nil)
	if n.crossloop() == nil {
		return nil
	}
	cp, err := n.Store.Checkpoint()
	if err != nil {
		return err
	}
	mk, err := crossloop.NewMergeKeys(n.Store.Model(crossloop.ModelName), cp)
	if err != nil {
		return err
	}
	n.audits.mergeKeys.Store(mk)
	return nil
}

func (a *auditCheckpoints) writeDelta(d *projector.Delta) error {
	// Fed before the delta is listed (an audit may then use it), whether
	// or not its table is written: its writes happened.
	if mk := a.mergeKeys.Load(); mk != nil && !mk.Feed(d.From, d.To, d.Keys) {
		a.mergeKeys.Store(nil) // a hole: what it wrote is unknown
	}
	tmp := filepath.Join(a.dir, fmt.Sprintf("tmp-%d.sst", a.tmp.Add(1)))
	if err := d.WriteTable(tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("audit delta: %w", err)
	}
	final := filepath.Join(a.dir, deltaName(d.To))
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.Rename(tmp, final+".sst"); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("audit delta: %w", err)
	}
	b, err := json.Marshal(deltaFile{From: d.From, Mark: d.Mark})
	if err == nil {
		err = writeFileAtomic(final+".json", b)
	}
	if err != nil {
		_ = os.Remove(final + ".sst")
		return err
	}
	a.addDelta(auditDelta{path: final + ".sst", from: d.From, mark: d.Mark, size: fi.Size()})
	return a.retain()
}

// addDelta lists d by its end, replacing a delta ending there (a.mu held).
func (a *auditCheckpoints) addDelta(d auditDelta) {
	i, found := slices.BinarySearchFunc(a.deltas, d.mark.Seq, func(x auditDelta, s uint64) int {
		return cmpU64(x.mark.Seq, s)
	})
	if found {
		a.deltaBytes -= a.deltas[i].size
		a.deltas[i] = d
	} else {
		a.deltas = slices.Insert(a.deltas, i, d)
	}
	a.deltaBytes += d.size
}

// dropDelta removes the i-th delta and its files (a.mu held). The mark
// goes first: a table without one is removed on reload.
func (a *auditCheckpoints) dropDelta(i int) error {
	d := a.deltas[i]
	base := strings.TrimSuffix(d.path, ".sst")
	if err := os.Remove(base + ".json"); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("audit delta: %w", err)
	}
	if err := os.Remove(d.path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("audit delta: %w", err)
	}
	a.deltaBytes -= d.size
	a.deltas = slices.Delete(a.deltas, i, i+1)
	return nil
}

// reloadDelta lists the delta whose mark file is name if it is of format
// and within the log (a.mu held); it reports whether it did.
func (a *auditCheckpoints) reloadDelta(name, format string, lastSeq uint64) bool {
	var f deltaFile
	b, err := os.ReadFile(filepath.Join(a.dir, name))
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil || f.Mark.Format != format || f.Mark.Seq > lastSeq || f.From >= f.Mark.Seq {
		return false
	}
	path := filepath.Join(a.dir, strings.TrimSuffix(name, ".json")+".sst")
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	a.addDelta(auditDelta{path: path, from: f.From, mark: f.Mark, size: fi.Size()})
	return true
}

// chain returns the deltas that bring a state at seq of format forward
// without a hole, in order, each ending at or before target and usable as
// of asOf (a.mu held).
func (a *auditCheckpoints) chain(seq uint64, format string, target uint64, asOf *time.Time) []auditDelta {
	var out []auditDelta
	cur := seq
	for i := sort.Search(len(a.deltas), func(i int) bool { return a.deltas[i].mark.Seq > cur }); i < len(a.deltas); i++ {
		d := a.deltas[i]
		if d.from > cur || d.mark.Format != format || !d.mark.UsableFor(asOf, target) {
			break
		}
		out, cur = append(out, d), d.mark.Seq
	}
	return out
}

// auditStart is where an audit (or a gap fill) starts: a checkpoint and
// the deltas applied to it, the state at seq.
type auditStart struct {
	base   int // index in a.list; -1: the empty store
	deltas []auditDelta
	seq    uint64
}

// start picks the latest state an audit at target as of asOf can start
// from: a checkpoint of this format usable for it and the deltas after it
// (a.mu held). Of two starts at one sequence, the one with fewer deltas.
func (a *auditCheckpoints) start(format string, target uint64, asOf *time.Time) auditStart {
	best := auditStart{base: -1}
	for i := len(a.list) - 1; i >= 0; i-- {
		m := a.list[i].mark
		if m.Format != format || !m.UsableFor(asOf, target) {
			continue
		}
		ch := a.chain(m.Seq, format, target, asOf)
		end := m.Seq
		if k := len(ch); k > 0 {
			end = ch[k-1].mark.Seq
		}
		if best.base < 0 || end > best.seq || (end == best.seq && len(ch) < len(best.deltas)) {
			best = auditStart{base: i, deltas: ch, seq: end}
		}
	}
	return best
}

// reached reports, for each delta, whether a checkpoint of format reaches
// it: some chain of deltas without a hole leads to it from one (a.mu held).
func (a *auditCheckpoints) reached(format string) []bool {
	out := make([]bool, len(a.deltas))
	at, have := uint64(0), false // the latest state reached so far
	i := 0
	for j, d := range a.deltas {
		for ; i < len(a.list) && a.list[i].mark.Seq <= d.mark.Seq; i++ {
			if m := a.list[i].mark; m.Format == format {
				at, have = max(at, m.Seq), true
			}
		}
		if have && d.mark.Format == format && d.from <= at && at <= d.mark.Seq {
			out[j], at = true, d.mark.Seq
		}
	}
	return out
}

// points are the marks of every state an audit can start from without
// folding, by sequence: the checkpoints and the ends of the deltas a
// checkpoint of format reaches (a.mu held).
func (a *auditCheckpoints) points(format string) []projector.AuditMark {
	out := make([]projector.AuditMark, 0, len(a.list)+len(a.deltas))
	for _, c := range a.list {
		out = append(out, c.mark)
	}
	for j, ok := range a.reached(format) {
		if ok {
			out = append(out, a.deltas[j].mark)
		}
	}
	slices.SortStableFunc(out, func(x, y projector.AuditMark) int { return cmpU64(x.Seq, y.Seq) })
	return slices.CompactFunc(out, func(x, y projector.AuditMark) bool { return x.Seq == y.Seq })
}
