package benchkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// rawStream is the scratch stream of the raw publish baseline: the log's
// configuration on other subjects, deleted after the measurement.
const (
	rawStream  = "LORE_BENCH_RAW"
	rawSubject = "lore-bench-raw"
)

// rawPublish publishes the wire form of n events of s (prepared as the
// appender would, with Nats-Msg-Id) to the scratch stream with async
// publishes, as fast as the server acks, from one goroutine: the ceiling
// of appends. Events are generated and prepared genChunk at a time, not
// timed; each chunk's publishes until their acks are.
func rawPublish(ctx context.Context, js jetstream.JetStream, prep func(*events.Event) (*nats.Msg, error), s *Stream, n int) (time.Duration, error) {
	cfg := events.StreamConfigs(events.StreamOptions{})[0]
	cfg.Name, cfg.Subjects, cfg.Description = rawStream, []string{rawSubject + ".>"}, "lore bench: raw publish baseline (scratch)"
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return 0, fmt.Errorf("raw stream: %w", err)
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), rawStream) }()
	var took time.Duration
	for done := 0; done < n; {
		msgs := make([]*nats.Msg, 0, min(genChunk, n-done))
		for range min(genChunk, n-done) {
			ev, _, err := s.Next()
			if err != nil {
				return 0, err
			}
			m, err := prep(ev)
			if err != nil {
				return 0, err
			}
			m.Subject = rawSubject + strings.TrimPrefix(m.Subject, events.EventsPrefix)
			m.Header.Set(jetstream.MsgIDHeader, "raw-"+ev.ID)
			msgs = append(msgs, m)
			done++
		}
		start := time.Now()
		for _, m := range msgs {
			// On a busy machine acks can lag the publishes: wait for room
			// under the pending cap rather than fail the baseline.
			if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
				return 0, fmt.Errorf("raw publish: %w", err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Minute):
			return 0, errors.New("raw publish: not acknowledged within 10 minutes")
		}
		took += time.Since(start)
		if p := js.PublishAsyncPending(); p != 0 {
			return 0, fmt.Errorf("raw publish: %d unacknowledged", p)
		}
	}
	return took, nil
}

// rawConsume drains the log's first n messages with an ordered consumer
// (AckNone, nothing decoded): the ceiling of projection and rebuild.
func rawConsume(ctx context.Context, js jetstream.JetStream, n uint64) (time.Duration, error) {
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return 0, fmt.Errorf("log stream: %w", err)
	}
	start := time.Now()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventsFilter}})
	if err != nil {
		return 0, fmt.Errorf("raw consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return 0, fmt.Errorf("raw consume: %w", err)
	}
	defer it.Stop()
	for i := uint64(0); i < n; i++ {
		if _, err := it.Next(); err != nil {
			return 0, fmt.Errorf("raw consume %d of %d: %w", i, n, err)
		}
	}
	return time.Since(start), nil
}

// commitLog records the projector's commits (checkpoint, time) in order.
type commitLog struct {
	mu  sync.Mutex
	seq []uint64
	at  []time.Time
}

func (c *commitLog) record(seq uint64) {
	now := time.Now()
	c.mu.Lock()
	c.seq = append(c.seq, seq)
	c.at = append(c.at, now)
	c.mu.Unlock()
}

// lagOf returns, for each acknowledged (seq, ack time), the time until the
// first commit whose checkpoint covers seq (0 if it committed before the
// writer saw the ack). ok is false when a seq was never committed.
func (c *commitLog) lagOf(seqs []uint64, acked []time.Time) (lags []time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range seqs {
		j := sort.Search(len(c.seq), func(k int) bool { return c.seq[k] >= s })
		if j == len(c.seq) {
			return lags, false
		}
		lags = append(lags, max(0, c.at[j].Sub(acked[i])))
	}
	return lags, true
}

// Latency summarises a set of durations, in microseconds.
type Latency struct {
	N     int     `json:"n"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return float64(s[i].Nanoseconds()) / 1e3
	}
	return Latency{N: len(s), P50us: q(0.50), P99us: q(0.99), MaxUs: q(1)}
}

// PeakRSS is the process's peak resident set (VmHWM) in bytes, 0 when
// /proc is not available.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
