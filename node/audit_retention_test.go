package node_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

// auditNode starts a node on data with audit checkpoints every events and
// runs it; stop stops the run and closes the node.
func auditNode(t *testing.T, data string, every int, disk int64) (n *node.Node, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.Start(ctx, node.Config{DataDir: data, TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1},
		AuditCheckpointEvery: every, AuditCheckpointDisk: disk})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	return n, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		n.Close()
	}
}

// ingest appends evs in batches and waits until they are projected and the
// audit checkpoints settled; it returns the last sequence.
func ingest(t *testing.T, n *node.Node, evs []*events.Event, batch int) uint64 {
	t.Helper()
	ctx := t.Context()
	var last uint64
	for i := 0; i < len(evs); i += batch {
		rs, err := n.Appender.AppendBatch(ctx, evs[i:min(i+batch, len(evs))])
		if err != nil {
			t.Fatal(err)
		}
		last = rs[len(rs)-1].Seq
	}
	if err := n.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "audit checkpoints settled", n.AuditCheckpointsSettled)
	return last
}

// ingestPolled appends evs a batch at a time and waits after each batch
// for its fold and for the live poll's checkpoint of it (the newest within
// the live spacing of the batch's end) and its deltas: each batch end is
// looked at by the poll, as on a log taking writes slower than the fold.
// It returns the last sequence and the widest spacing the live poll had
// after a batch.
func ingestPolled(t *testing.T, n *node.Node, evs []*events.Event, batch int) (last, widest uint64) {
	t.Helper()
	for i := 0; i < len(evs); i += batch {
		rs, err := n.Appender.AppendBatch(t.Context(), evs[i:min(i+batch, len(evs))])
		if err != nil {
			t.Fatal(err)
		}
		last = rs[len(rs)-1].Seq
		if err := n.WaitFor(t.Context(), last); err != nil {
			t.Fatal(err)
		}
		// The live store compacted whole after each batch: the disk the
		// checkpoints hold beyond it (what their budget bounds) is then
		// what they hold alone, the same in every run, instead of what
		// the compactions had rewritten by then (later on a busy
		// machine, and the budget bound only after the log's end).
		if err := n.Store.DB().Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
			t.Fatal(err)
		}
		// The newest checkpoint within the live spacing of the batch's
		// end, and the deltas to it written.
		waitFor(t, "the batch's audit checkpoint", n.AuditCheckpointsSettled)
		widest = max(widest, n.AuditCheckpointSpacing())
	}
	return last, widest
}

// checkAudits compares audits at random points with full folds; it returns
// how many started from a checkpoint.
func checkAudits(t *testing.T, n *node.Node, evs []*events.Event, last uint64, seed uint64, count int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	fromCheckpoint := 0
	for i := 0; i < count; i++ {
		var asOf *time.Time
		var atSeq uint64
		if i%3 != 1 {
			atSeq = 1 + rng.Uint64N(last)
		}
		if i%3 != 0 {
			at := evs[rng.IntN(len(evs))].Time
			asOf = &at
		}
		want := fullFold(t, n, asOf, atSeq)
		v, release, err := n.At(t.Context(), asOf, atSeq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := node.ViewDigest(v)
		release()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("audit as of %v at seq %d: digest %s, full fold %s", asOf, atSeq, got, want)
		}
		target := last
		if atSeq > 0 {
			target = atSeq
		}
		from := n.AuditCheckpointFor(asOf, target)
		if from > 0 {
			fromCheckpoint++
		}
	}
	return fromCheckpoint
}

// TestAuditCheckpointsSurviveRestart: the checkpoints of a node are listed
// again when it restarts on the same data (and audits from them answer
// what a full fold answers), leftovers that are not checkpoints are
// removed, and checkpoints of another log are never used.
func TestAuditCheckpointsSurviveRestart(t *testing.T) {
	const every = 150
	data := t.TempDir()
	evs := backfilledWorkload(t, 1500, 21)
	n, stop := auditNode(t, data, every, 0)
	last := ingest(t, n, evs, 250)
	before := n.AuditCheckpoints()
	stop()
	if len(before) < 5 {
		t.Fatalf("%d audit checkpoints for %d events every %d", len(before), last, every)
	}
	dir := filepath.Join(data, node.AuditDir)
	leftovers := []string{filepath.Join(dir, "tmp-99"), filepath.Join(dir, "cp-00000000000000000007")}
	for _, p := range leftovers {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The same folder under another data folder: another log, created at
	// another time.
	other := t.TempDir()
	if err := os.CopyFS(filepath.Join(other, node.AuditDir), os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}

	n, stop = auditNode(t, data, every, 0)
	defer stop()
	waitFor(t, "audit checkpoints reloaded", n.AuditCheckpointsSettled)
	after := n.AuditCheckpoints()
	if len(after) != len(before) {
		t.Fatalf("after a restart %d audit checkpoints, before %d: %+v, %+v", len(after), len(before), after, before)
	}
	for i := range before {
		if !after[i].MaxTime.Equal(before[i].MaxTime) || after[i].Seq != before[i].Seq || after[i].Format != before[i].Format || after[i].Complete != before[i].Complete {
			t.Fatalf("checkpoint %d: %+v after a restart, %+v before", i, after[i], before[i])
		}
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s survived the restart: %v", p, err)
		}
	}
	if got := checkAudits(t, n, evs, last, 5, 9); got == 0 {
		t.Fatal("no audit started from a reloaded checkpoint")
	}

	o, ostop := auditNode(t, other, every, 0)
	defer ostop()
	waitFor(t, "audit checkpoints of another log looked at", o.AuditCheckpointsSettled)
	if cps := o.AuditCheckpoints(); len(cps) != 0 {
		t.Fatalf("a node with an empty log lists the audit checkpoints of another log: %+v", cps)
	}
	entries, err := os.ReadDir(filepath.Join(other, node.AuditDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Fatalf("checkpoint folder %s of another log kept", e.Name())
		}
	}
}

