package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/api"
)

// ReadYourWrites is the time of a command that replies once its events are
// folded, called one after another over NATS on an otherwise idle node,
// next to the round trip of a raw JetStream publish (a stream of its own,
// acknowledged) measured in the same run.
type ReadYourWrites struct {
	Latency
	// ByCommand splits the figures by command.
	ByCommand map[string]Latency `json:"by_command"`
	// RawPublish is the baseline: one synchronous JetStream publish.
	RawPublish Latency `json:"raw_publish_round_trip"`
	// P50Ratio and P99Ratio are lore's time ÷ the baseline's.
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
}

// rywCommand is one command that replies once folded; args gives the
// arguments of its i-th call.
type rywCommand struct {
	group, name, project string
	args                 func(i int) map[string]any
}

// rywCommands are the commands measured: each call's arguments are new
// (no idempotent replay answers from the index).
var rywCommands = []rywCommand{
	{"learning", "observe_pattern", "", func(i int) map[string]any {
		return map[string]any{"content": fmt.Sprintf("ryw pattern %d: split the work by file", i), "success": i%3 != 0}
	}},
	{"learning", "record_outcome", "", func(i int) map[string]any {
		return map[string]any{"bead_id": fmt.Sprintf("ryw-%d", i), "duration_ms": 1000 + i, "retry_count": i % 2, "success": true}
	}},
	{"loop", "start", "", func(i int) map[string]any {
		return map[string]any{"task": fmt.Sprintf("ryw task %d: fix the flaky parser test", i), "category": "debugging"}
	}},
	{"knowledge", "add", KnowledgeProject(0), func(i int) map[string]any {
		return map[string]any{"lesson": fmt.Sprintf("Read-your-writes lesson %d: pin tool versions in CI so builds repeat", i),
			"category": "tooling", "phase": 1, "confidence": 0.8}
	}},
	{"phase", "complete", "ryw-empty", func(i int) map[string]any {
		return map[string]any{"phase": i + 1}
	}},
}

// measureReadYourWrites calls each command in turn q times over cl and
// checks each reply says its events are projected.
func measureReadYourWrites(ctx context.Context, nc *nats.Conn, cl *api.Client, q int) (ReadYourWrites, error) {
	var out ReadYourWrites
	base, err := rawPublishRoundTrips(ctx, nc, q)
	if err != nil {
		return out, err
	}
	out.RawPublish = Summarise(base)
	out.ByCommand = map[string]Latency{}
	per := make([][]time.Duration, len(rywCommands))
	var all []time.Duration
	for i := range q {
		for k, c := range rywCommands {
			req := api.Request{Args: marshal(c.args(i)), Project: c.project, Source: "bench"}
			t0 := time.Now()
			raw, err := cl.CallRaw(ctx, c.group, c.name, req)
			d := time.Since(t0)
			if err != nil {
				return out, fmt.Errorf("read your writes: %s.%s: %w", c.group, c.name, err)
			}
			var reply api.CommandReply
			if err := json.Unmarshal(raw, &reply); err != nil {
				return out, fmt.Errorf("read your writes: %s.%s reply: %w", c.group, c.name, err)
			}
			if !reply.Projected {
				return out, fmt.Errorf("read your writes: %s.%s replied before its events were projected", c.group, c.name)
			}
			per[k] = append(per[k], d)
			all = append(all, d)
		}
	}
	for k, c := range rywCommands {
		out.ByCommand[c.group+"."+c.name] = Summarise(per[k])
	}
	out.Latency = Summarise(all)
	if out.RawPublish.P50us > 0 {
		out.P50Ratio = out.P50us / out.RawPublish.P50us
		out.P99Ratio = out.P99us / out.RawPublish.P99us
	}
	return out, nil
}

// rawPublishRoundTrips times q synchronous publishes to a stream of its
// own (file storage, as the log): the floor of any acknowledged append.
func rawPublishRoundTrips(ctx context.Context, nc *nats.Conn, q int) ([]time.Duration, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	const name = "BENCH_RTT"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"bench.rtt"}}); err != nil {
		return nil, fmt.Errorf("baseline stream: %w", err)
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), name) }()
	ds := make([]time.Duration, 0, q)
	body := []byte(`{"specversion":"1.0","type":"bench","data":{"content":"a small event of about this size"}}`)
	for range q {
		t0 := time.Now()
		if _, err := js.Publish(ctx, "bench.rtt", body); err != nil {
			return nil, fmt.Errorf("baseline publish: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	if len(ds) == 0 {
		return nil, errors.New("baseline: no publish")
	}
	return ds, nil
}
