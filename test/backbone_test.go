package test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/test/natstest"
)

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// outcome builds a valid outcome event of bead b at time t.
func outcome(t testing.TB, project, bead string, at time.Time, success bool) *events.Event {
	t.Helper()
	ev, err := events.New("outcome.recorded/v1", project, "test", at, &events.OutcomeRecorded{
		BeadID: bead, DurationMs: int64(rand.IntN(3_600_000)), RetryCount: rand.IntN(3), Success: success,
		Criteria: []string{"type_safe", "small_diff"}, Strategy: "file-based"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func startNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.NatsURL == "" {
		cfg.Embedded.Port = -1
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = -1
	}
	if cfg.Logger == nil && os.Getenv("LORE_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", cfg.Replica)
	}
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

// runNode runs n's projector until the test ends.
func runNode(t testing.TB, n *node.Node) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func lastSeq(t testing.TB, js jetstream.JetStream, stream string) (uint64, uint64) {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq, info.State.Msgs
}

// waitProgress waits until the projector's durable consumer acknowledged
// beyond seq (or the time is up: the log may be fully projected already).
func waitProgress(t testing.TB, js jetstream.JetStream, seq uint64, total time.Duration) {
	t.Helper()
	deadline := time.Now().Add(total)
	for time.Now().Before(deadline) {
		c, err := js.Consumer(context.Background(), events.LogStream, "lore-projector")
		if err == nil {
			if info, err := c.Info(context.Background()); err == nil && info.AckFloor.Stream > seq {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func rebuildDigest(t testing.TB, js jetstream.JetStream) (string, eventlog.Stats) {
	t.Helper()
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := projector.Replay(context.Background(), js, st, app.Models(), projector.ReplayOptions{}); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	d, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Read(st.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

// TestConcurrentWritersWithCrashingProjector: 8 writers append 20,000
// events with 5% re-sent duplicates while a projector process is SIGKILLed
// 20 times at random points; the final read model counts every unique event
// once and is byte-for-byte what a clean rebuild produces.
func TestConcurrentWritersWithCrashingProjector(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	srv := natstest.Start(t)
	url := srv.ClientURL()
	_, js := natstest.Connect(t, url)
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()

	const writers, perWriter, kills = 8, 2500, 20
	var wg sync.WaitGroup
	var dupMu sync.Mutex
	dups := 0
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := events.NewAppender(js)
			var sent []*events.Event
			for i := 0; i < perWriter; i += 100 {
				batch := make([]*events.Event, 0, 110)
				for j := range 100 {
					at := day0.Add(time.Duration(w*perWriter+i+j) * time.Minute)
					batch = append(batch, outcome(t, fmt.Sprintf("p%d", w%3), fmt.Sprintf("bd-%d.%d", w, (i+j)%50), at, (i+j)%4 != 0))
				}
				for j := 0; j < 5 && len(sent) > 0; j++ { // 5% duplicates: re-send earlier events, same ids
					old := *sent[rand.IntN(len(sent))]
					batch = append(batch, &old)
				}
				res, err := app.AppendBatch(context.Background(), batch)
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				n := 0
				for _, r := range res {
					if r.Duplicate {
						n++
					}
				}
				dupMu.Lock()
				dups += n
				dupMu.Unlock()
				sent = append(sent, batch[:100]...)
				time.Sleep(time.Duration(200+rand.IntN(400)) * time.Millisecond) // spread the load over the kills
			}
		}()
	}
	// Kill a projector process at random points while the writers run.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var lastCp uint64
	advanced := 0
	for k := range kills {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=1", envURL+"="+url, envDir+"="+dataDir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the child has committed past the last checkpoint (its
		// consumer's ack floor moves after each commit), at a random point.
		waitProgress(t, js, lastCp, 10*time.Second)
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if s := stderr.String(); s != "" {
			t.Logf("kill %d: child stderr: %s", k, s)
		}
		st, err := projector.OpenStore(filepath.Join(dataDir, "pebble"), projector.StoreOptions{})
		if err != nil {
			t.Logf("kill %d: open store: %v", k, err)
			continue // the first child may die before creating the store
		}
		cp, _ := st.Checkpoint()
		st.Close()
		if cp > lastCp {
			advanced++
		}
		lastCp = cp
	}
	wg.Wait()
	if advanced < kills/4 {
		t.Fatalf("the projector progressed between only %d of %d kills: the kills did not interrupt folding", advanced, kills)
	}
	if dups == 0 {
		t.Fatal("no duplicate was re-sent")
	}
	last, msgs := lastSeq(t, js, events.LogStream)
	if msgs != writers*perWriter {
		t.Fatalf("stream holds %d events, want %d unique (duplicates must not be stored)", msgs, writers*perWriter)
	}

	// The last projector runs to the end of the log.
	n := startNode(t, node.Config{DataDir: dataDir, NatsURL: url})
	runNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	live, err := eventlog.Read(n.Store.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	if live.Total != writers*perWriter {
		t.Fatalf("read model counts %d events, want %d", live.Total, writers*perWriter)
	}
	got, err := n.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, clean := rebuildDigest(t, js)
	if clean.Chain != live.Chain {
		t.Fatalf("event chain differs from a clean rebuild:\nlive  %s\nclean %s", live.Chain, clean.Chain)
	}
	if got != want {
		t.Fatalf("read model differs from a clean rebuild: %s vs %s", got, want)
	}
	t.Logf("%d events (+%d duplicates refused), %d projector kills (%d after progress), digest %s", msgs, dups, kills, advanced, got[:16])
}

// TestPoisonEventsGoToDeadLetters: a malformed event published straight to
// the subject with a plain NATS client, and a valid event a fold refuses
// (found by the model's own lane, after the other models folded it), are
// dead-lettered with their reasons, nothing of them stays in any model,
// and the projector moves on.
func TestPoisonEventsGoToDeadLetters(t *testing.T) {
	n := startNode(t, node.Config{})
	runNode(t, n)
	nc, js := natstest.Connect(t, n.ClientURL())
	subj := events.AggregateSubject("default", "bead", "bd-1")
	if _, err := js.Publish(context.Background(), subj, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	bad := `{"id":"x1","type":"outcome.recorded/v1","time":"2026-01-01T00:00:00Z","project":"default","data":{"bead_id":"bd-1","duration_ms":-3,"retry_count":0,"success":true}}`
	if err := nc.Publish(subj, []byte(bad)); err != nil { // core publish: captured by the stream
		t.Fatal(err)
	}
	refused, err := events.New("pattern.applied/v1", "default", "test", day0,
		&events.PatternApplied{LoopID: "ralph-test-0123abcd", PatternID: "pat-success-nowhere-001", Success: true})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := n.Appender.Append(context.Background(), refused)
	if err != nil {
		t.Fatal(err)
	}
	good := outcome(t, "default", "bd-1", day0, true)
	r, err := n.Appender.Append(context.Background(), good)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, r.Seq); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Read(n.Store.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 1 {
		t.Fatalf("folded %d events, want only the good one", s.Total)
	}
	st, err := js.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 10*time.Second, func() error {
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 3 {
			return fmt.Errorf("dead letters: %d, want 3", info.State.Msgs)
		}
		return nil
	})
	// The core publish may land before or after the appended events: find
	// each dead letter by its reason.
	found := map[string]bool{}
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		reason := m.Header.Get(projector.HeaderReason)
		switch {
		case strings.Contains(reason, "envelope"), strings.Contains(reason, "data.duration_ms"):
			if m.Header.Get(projector.HeaderSubject) != subj {
				t.Errorf("dead letter %d: original subject %q", seq, m.Header.Get(projector.HeaderSubject))
			}
		case strings.Contains(reason, "unknown pattern"):
			if cause := m.Header.Get(projector.HeaderCauseSeq); cause != strconv.FormatUint(rr.Seq, 10) {
				t.Errorf("dead letter %d: cause %s, want the refused event's seq %d", seq, cause, rr.Seq)
			}
		default:
			t.Errorf("dead letter %d: unexpected reason %q", seq, reason)
		}
		for _, want := range []string{"envelope", "data.duration_ms", "unknown pattern"} {
			if strings.Contains(reason, want) {
				found[want] = true
			}
		}
	}
	if len(found) != 3 {
		t.Errorf("dead letters name %v, want the envelope, data.duration_ms and the unknown pattern", found)
	}
	if n.Runtime.Poisoned() != 3 {
		t.Fatalf("runtime counted %d poison events", n.Runtime.Poisoned())
	}
}

// TestReplayToSequenceAndTime: replay up to a sequence or a time gives the
// state at that point.
func TestReplayToSequenceAndTime(t *testing.T) {
	n := startNode(t, node.Config{})
	var evs []*events.Event
	for i := range 100 {
		evs = append(evs, outcome(t, "default", fmt.Sprintf("bd-%d", i%7), day0.AddDate(0, 0, i), i%3 != 0))
	}
	if _, err := n.Appender.AppendBatch(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	replay := func(o projector.ReplayOptions) eventlog.Stats {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := projector.Replay(context.Background(), n.JS, st, app.Models(), o); err != nil {
			t.Fatal(err)
		}
		s, err := eventlog.Read(st.Model(eventlog.Name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := replay(projector.ReplayOptions{UntilSeq: 40}); s.Total != 40 {
		t.Errorf("until seq 40: %d events", s.Total)
	}
	s := replay(projector.ReplayOptions{UntilTime: day0.AddDate(0, 0, 60)})
	if s.Total != 61 || s.LastTime != day0.AddDate(0, 0, 60).Format(time.RFC3339Nano) {
		t.Errorf("until day 60: %d events, last %s", s.Total, s.LastTime)
	}
	// The audit view of the API folds the same way.
	asOf := day0.AddDate(0, 0, 9)
	v, release, err := n.At(context.Background(), &asOf, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if s, _ := eventlog.Read(v.Model(eventlog.Name)); s.Total != 10 {
		t.Errorf("as of day 9: %d events", s.Total)
	}
}

// TestAppendRefusesInvalidEvents: the error names the field and nothing
// reaches the stream.
func TestAppendRefusesInvalidEvents(t *testing.T) {
	n := startNode(t, node.Config{})
	cases := []struct {
		name, typ, data, field string
	}{
		{"negative duration", "outcome.recorded/v1", `{"bead_id":"b","duration_ms":-1,"retry_count":0,"success":true}`, "data.duration_ms"},
		{"missing field", "outcome.recorded/v1", `{"bead_id":"b","retry_count":0,"success":true}`, "data.duration_ms"},
		{"unknown error type", "error.recorded/v1", `{"bead_id":"b","error_type":"cosmic","message":"m"}`, "data.error_type"},
		{"unknown field", "error.recorded/v1", `{"bead_id":"b","error_type":"timeout","message":"m","colour":1}`, "data.colour"},
		{"unknown type", "outcome.guessed/v1", `{}`, "type"},
		{"unversioned type", "outcome.recorded", `{}`, "type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &events.Event{Type: c.typ, Data: []byte(c.data), Time: day0}
			_, err := n.Appender.Append(context.Background(), ev)
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", c.field)) {
				t.Fatalf("error %q does not name field %q", err, c.field)
			}
		})
	}
	if _, msgs := lastSeq(t, n.JS, events.LogStream); msgs != 0 {
		t.Fatalf("%d invalid events reached the stream", msgs)
	}
}

// TestAppendIsIdempotentAndConditional: re-sending an id changes nothing;
// an append expecting another last sequence is refused.
func TestAppendIsIdempotentAndConditional(t *testing.T) {
	n := startNode(t, node.Config{})
	ctx := context.Background()
	ev := outcome(t, "default", "bd-123.1", day0, true)
	r1, err := n.Appender.Append(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	again := *ev
	r2, err := n.Appender.Append(ctx, &again)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Duplicate || r2.Seq != r1.Seq {
		t.Fatalf("re-send: %+v, first %+v", r2, r1)
	}
	if r1.Subject != "lore.ev.default.bead.bd-123%2E1" {
		t.Fatalf("subject %q", r1.Subject)
	}
	if id, _ := events.DecodeToken("bd-123%2E1"); id != "bd-123.1" {
		t.Fatalf("token does not decode back: %q", id)
	}
	if _, err := n.Appender.Append(ctx, outcome(t, "default", "bd-123.1", day0, true), events.ExpectLastSeq(r1.Seq)); err != nil {
		t.Fatalf("conditional append at the right sequence: %v", err)
	}
	_, err = n.Appender.Append(ctx, outcome(t, "default", "bd-123.1", day0, false), events.ExpectLastSeq(r1.Seq))
	if !errors.Is(err, events.ErrWrongSequence) {
		t.Fatalf("stale conditional append: err = %v, want ErrWrongSequence", err)
	}
	if _, msgs := lastSeq(t, n.JS, events.LogStream); msgs != 2 {
		t.Fatalf("stream holds %d events, want 2", msgs)
	}
}
