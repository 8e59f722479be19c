package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/snapshots"
	"github.com/loredev/lore/test/natstest"
)

// promoted builds a manual promotion of a new pattern: the learning model
// announces it as pattern.maturity_changed/v1 (candidate → proven).
func promoted(t testing.TB, pattern string, at time.Time) *events.Event {
	t.Helper()
	ev, err := events.New("pattern.promoted/v1", "default", "test", at, &events.PatternPromoted{PatternID: pattern, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// announcement is one message of the derived stream.
type announcement struct {
	MsgID, Type, Pattern, To string
	Cause                    string
}

// announcements reads the whole derived stream.
func announcements(t testing.TB, js jetstream.JetStream) []announcement {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []announcement
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("derived seq %d: %v", seq, err)
		}
		ev, err := events.Decode(m.Data)
		if err != nil {
			t.Fatalf("derived seq %d: %v", seq, err)
		}
		a := announcement{MsgID: m.Header.Get(jetstream.MsgIDHeader), Type: ev.Type, Cause: m.Header.Get(projector.HeaderCauseSeq)}
		var d struct {
			PatternID string `json:"pattern_id"`
			To        string `json:"to"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		a.Pattern, a.To = d.PatternID, d.To
		out = append(out, a)
	}
	return out
}

// checkAnnouncedOnce asserts that the group announced each promotion of
// patterns exactly once and that no message id was stored twice.
func checkAnnouncedOnce(t testing.TB, js jetstream.JetStream, patterns []string) {
	t.Helper()
	ids := map[string]int{}
	proven := map[string]int{}
	for _, a := range announcements(t, js) {
		ids[a.MsgID]++
		if a.Type == "pattern.maturity_changed/v1" && a.To == "proven" {
			proven[a.Pattern]++
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("announcement %s stored %d times", id, n)
		}
	}
	for _, p := range patterns {
		if proven[p] != 1 {
			t.Errorf("promotion of %s announced %d times, want once for the group", p, proven[p])
		}
	}
}

func waitSeq(t testing.TB, n *node.Node, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func storeDigest(t testing.TB, n *node.Node) string {
	t.Helper()
	d, err := n.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// appendMix appends n outcomes with a promotion of a new pattern every
// tenth event and returns the promoted patterns.
func appendMix(t testing.TB, a *events.Appender, prefix string, from, n int) []string {
	t.Helper()
	var evs []*events.Event
	var pats []string
	for i := from; i < from+n; i++ {
		at := day0.Add(time.Duration(i) * time.Minute)
		if i%10 == 9 {
			p := fmt.Sprintf("%s-pat-%d", prefix, i)
			pats = append(pats, p)
			evs = append(evs, promoted(t, p, at))
			continue
		}
		evs = append(evs, outcome(t, "default", fmt.Sprintf("bd-%d", i%13), at, i%4 != 0))
	}
	if _, err := a.AppendBatch(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	return pats
}

// TestNewReplicaStartsFromSnapshot: a replica started on an empty data
// folder restores the newest snapshot, folds only the tail, ends with the
// same read model as the replica it came from, and announces nothing twice.
func TestNewReplicaStartsFromSnapshot(t *testing.T) {
	a := startNode(t, node.Config{Replica: "lore-a"})
	runNode(t, a)
	pats := appendMix(t, a.Appender, "p", 0, 300)
	last, _ := lastSeq(t, a.JS, events.LogStream)
	waitSeq(t, a, last)
	s, err := a.Snapshot(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != last || s.Replica != "lore-a" {
		t.Fatalf("snapshot %+v, want last_seq %d from lore-a", s, last)
	}
	pats = append(pats, appendMix(t, a.Appender, "p", 300, 100)...) // the tail
	// The group folds and announces the tail before b joins: b's fold of
	// it must stay silent.
	tail, _ := lastSeq(t, a.JS, events.LogStream)
	waitSeq(t, a, tail)
	waitAnnounced(t, a.JS, len(pats))

	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Replica: "lore-b"})
	got, ok, err := b.RestoreSnapshot(context.Background())
	if err != nil || !ok {
		t.Fatalf("restore: ok=%v err=%v", ok, err)
	}
	if got.Name != s.Name || b.Runtime.Seq() != s.LastSeq {
		t.Fatalf("restored %s at seq %d, want %s at %d", got.Name, b.Runtime.Seq(), s.Name, s.LastSeq)
	}
	// It announces nothing the group announced: folds up to the newest
	// announcement's cause are silent.
	announced, err := projector.LastAnnouncedCause(context.Background(), a.JS)
	if err != nil {
		t.Fatal(err)
	}
	if lf, _ := b.Store.LiveFrom(); announced <= s.LastSeq || lf < announced {
		t.Fatalf("restored live-from %d, newest announcement caused by %d (snapshot at %d)", lf, announced, s.LastSeq)
	}
	if again, ok, err := b.RestoreSnapshot(context.Background()); err != nil || ok {
		t.Fatalf("a second restore over a read model must do nothing: %+v ok=%v err=%v", again, ok, err)
	}
	runNode(t, b)
	// Both replicas fold what comes next and announce it once for the group.
	pats = append(pats, appendMix(t, a.Appender, "p", 400, 100)...)
	last, msgs := lastSeq(t, a.JS, events.LogStream)
	waitSeq(t, a, last)
	waitSeq(t, b, last)
	if da, db := storeDigest(t, a), storeDigest(t, b); da != db {
		t.Fatalf("replica from snapshot differs: %s vs %s", db, da)
	}
	if want, _ := rebuildDigest(t, a.JS); want != storeDigest(t, b) {
		t.Fatal("replica from snapshot differs from a clean rebuild")
	}
	if st, _ := eventlog.Read(b.Store.Model(eventlog.Name)); st.Total != msgs {
		t.Fatalf("replica from snapshot counts %d events, want %d", st.Total, msgs)
	}
	waitAnnounced(t, a.JS, len(pats))
	checkAnnouncedOnce(t, a.JS, pats)
}

// renamed is the event log model under another version: a read-model
// format no stored snapshot has.
type renamed struct{ eventlog.Model }

func (renamed) Version() int { return 42 }

// TestSnapshotOfAnotherFormatIsIgnored: a replica whose models changed
// format ignores older snapshots and rebuilds from the whole log.
func TestSnapshotOfAnotherFormatIsIgnored(t *testing.T) {
	a := startNode(t, node.Config{Models: []projector.Model{eventlog.Model{}}})
	runNode(t, a)
	appendMix(t, a.Appender, "q", 0, 50)
	last, _ := lastSeq(t, a.JS, events.LogStream)
	waitSeq(t, a, last)
	if _, err := a.Snapshot(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Replica: "lore-b", Models: []projector.Model{renamed{}}})
	if _, ok, err := b.RestoreSnapshot(context.Background()); err != nil || ok {
		t.Fatalf("restore of another format: ok=%v err=%v, want ignored", ok, err)
	}
	runNode(t, b)
	waitSeq(t, b, last)
	if st, _ := eventlog.Read(b.Store.Model(eventlog.Name)); st.Total != last {
		t.Fatalf("rebuild counts %d events, want %d", st.Total, last)
	}
}

// TestSnapshotRequestsAndPeriodicSnapshots: `lore snapshot create` reaches
// a running replica over NATS (any, or by name); periodic snapshots skip
// while the log is idle.
func TestSnapshotRequestsAndPeriodicSnapshots(t *testing.T) {
	a := startNode(t, node.Config{Replica: "lore-a", Models: []projector.Model{eventlog.Model{}}})
	runNode(t, a)
	appendMix(t, a.Appender, "r", 0, 30)
	last, _ := lastSeq(t, a.JS, events.LogStream)
	waitSeq(t, a, last)
	stop, err := a.ServeSnapshots(2)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, subj := range []string{node.SnapshotSubject, node.SnapshotSubject + ".lore-a"} {
		m, err := a.NC.Request(subj, nil, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		var rep node.SnapshotReply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Error != "" || rep.Snapshot == nil || rep.Snapshot.LastSeq != last {
			t.Fatalf("%s: reply %s", subj, m.Data)
		}
	}
	if _, err := a.NC.Request(node.SnapshotSubject+".nobody", nil, time.Second); err == nil {
		t.Fatal("a request to an unknown replica was answered")
	}

	// Periodic snapshots: the log is idle and a snapshot at its sequence
	// exists, so none is added.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.SnapshotEvery(ctx, 20*time.Millisecond, 2) }()
	time.Sleep(200 * time.Millisecond)
	ss, err := snapshots.List(context.Background(), a.JS, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d snapshots while idle, want the 2 requested", len(ss))
	}
	// New events: the next period stores one at the new sequence, and
	// retention keeps 2.
	appendMix(t, a.Appender, "r", 30, 5)
	last, _ = lastSeq(t, a.JS, events.LogStream)
	natstest.WaitFor(t, 20*time.Second, func() error {
		ss, err := snapshots.List(context.Background(), a.JS, snapshots.Options{})
		if err != nil {
			return err
		}
		if len(ss) == 0 || ss[0].LastSeq != last {
			return fmt.Errorf("newest snapshot %+v, want seq %d", ss, last)
		}
		if len(ss) != 2 {
			return fmt.Errorf("%d snapshots kept, want 2", len(ss))
		}
		return nil
	})
	cancel()
	<-done
	for _, s := range ss {
		if !strings.HasPrefix(s.Name, "seq-") {
			t.Fatalf("object %q is not a snapshot name", s.Name)
		}
	}
}
