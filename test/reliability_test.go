package test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/test/natstest"
)

// The reliability suite runs short by default (CI); -long runs the full
// version: go test ./test/ -run Reliability -long -timeout 60m
var long = flag.Bool("long", false, "run the long version of the reliability suite")

// size picks the short or the long figure.
func size(short, full int) int {
	if *long {
		return full
	}
	return short
}

// ledger counts what writers had acknowledged, by event id.
type ledger struct {
	mu    sync.Mutex
	acked map[string]uint64 // id → stream sequence
	dups  int
}

func newLedger() *ledger { return &ledger{acked: map[string]uint64{}} }

func (l *ledger) record(evs []*events.Event, res []events.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range res {
		if r.Seq == 0 {
			continue
		}
		if _, seen := l.acked[evs[i].ID]; seen || r.Duplicate {
			l.dups++
		}
		l.acked[evs[i].ID] = r.Seq
	}
}

func (l *ledger) count() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.acked) }

// streamIDs reads every message id of the log.
func streamIDs(t testing.TB, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	last, msgs := lastSeq(t, js, events.LogStream)
	ids := make(map[string]uint64, msgs)
	if msgs == 0 {
		return ids
	}
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			t.Fatalf("read log: %v", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		ids[m.Headers().Get(jetstream.MsgIDHeader)] = meta.Sequence.Stream
		if meta.Sequence.Stream >= last {
			return ids
		}
	}
}

// verify ends every reliability run: the read model of n has folded the
// whole log, equals a clean rebuild byte for byte, and the log holds every
// acknowledged event exactly once (plus the bad inputs, dead-lettered).
func verify(t *testing.T, name string, n *node.Node, js jetstream.JetStream, l *ledger, faults, bad int) {
	t.Helper()
	last, msgs := lastSeq(t, js, events.LogStream)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	ids := streamIDs(t, js)
	lost := 0
	for id, seq := range l.acked {
		if got, ok := ids[id]; !ok || got != seq {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged event %s (seq %d) is not in the log (found at %d)", id, seq, got)
			}
		}
	}
	if want := uint64(len(l.acked) + bad); msgs != want {
		t.Errorf("log holds %d events, want %d acknowledged + %d bad inputs", msgs, len(l.acked), bad)
	}
	live, err := eventlog.Read(n.Store.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	if live.Total != uint64(len(l.acked)) {
		t.Errorf("read model counts %d events, want %d acknowledged", live.Total, len(l.acked))
	}
	got, err := n.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := rebuildDigest(t, js)
	if got != want {
		t.Errorf("read model differs from a clean rebuild: %s vs %s", got, want)
	}
	t.Logf("reliability %s: events=%d faults=%d bad_inputs=%d lost=%d duplicates_refused=%d digest=%s rebuild_equal=%v",
		name, len(l.acked), faults, bad, lost, l.dups, got[:16], got == want)
}

// writeLoad appends the workload's events, writer k owning the loops of
// slot ≡ k (mod writers), in batches, until stop closes or the events run
// out. A failed batch is re-sent with the same ids until it is stored.
func writeLoad(t *testing.T, js jetstream.JetStream, g benchkit.Generated, writers, batch int, pause time.Duration, stop <-chan struct{}, l *ledger) *sync.WaitGroup {
	parts := make([][]*events.Event, writers)
	for i, ev := range g.Events {
		parts[g.Writer[i]%writers] = append(parts[g.Writer[i]%writers], ev)
	}
	var wg sync.WaitGroup
	for w, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := events.NewAppender(js)
			a.AttemptTimeout, a.MaxElapsed = time.Second, 5*time.Second
			for i := 0; i < len(p); i += batch {
				select {
				case <-stop:
					return
				default:
				}
				b := p[i:min(i+batch, len(p))]
				for attempt := 0; ; attempt++ {
					res, err := a.AppendBatch(context.Background(), b)
					l.record(b, res)
					if err == nil {
						break
					}
					if attempt == 100 {
						t.Errorf("writer %d: batch never stored: %v", w, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(pause/2 + rand.N(pause))
			}
		}()
	}
	return &wg
}

// TestReliabilityProjectorKilledMidBatch: writers append a realistic
// workload (and a few malformed events) while a projector process is
// SIGKILLed N times at random points.
func TestReliabilityProjectorKilledMidBatch(t *testing.T) {
	kills := size(10, 100)
	srv := natstest.Start(t)
	url := srv.ClientURL()
	nc, js := natstest.Connect(t, url)
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	g, err := benchkit.Workload{Seed: 11, Prefix: "kill"}.Generate(size(8000, 80_000))
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger()
	stop := make(chan struct{})
	wg := writeLoad(t, js, g, 4, 25, 40*time.Millisecond, stop, l)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bad, advanced := 0, 0
	var lastCp uint64
	for k := range kills {
		if k%3 == 0 { // a bad input reaches the log through a raw client
			subj := events.AggregateSubject("default", "bead", fmt.Sprintf("bd-bad-%d", k))
			if err := nc.Publish(subj, []byte(`{"id":"bad-`+strconv.Itoa(k)+`","type":"outcome.recorded/v1","data":{"bead_id":""}}`)); err != nil {
				t.Fatal(err)
			}
			bad++
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=1", envURL+"="+url, envDir+"="+dataDir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rand.IntN(450)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if s := stderr.String(); s != "" {
			t.Logf("kill %d: child stderr: %s", k, s)
		}
		st, err := projector.OpenStore(filepath.Join(dataDir, "pebble"), projector.StoreOptions{})
		if err != nil {
			continue // killed before it created the store
		}
		cp, _ := st.Checkpoint()
		st.Close()
		if cp > lastCp {
			advanced++
		}
		lastCp = cp
	}
	close(stop)
	wg.Wait()
	if advanced == 0 {
		t.Fatalf("the projector never progressed between %d kills", kills)
	}
	n := startNode(t, node.Config{DataDir: dataDir, NatsURL: url})
	runNode(t, n)
	verify(t, "projector-kill", n, js, l, kills, bad)
	natstest.WaitFor(t, 20*time.Second, func() error {
		if _, msgs := lastSeq(t, js, events.DLQStream); msgs != uint64(bad) {
			return fmt.Errorf("%d dead letters, want %d", msgs, bad)
		}
		return nil
	})
}

// TestReliabilityNATSRestart: the embedded server is restarted on the same
// port and store under load; writers re-send unacknowledged batches with
// the same ids and the in-process projector reconnects. Nothing
// acknowledged is lost and nothing is stored twice.
func TestReliabilityNATSRestart(t *testing.T) {
	restarts := size(3, 20)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := &natstest.ClusterNode{Opts: node.EmbeddedOptions{StoreDir: t.TempDir(), Port: port}}
	srv.Start(t)
	t.Cleanup(srv.Stop)
	url := srv.Server.ClientURL()
	_, js := natstest.Connect(t, url)
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, node.Config{NatsURL: url, NatsOptions: []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				t.Logf("projector connection: %s: %v", sub.Subject, err)
			}
		})}})
	runNode(t, n)

	g, err := benchkit.Workload{Seed: 12, Prefix: "restart"}.Generate(size(6000, 60_000))
	if err != nil {
		t.Fatal(err)
	}
	led := newLedger()
	stop := make(chan struct{})
	wg := writeLoad(t, js, g, 4, 50, 30*time.Millisecond, stop, led)
	for range restarts {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		srv.Stop()
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		srv.Start(t)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if led.count() == 0 {
		t.Fatal("no event was acknowledged")
	}
	verify(t, "nats-restart", n, js, led, restarts, 0)
}

