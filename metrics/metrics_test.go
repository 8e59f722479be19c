package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/metrics"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/node/cmalloc"
	"github.com/loredev/lore/test/natstest"
)

// scrape returns the samples of /metrics as "name{labels}" → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

func health(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsMoveWithEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	m := metrics.New(metrics.Config{NC: n.NC, JS: n.JS, Projector: n.Runtime})
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr.String()
	if code, body := health(t, base); code != http.StatusServiceUnavailable || !strings.Contains(body, "projector not running") {
		t.Fatalf("health before the projector runs = %d %s, want 503", code, body)
	}
	svc, err := n.Serve(api.Options{Observe: m.Observe})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	done := make(chan struct{})
	go func() { defer close(done); m.SetProjectorRunning(true); _ = n.Run(ctx); m.SetProjectorRunning(false) }()
	go func() { _ = m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	natstest.WaitFor(t, 10*time.Second, func() error {
		if code, body := health(t, base); code != http.StatusOK {
			return fmt.Errorf("health %d %s", code, body)
		}
		return nil
	})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		ev, err := events.New("outcome.recorded/v1", "default", "test", at, &events.OutcomeRecorded{
			BeadID: fmt.Sprintf("bd-%d", i), DurationMs: 1000, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Appender.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var stats any
	if err := api.NewClient(n.NC).Call(ctx, "audit", "stats", api.Request{}, &stats); err != nil {
		t.Fatal(err)
	}
	if err := api.NewClient(n.NC).Call(ctx, "no", "such", api.Request{}, nil); err == nil {
		t.Fatal("a call to a missing endpoint succeeded")
	}
	const projected = `lore_events_projected_total{type="outcome.recorded/v1"}`
	natstest.WaitFor(t, 10*time.Second, func() error {
		s := scrape(t, base)
		if s[projected] != 3 || s[`lore_events_appended_total{type="outcome.recorded/v1"}`] != 3 {
			return fmt.Errorf("appended %v projected %v, want 3", s[`lore_events_appended_total{type="outcome.recorded/v1"}`], s[projected])
		}
		return nil
	})
	s := scrape(t, base)
	checks := map[string]float64{
		`lore_api_request_duration_seconds_count{code="200",endpoint="audit.stats"}`: 1,
		"lore_projector_lag_events":     0,
		"lore_projector_checkpoint_seq": 3,
		"lore_log_last_seq":             3,
		"lore_nats_connected":           1,
		"lore_projector_running":        1,
		"lore_dlq_messages":             0,
	}
	for k, want := range checks {
		if got, ok := s[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if cs, ok := cmalloc.Read(); ok {
		// the C allocator holds Pebble's memory in a cgo build
		if got, present := s["lore_malloc_in_use_bytes"]; !present || got <= 0 {
			t.Errorf("lore_malloc_in_use_bytes = %v (present %v), want > 0 (the allocator reports %d)", got, present, cs.InUse)
		}
		if _, present := s["lore_malloc_free_bytes"]; !present {
			t.Error("lore_malloc_free_bytes is missing")
		}
	}
}

// TestHealthSaysStalledWhileTheReadModelLags: a projector said running
// whose checkpoint stays behind the log for StallAfter is not healthy
// (503, naming both sequences); once it folds the log, health is back.
func TestHealthSaysStalledWhileTheReadModelLags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var clock atomic.Int64 // fake time, in seconds after t0
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := metrics.New(metrics.Config{NC: n.NC, JS: n.JS, Projector: n.Runtime,
		Now: func() time.Time { return t0.Add(time.Duration(clock.Load()) * time.Second) }})
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr.String()
	var last uint64
	for i := range 3 {
		ev, err := events.New("outcome.recorded/v1", "default", "test", t0, &events.OutcomeRecorded{
			BeadID: fmt.Sprintf("bd-%d", i), DurationMs: 1000, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := n.Appender.Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		last = r.Seq
	}
	m.SetProjectorRunning(true) // said running, folding nothing
	if code, body := health(t, base); code != http.StatusOK {
		t.Fatalf("health right after start = %d %s, want 200 (not stalled yet)", code, body)
	}
	clock.Add(int64(metrics.DefaultStallAfter/time.Second) + 1)
	code, body := health(t, base)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "stalled") || !strings.Contains(body, fmt.Sprintf("log at %d", last)) {
		t.Fatalf("health of a read model at 0 behind a log at %d = %d %s, want 503 stalled", last, code, body)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := n.Runtime.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if code, body := health(t, base); code != http.StatusOK {
		t.Fatalf("health once folded = %d %s, want 200", code, body)
	}
}