// TestAuditCheckpointDiskBudget: with a disk budget the checkpoints and
// deltas hold at most that much beyond the live store, fewer checkpoints
// are kept and taken than without it (the live poll spaces them by the gap
// the budget keeps), the newest is kept, the deltas still give a point
// every interval, and audits still answer what a full fold answers.
func TestAuditCheckpointDiskBudget(t *testing.T) {
	const every = 10
	base := every * node.AuditBaseEvery
	evs := backfilledWorkload(t, 2000, 23)
	// The unbounded run gives the disk the checkpoints and deltas hold.
	freeData := t.TempDir()
	free, stop := auditNode(t, freeData, every, -1)
	last, _ := ingestPolled(t, free, evs, base)
	bases := checkpointFolders(t, freeData)
	disk := free.AuditCheckpointDisk()
	takenFree := free.AuditCheckpointsTaken()
	stop()
	if bases < 8 || disk <= 0 {
		t.Fatalf("without a budget %d checkpoints holding %d bytes for %d events every %d", bases, disk, last, base)
	}
	budget := disk / 2
	data := t.TempDir()
	n, stop := auditNode(t, data, every, budget)
	defer stop()
	got, widest := ingestPolled(t, n, evs, base)
	if got != last {
		t.Fatalf("log ends at %d, the unbounded one at %d", got, last)
	}
	// Retention runs after each checkpoint and delta and every few seconds
	// (the live store's compactions change what the checkpoints share with
	// it): the budget holds once it has run, unless the newest checkpoint
	// alone holds more (it is never dropped; how much of it the live store
	// has compacted away since depends on the compactions' timing).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		held := n.AuditCheckpointDisk()
		if held <= budget || checkpointFolders(t, data) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d audit checkpoints hold %d bytes beyond the live store, budget %d", checkpointFolders(t, data), held, budget)
		}
	}
	kept := checkpointFolders(t, data)
	if kept == 0 || kept >= bases {
		t.Fatalf("%d audit checkpoints kept within %d bytes, %d without a budget", kept, budget, bases)
	}
	// The live poll spaced its checkpoints by the gap the budget keeps
	// once it bound (during the ingestion: the live store compacted after
	// each batch), fewer taken than without a budget, and the newest
	// within that spacing of the log's end. (Its spacing now may be the
	// interval again: a retention that finds room for one more checkpoint
	// sets it back.)
	t.Logf("widest spacing %d, now %d, taken %d, without a budget %d; kept %d of %d",
		widest, n.AuditCheckpointSpacing(), n.AuditCheckpointsTaken(), takenFree, kept, bases)
	if taken := n.AuditCheckpointsTaken(); widest <= uint64(base) || taken >= takenFree {
		t.Fatalf("within the budget: widest spacing %d (checkpoints every %d), %d live checkpoints taken against %d without a budget",
			widest, base, taken, takenFree)
	}
	cps := n.AuditCheckpoints()
	if newest := cps[len(cps)-1].Seq; newest+every <= last {
		t.Fatalf("the newest audit point %d is an interval behind the log at %d", newest, last)
	}
	checkAudits(t, n, evs, last, 7, 6)
}

// TestLiveSpacing: the live poll's spacing is the interval until the bounds
// leave no room, then the mean gap the kept checkpoints cover, never less
// than the interval.
func TestLiveSpacing(t *testing.T) {
	for _, c := range []struct {
		every, newest uint64
		kept          int
		full          bool
		want          uint64
	}{
		{2000, 0, 0, false, 2000},
		{2000, 0, 0, true, 2000},            // nothing kept yet
		{2000, 80_000, 40, false, 2000},     // room left: the interval
		{2000, 80_000, 40, true, 2000},      // full, gaps of the interval
		{2000, 1_100_000, 39, true, 28_205}, // full: the kept gap
		{2000, 1_100_000, 39, false, 2000},  // room again (a compaction freed disk)
		{100, 150, 3, true, 100},            // never below the interval
	} {
		if got := node.LiveSpacing(c.every, c.newest, c.kept, c.full); got != c.want {
			t.Errorf("liveSpacing(%d, %d, %d, %v) = %d, want %d", c.every, c.newest, c.kept, c.full, got, c.want)
		}
	}
}

// TestThinOut: the checkpoint dropped is the one whose neighbours are
// closest, never the newest nor, of three or more, the oldest (the points
// below the next one are reached from it alone), however close the oldest
// sits to its neighbour.
func TestThinOut(t *testing.T) {
	for _, c := range []struct {
		seqs []uint64
		want int
	}{
		{[]uint64{10, 20}, 0},
		{[]uint64{10, 20, 30}, 1},
		{[]uint64{1000, 1100, 33000, 65000}, 1},
		{[]uint64{1000, 33000, 34000, 35000, 97000}, 2},
		{[]uint64{1000, 33000, 65000, 66000, 67000}, 3},
		{[]uint64{5, 6, 7, 100, 200, 300}, 1},
	} {
		if got := node.ThinOut(c.seqs...); got != c.want {
			t.Errorf("thinOut(%v) = %d, want %d", c.seqs, got, c.want)
		}
	}
}