// TestReliabilityOptimisticConcurrency: 32 writers append to the same few
// aggregates, each append conditional on the last sequence the writer
// read; on ErrWrongSequence they reload it and retry. Every aggregate's
// events form one chain (each expected its predecessor): no lost update.
func TestReliabilityOptimisticConcurrency(t *testing.T) {
	const writers = 32
	perWriter, aggregates := size(15, 150), 4
	n := startNode(t, node.Config{})
	runNode(t, n)
	ctx := context.Background()
	st, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		t.Fatal(err)
	}
	led := newLedger()
	var conflicts atomic.Int64
	perAggregate := make([]atomic.Int64, aggregates)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				bead := fmt.Sprintf("bd-occ.%d", (w+i)%aggregates)
				subj := events.AggregateSubject("default", "bead", bead)
				for attempt := 0; ; attempt++ {
					var expect uint64
					m, err := st.GetLastMsgForSubject(ctx, subj)
					switch {
					case errors.Is(err, jetstream.ErrMsgNotFound):
					case err != nil:
						t.Errorf("writer %d: last of %s: %v", w, subj, err)
						return
					default:
						expect = m.Sequence
					}
					ev, err := events.New("outcome.recorded/v1", "default", "occ-test", day0.Add(time.Duration(w*perWriter+i)*time.Second),
						&events.OutcomeRecorded{BeadID: bead, DurationMs: int64(i), Success: i%3 != 0,
							FailureDetails: "expected " + strconv.FormatUint(expect, 10)})
					if err != nil {
						t.Error(err)
						return
					}
					ev.ID = fmt.Sprintf("occ-%02d-%04d", w, i)
					r, err := n.Appender.Append(ctx, ev, events.ExpectLastSeq(expect))
					if errors.Is(err, events.ErrWrongSequence) {
						conflicts.Add(1)
						time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
						continue
					}
					if err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					led.record([]*events.Event{ev}, []events.Result{r})
					perAggregate[(w+i)%aggregates].Add(1)
					break
				}
			}
		}()
	}
	wg.Wait()
	if want := writers * perWriter; led.count() != want {
		t.Fatalf("%d appends acknowledged, want %d", led.count(), want)
	}
	if conflicts.Load() == 0 {
		t.Fatal("32 writers on 4 aggregates met no conflict: the test exercised nothing")
	}
	// Each aggregate's chain: every event expected the one before it.
	for a := range aggregates {
		subj := events.AggregateSubject("default", "bead", fmt.Sprintf("bd-occ.%d", a))
		prev, count := uint64(0), 0
		cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
		if err != nil {
			t.Fatal(err)
		}
		want := int(perAggregate[a].Load())
		for count < want {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				t.Fatalf("%s: %v", subj, err)
			}
			meta, _ := m.Metadata()
			ev, err := events.Decode(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			var o events.OutcomeRecorded
			if err := json.Unmarshal(ev.Data, &o); err != nil {
				t.Fatal(err)
			}
			if o.FailureDetails != "expected "+strconv.FormatUint(prev, 10) {
				t.Fatalf("%s seq %d: %q, want expected %d: a lost update", subj, meta.Sequence.Stream, o.FailureDetails, prev)
			}
			prev = meta.Sequence.Stream
			count++
		}
	}
	verify(t, "occ", n, n.JS, led, int(conflicts.Load()), 0)
}
