package node_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	knowledgemodel "github.com/loredev/lore/projector/knowledge"
)

// backfilledWorkload is the bench workload with a share of its events
// given earlier times (backfilled), so "as of a time" is not a log prefix.
func backfilledWorkload(t testing.TB, n int, seed uint64) []*events.Event {
	t.Helper()
	g, err := benchkit.Workload{Seed: int64(seed), Loops: 16, Prefix: "audit"}.Generate(n)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, ev := range g.Events {
		if rng.IntN(8) == 0 { // up to a few hundred events back, some before the first
			ev.Time = ev.Time.Add(-time.Duration(rng.IntN(400)) * 10 * time.Millisecond)
		}
	}
	return g.Events
}

// withRefusedEvents puts among evs, every 97 events, a valid event one read
// model refuses after the others folded it (a pattern applied that the
// registry does not hold): poison for the fold of every model, which must
// leave no trace in any model.
func withRefusedEvents(t testing.TB, evs []*events.Event) []*events.Event {
	t.Helper()
	out := make([]*events.Event, 0, len(evs)+len(evs)/97)
	for i, ev := range evs {
		out = append(out, ev)
		if i%97 == 50 {
			r, err := events.New("pattern.applied/v1", ev.Project, "test", ev.Time,
				&events.PatternApplied{LoopID: "ralph-test-0123abcd", PatternID: fmt.Sprintf("pat-success-nowhere-%03d", i%1000), Success: true})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
	}
	return out
}

// fullFold is the reference: the whole log folded to the point asked for.
func fullFold(t *testing.T, n *node.Node, asOf *time.Time, atSeq uint64) string {
	t.Helper()
	d, _ := fullFoldModels(t, n, asOf, atSeq)
	return d
}

// fullFoldModels is fullFold's digest and each model's (by name).
func fullFoldModels(t *testing.T, n *node.Node, asOf *time.Time, atSeq uint64) (string, map[string]string) {
	t.Helper()
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true, CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := projector.ReplayOptions{UntilSeq: atSeq}
	if asOf != nil {
		o.UntilTime = *asOf
	}
	if _, err := projector.Replay(context.Background(), n.JS, st, n.Models(), o); err != nil {
		t.Fatal(err)
	}
	d, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	each := map[string]string{}
	for _, m := range n.Models() {
		if each[m.Name()], err = projector.ModelsDigest([]projector.Model{m}, st.Model); err != nil {
			t.Fatal(err)
		}
	}
	return d, each
}

// checkEachModelAlone audits each model on its own view (its first and
// only read folds it, with its fold set as of a time) and compares it with
// the model in the full fold.
func checkEachModelAlone(t *testing.T, n *node.Node, asOf *time.Time, atSeq uint64, want map[string]string) {
	t.Helper()
	for _, m := range n.Models() {
		v, release, err := n.At(context.Background(), asOf, atSeq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := projector.ModelsDigest([]projector.Model{m}, v.Model)
		together := node.AuditFoldedTogether(v)
		release()
		if err != nil {
			t.Fatal(err)
		}
		if got != want[m.Name()] {
			t.Fatalf("audit of %s alone as of %v at seq %d: digest %s, in the full fold %s", m.Name(), asOf, atSeq, got, want[m.Name()])
		}
		if together {
			t.Fatalf("audit of %s alone as of %v at seq %d folded every model: no event of the log shares its id with another", m.Name(), asOf, atSeq)
		}
	}
}

func derivedCount(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	s, err := n.JS.Stream(context.Background(), events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// waitFor polls cond until it holds (no deadline of its own: the test's).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAuditFromCheckpointsEqualsFullFold: audits at random sequences and
// times (with backfilled event times in the log) answer from checkpoints
// exactly what a fold of the whole log answers, announce nothing, and the
// checkpoints stay within their bound and a folder without a mark is
// removed on start.
func TestAuditFromCheckpointsEqualsFullFold(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := t.TempDir()
	stale := filepath.Join(data, node.AuditDir, "cp-00000000000000000042")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	const keep = 4
	n, err := node.Start(ctx, node.Config{DataDir: data, TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1},
		AuditCheckpointEvery: 150, AuditCheckpointKeep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- n.Run(runCtx) }()
	defer func() { stopRun(); <-runDone }()
	waitFor(t, "the audit checkpoints reloaded", n.AuditCheckpointsSettled)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a checkpoint folder without a mark survived the start: %v", err)
	}

	evs := withRefusedEvents(t, backfilledWorkload(t, 2000, 3))
	var last uint64
	retries := rand.New(rand.NewPCG(5, 9))
	for i := 0; i < len(evs); i += 250 {
		rs, err := n.Appender.AppendBatch(ctx, evs[i:min(i+250, len(evs))])
		if err != nil {
			t.Fatal(err)
		}
		last = rs[len(rs)-1].Seq
		// Retries past the server's duplicate window (published without
		// a message id) of events before or within this batch: the folds
		// pass them over, audits from a point after the first copy too.
		for range 3 {
			retry := *evs[retries.IntN(min(i+250, len(evs)))]
			msg, err := n.Appender.Prepare(&retry)
			if err != nil {
				t.Fatal(err)
			}
			msg.Header.Del(jetstream.MsgIDHeader)
			ack, err := n.JS.PublishMsg(ctx, msg)
			if err != nil {
				t.Fatal(err)
			}
			last = ack.Sequence
		}
		if err := n.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		// The newest within the live spacing of the batch's end: the
		// interval, or the mean gap the count bound keeps once it binds.
		waitFor(t, "an audit checkpoint of the batch", func() bool {
			cps := n.AuditCheckpoints()
			return len(cps) > 0 && cps[len(cps)-1].Seq+n.AuditCheckpointSpacing() > last
		})
	}
	// A point an audit starts from every interval (the deltas reach them
	// from the checkpoints), and no more checkpoints than the bound.
	cps := n.AuditCheckpoints()
	for i, c := range cps {
		if prev := uint64(0); i > 0 {
			prev = cps[i-1].Seq
			if c.Seq-prev > 150 {
				t.Fatalf("audit points %d and %d are more than an interval apart: %+v", prev, c.Seq, cps)
			}
		}
	}
	if bases := checkpointFolders(t, data); bases < 1 || bases > keep {
		t.Fatalf("%d audit checkpoint folders kept, want 1..%d", bases, keep)
	}
	// The projector stops (audits need only the log and the store): from
	// here on nothing but an audit could announce.
	stopRun()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	runDone <- nil
	announced := derivedCount(t, n)
	// The live store's duplicate index covers the log: audits answer
	// their id look-ups from it (projector.AuditIDs).
	if ids, err := n.Store.AuditIDs(0, last); err != nil || ids == nil {
		t.Fatalf("the live store's duplicate index does not cover the log: %v, %v", ids, err)
	}

	rng := rand.New(rand.NewPCG(11, 13))
	first, lastTime := evs[0].Time, evs[len(evs)-1].Time
	var fromCheckpoint, withDeltas, skippedBlocks int
	for i := 0; i < 24; i++ {
		var asOf *time.Time
		var atSeq uint64
		switch i % 3 {
		case 0:
			atSeq = 1 + rng.Uint64N(last)
		case 1:
			at := evs[rng.IntN(len(evs))].Time // on an event's time: the bound is inclusive
			if rng.IntN(2) == 0 {
				at = first.Add(time.Duration(rng.Int64N(int64(lastTime.Sub(first)))))
			}
			asOf = &at
		default:
			atSeq = 1 + rng.Uint64N(last)
			at := evs[rng.IntN(len(evs))].Time
			asOf = &at
		}
		want, each := fullFoldModels(t, n, asOf, atSeq)
		v, release, err := n.At(ctx, asOf, atSeq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := node.ViewDigest(v)
		together := node.AuditFoldedTogether(v)
		release()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("audit as of %v at seq %d: digest %s, full fold %s", asOf, atSeq, got, want)
		}
		if together {
			t.Fatalf("audit as of %v at seq %d folded every model together: no event of the log shares its id with another", asOf, atSeq)
		}
		if i == 1 || i == 5 { // as of a time, and at a sequence as of a time
			checkEachModelAlone(t, n, asOf, atSeq, each)
		}
		target := last
		if atSeq > 0 {
			target = atSeq
		}
		if v.Seq() != target {
			t.Fatalf("audit at seq %d answers at seq %d, want %d", atSeq, v.Seq(), target)
		}
		// How it was answered: from which checkpoint, over which ranges.
		from := n.AuditCheckpointFor(asOf, target)
		if from > 0 {
			fromCheckpoint++
		}
		if n.AuditDeltasFor(asOf, target) > 0 {
			withDeltas++
		}
		ranges, err := n.Store.AuditRanges(from, target, asOf)
		if err != nil {
			t.Fatal(err)
		}
		read := uint64(0)
		for _, r := range ranges {
			read += r.To - r.From + 1
		}
		if read < target-from {
			skippedBlocks++
		}
	}
	// The cross-loop folds of the copies read merge lists through a
	// filter of the live store's merge keys (the digests above hold with
	// it).
	if n.AuditMergeFilters() == 0 {
		t.Fatal("no audit's cross-loop fold was given the merge keys' filter")
	}
	if fromCheckpoint == 0 || withDeltas == 0 || skippedBlocks == 0 {
		t.Fatalf("audits started from a checkpoint %d times (%d with deltas applied) and skipped blocks %d times: the test exercised neither",
			fromCheckpoint, withDeltas, skippedBlocks)
	}
	// At the head of the log, or as of a time no event is later than, the
	// live read model is the answer (a snapshot of it: nothing folded);
	// one event short of either, it is not.
	latest := evs[0].Time
	for _, ev := range evs {
		if ev.Time.After(latest) {
			latest = ev.Time
		}
	}
	after, before := latest.Add(time.Hour), latest.Add(-time.Nanosecond)
	for _, c := range []struct {
		asOf  *time.Time
		atSeq uint64
		live  bool
	}{
		{nil, last, true}, {&latest, 0, true}, {&after, last, true},
		{nil, last - 1, false}, {&before, 0, false}, {&after, last - 1, false},
	} {
		target := last
		if c.atSeq > 0 {
			target = c.atSeq
		}
		if got := n.AnsweredLive(c.asOf, target); got != c.live {
			t.Errorf("audit as of %v at seq %d answered from the live read model: %v, want %v", c.asOf, c.atSeq, got, c.live)
		}
		want := fullFold(t, n, c.asOf, c.atSeq)
		v, release, err := n.At(ctx, c.asOf, c.atSeq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := node.ViewDigest(v)
		release()
		if err != nil || got != want || v.Seq() != target {
			t.Fatalf("audit as of %v at seq %d: digest %s at seq %d (%v), full fold %s at %d", c.asOf, c.atSeq, got, v.Seq(), err, want, target)
		}
	}
	if got := derivedCount(t, n); got != announced {
		t.Fatalf("audits announced: derived stream %d messages, was %d", got, announced)
	}
	if dirs := checkpointFolders(t, data); dirs > keep {
		t.Fatalf("%d folders under %s after the audits, want at most %d (copies removed)", dirs, node.AuditDir, keep)
	}
}

// checkpointFolders counts the folders under the audit folder of data
// (checkpoints, and copies an audit has not removed).
func checkpointFolders(t *testing.T, data string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(data, node.AuditDir))
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, e := range entries {
		if e.IsDir() {
			dirs++
		}
	}
	return dirs
}

// TestAuditCheckpointGapsFilled: where no delta reaches (here their tables
// were lost between two runs) the points an audit starts from are a
// checkpoint's alone; the node folds checkpoints into the gaps until none is
// wider than 9/8 of the interval, and each one (an audit at its sequence
// folds nothing) and audits between them answer what a fold of the whole
// log answers.
func TestAuditCheckpointGapsFilled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = 150
	data := t.TempDir()
	evs := backfilledWorkload(t, 2000, 9)
	first, stopFirst := auditNode(t, data, every, 0)
	last := ingest(t, first, evs, len(evs))
	stopFirst()
	lost, err := filepath.Glob(filepath.Join(data, node.AuditDir, "dl-*"))
	if err != nil || len(lost) == 0 {
		t.Fatalf("no audit delta written for %d events every %d (%v)", last, every, err)
	}
	for _, p := range lost {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	n, err := node.Start(ctx, node.Config{DataDir: data, TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1},
		AuditCheckpointEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- n.Run(runCtx) }()
	defer func() { stopRun(); <-runDone }()
	waitFor(t, "audit checkpoints settled", n.AuditCheckpointsSettled)
	prev := uint64(0)
	for _, c := range n.AuditCheckpoints() {
		if c.Seq-prev > every+every/8 {
			t.Fatalf("audit checkpoints %d and %d are more than 9/8 of an interval apart: %+v", prev, c.Seq, n.AuditCheckpoints())
		}
		prev = c.Seq
	}
	if last-prev >= every {
		t.Fatalf("the newest audit checkpoint %d is an interval or more behind %d", prev, last)
	}
	// The lost deltas left gaps: the checkpoints between were folded by
	// fills, which the node reports with their time.
	if fills, busy := n.AuditFills(); fills == 0 || busy <= 0 {
		t.Fatalf("gaps filled, yet the node reports %d fills taking %v", fills, busy)
	}
	stopRun()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	runDone <- nil

	check := func(asOf *time.Time, atSeq uint64) {
		t.Helper()
		want := fullFold(t, n, asOf, atSeq)
		v, release, err := n.At(ctx, asOf, atSeq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := node.ViewDigest(v)
		together := node.AuditFoldedTogether(v)
		release()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("audit as of %v at seq %d: digest %s, full fold %s", asOf, atSeq, got, want)
		}
		if together {
			t.Fatalf("audit as of %v at seq %d folded every model together: no event of the log shares its id with another", asOf, atSeq)
		}
	}
	cps := n.AuditCheckpoints()
	for _, c := range cps {
		if !c.Complete {
			t.Fatalf("checkpoint at %d has an incomplete time index", c.Seq)
		}
		check(nil, c.Seq)
	}
	rng := rand.New(rand.NewPCG(5, 17))
	for i := 0; i < 8; i++ {
		at := evs[rng.IntN(len(evs))].Time
		check(&at, 0)
		check(nil, 1+rng.Uint64N(last))
	}
}

// TestAuditAsOfFoldsEveryModelWhereAnIDIsShared: a lesson published
// without a message id carries the id of a loop's completion appended
// before it. Live, the completion folds and the lesson is its duplicate; as
// of a time before the loop's start the completion is refused and the
// lesson folds. The knowledge model's fold set does not fold loops,
// so its audit as of that time folds every model; as of a time before
// both, nothing is shared and the knowledge model folds alone.
func TestAuditAsOfFoldsEveryModelWhereAnIDIsShared(t *testing.T) {
	n, stop := auditNode(t, t.TempDir(), 150, 0)
	defer stop()
	ctx := t.Context()
	at := benchkit.Epoch
	var evs []*events.Event
	add := func(typ string, sec int, p events.Payload) *events.Event {
		ev, err := events.New(typ, "p", "test", at.Add(time.Duration(sec)*time.Second), p)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		return ev
	}
	add("knowledge.submitted/v1", 1, &events.KnowledgeSubmitted{Lesson: "Run the migrations before the tests", Category: "testing"})
	add("loop.started/v1", 20, &events.LoopStarted{LoopID: "ralph-late-0123abcd", Task: "fix the build"})
	it := add("loop.completed/v1", 5, &events.LoopCompleted{LoopID: "ralph-late-0123abcd", Outcome: "success", Iterations: 1})
	ingest(t, n, evs, len(evs))
	shared, err := events.New("knowledge.submitted/v1", "p", "test", at.Add(6*time.Second),
		&events.KnowledgeSubmitted{Lesson: "Pin the toolchain in the build image", Category: "tooling"})
	if err != nil {
		t.Fatal(err)
	}
	shared.ID = it.ID
	msg, err := n.Appender.Prepare(shared)
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Del(jetstream.MsgIDHeader) // the server would drop it as a duplicate
	if _, err := n.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	evs = evs[:0]
	add("knowledge.submitted/v1", 7, &events.KnowledgeSubmitted{Lesson: "Cache the module downloads in CI", Category: "tooling"})
	add("knowledge.submitted/v1", 40, &events.KnowledgeSubmitted{Lesson: "Run the linters before pushing", Category: "tooling"})
	ingest(t, n, evs, len(evs))

	var knowledge projector.Model
	for _, m := range n.Models() {
		if m.Name() == "knowledge" {
			knowledge = m
		}
	}
	for _, c := range []struct {
		sec      int
		together bool
	}{{10, true}, {30, true}, {3, false}} {
		asOf := at.Add(time.Duration(c.sec) * time.Second)
		_, want := fullFoldModels(t, n, &asOf, 0)
		v, release, err := n.At(ctx, &asOf, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := projector.ModelsDigest([]projector.Model{knowledge}, v.Model)
		together := node.AuditFoldedTogether(v)
		release()
		if err != nil {
			t.Fatal(err)
		}
		if got != want["knowledge"] {
			t.Errorf("knowledge audited as of +%ds: digest %s, in the full fold %s", c.sec, got, want["knowledge"])
		}
		if together != c.together {
			t.Errorf("knowledge audited as of +%ds folded every model: %v, want %v", c.sec, together, c.together)
		}
	}
	// The case tests something: the lesson sharing the id folds as of
	// +10s and is a duplicate as of +30s.
	for sec, want := range map[int]bool{10: true, 30: false} {
		asOf := at.Add(time.Duration(sec) * time.Second)
		v, release, err := n.At(ctx, &asOf, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, ok, err := knowledgemodel.DecisionOf(v.Model("knowledge"), shared.ID)
		release()
		if err != nil || ok != want {
			t.Errorf("as of +%ds the lesson sharing the completion's id was decided on: %v (%v), want %v", sec, ok, err, want)
		}
	}
}
