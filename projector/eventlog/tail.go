package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// TailQuery selects events of the log for `lore events tail`.
type TailQuery struct {
	// Last is how many matching events to return, the newest ones (with
	// FromSeq 0). The filters apply first: the answer is the last Last
	// events of the wanted types and project, not the wanted ones among
	// the last Last events.
	Last int
	// FromSeq, when > 0, returns every matching event from this stream
	// sequence on instead (Last is ignored).
	FromSeq uint64
	// Types keeps only these resolved event types (none: every type).
	Types []string
	// Project keeps only this project's events ("": every project).
	Project string
	// Max, when > 0 with FromSeq, bounds the events returned: the first Max
	// matches from FromSeq on. The sequence returned is then the last one
	// read, so a caller pages on from it + 1.
	Max int
}

// Entry is one event of the log with its stream sequence.
type Entry struct {
	Seq   uint64
	Event *events.Event
	// Err is set when the message does not decode (its Event is nil).
	Err error
}

// Tail answers q from the log stream st, up to the stream's last sequence
// when called, in stream order. It returns that last sequence too, so a
// follower continues after it. Undecodable messages are returned with Err
// (they match no type filter, so only an unfiltered query returns them).
//
// Without FromSeq it reads the log backwards in windows that double in
// size, so finding the last N events of a rare type costs reads in
// proportion to how far back they lie, never a fixed window that may miss
// them.
func Tail(ctx context.Context, st jetstream.Stream, q TailQuery) ([]Entry, uint64, error) {
	info, err := st.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("log stream info: %w", err)
	}
	end, first := info.State.LastSeq, info.State.FirstSeq
	if first == 0 {
		first = 1
	}
	want := map[string]bool{}
	for _, t := range q.Types {
		want[t] = true
	}
	match := func(e Entry) bool {
		return len(want) == 0 || (e.Event != nil && want[e.Event.Type])
	}
	filter := events.EventsFilter
	if q.Project != "" {
		filter = events.EventsPrefix + "." + events.EncodeToken(q.Project) + ".>"
	}
	if end == 0 {
		return nil, 0, nil
	}
	if q.FromSeq > 0 {
		var out []Entry
		lo := max(q.FromSeq, first)
		if q.Max <= 0 {
			err := scan(ctx, st, filter, lo, end, func(e Entry) {
				if match(e) {
					out = append(out, e)
				}
			})
			return out, end, err
		}
		// Forward windows that double in size until Max matches are read.
		read, window := lo-1, uint64(q.Max)
		for len(out) < q.Max && read < end {
			hi := min(end, read+window)
			if err := scan(ctx, st, filter, read+1, hi, func(e Entry) {
				if match(e) && len(out) < q.Max {
					out = append(out, e)
					read = e.Seq
				}
			}); err != nil {
				return nil, end, err
			}
			if len(out) < q.Max {
				read = hi
			}
			window *= 2
		}
		return out, read, nil
	}
	if q.Last <= 0 {
		return nil, end, nil
	}
	var out []Entry // newest window first; each window in stream order
	hi, window := end, uint64(q.Last)
	for len(out) < q.Last && hi >= first {
		lo := first
		if hi-first+1 > window {
			lo = hi - window + 1
		}
		var got []Entry
		if err := scan(ctx, st, filter, lo, hi, func(e Entry) {
			if match(e) {
				got = append(got, e)
			}
		}); err != nil {
			return nil, end, err
		}
		out = append(got, out...)
		if lo == first {
			break
		}
		hi, window = lo-1, window*2
	}
	if len(out) > q.Last {
		out = out[len(out)-q.Last:]
	}
	return out, end, nil
}

// scan calls fn for every message of filter with a sequence in [lo, hi],
// in stream order.
func scan(ctx context.Context, st jetstream.Stream, filter string, lo, hi uint64, fn func(Entry)) error {
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: lo})
	if err != nil {
		return fmt.Errorf("read the log from seq %d: %w", lo, err)
	}
	ci := cons.CachedInfo()
	if ci != nil && ci.NumPending == 0 {
		return nil
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("read the log from seq %d: %w", lo, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
				// NumPending said more matches; the server is slow: wait on.
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read the log from seq %d: %w", lo, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read the log: %w", err)
		}
		seq := meta.Sequence.Stream
		if seq > hi {
			return nil
		}
		ev, derr := events.Decode(msg.Data())
		fn(Entry{Seq: seq, Event: ev, Err: derr})
		// INVARIANT: NumPending counts the filter's messages after this
		// one; 0 means none is left to wait for.
		if seq >= hi || meta.NumPending == 0 {
			return nil
		}
	}
}
