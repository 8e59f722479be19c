package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// ReplayOptions bound a replay of the log.
type ReplayOptions struct {
	// UntilSeq stops after this stream sequence (0: the log's last sequence
	// when the replay starts).
	UntilSeq uint64
	// UntilTime, when set, folds only events whose time is <= UntilTime (the
	// state "as of" that time); later events are passed over.
	UntilTime time.Time
	// Progress, when set, is called now and then with (seq, target).
	Progress func(seq, target uint64)
	// OnPoison, when set, receives events that could not be folded (a replay
	// never dead-letters: the live projector already did).
	OnPoison func(seq uint64, reason error)
}

// ReplayStats summarise a replay.
type ReplayStats struct {
	Seq      uint64        `json:"seq"`
	Folded   uint64        `json:"folded"`
	Skipped  uint64        `json:"skipped"` // later than UntilTime
	Poison   uint64        `json:"poison"`
	Duration time.Duration `json:"duration_ns"`
}

// Replay folds the log into store's models from the store's checkpoint+1 to
// the bound, with an ordered consumer, announcing nothing: a rebuild or an
// audit never re-announces derived events.
func Replay(ctx context.Context, js jetstream.JetStream, store *Store, models []Model, o ReplayOptions) (ReplayStats, error) {
	start := time.Now()
	var stats ReplayStats
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return stats, fmt.Errorf("log stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return stats, fmt.Errorf("log stream info: %w", err)
	}
	target := info.State.LastSeq
	if o.UntilSeq > 0 && o.UntilSeq < target {
		target = o.UntilSeq
	}
	if v, _ := store.StoredVersion(); v == "" {
		if err := store.Reset(FormatVersion(models), target); err != nil {
			return stats, err
		}
	}
	f, err := NewFolder(store, models, false)
	if err != nil {
		return stats, err
	}
	stats.Seq = f.Seq()
	if f.Seq() >= target {
		return stats, nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.EventsFilter},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    f.Seq() + 1,
	})
	if err != nil {
		return stats, fmt.Errorf("replay consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return stats, fmt.Errorf("replay consume: %w", err)
	}
	defer it.Stop()
	lastReport := time.Now()
	for f.Seq() < target {
		msg, err := it.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
				continue
			}
			if ctx.Err() != nil {
				return stats, ctx.Err()
			}
			return stats, fmt.Errorf("replay next: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return stats, fmt.Errorf("replay metadata: %w", err)
		}
		seq := meta.Sequence.Stream
		if seq > target {
			break
		}
		ev, derr := events.Decode(msg.Data())
		switch {
		case derr != nil:
			f.Skip(seq)
			stats.Poison++
			if o.OnPoison != nil {
				o.OnPoison(seq, derr)
			}
		case !o.UntilTime.IsZero() && ev.Time.After(o.UntilTime):
			f.Skip(seq)
			stats.Skipped++
		default:
			ev.Seq, ev.Received = seq, meta.Timestamp
			ev.Checked = msg.Headers().Get(events.CheckedHeader) == ev.Type
			if _, err := f.Fold(ev); err != nil {
				if !errors.Is(err, ErrPoison) {
					return stats, err
				}
				stats.Poison++
				if o.OnPoison != nil {
					o.OnPoison(seq, err)
				}
			} else {
				stats.Folded++
			}
		}
		if f.Pending() >= 1000 {
			if _, err := f.Commit(); err != nil {
				return stats, err
			}
		}
		if o.Progress != nil && time.Since(lastReport) > 200*time.Millisecond {
			o.Progress(seq, target)
			lastReport = time.Now()
		}
	}
	if _, err := f.Commit(); err != nil {
		return stats, err
	}
	if o.Progress != nil {
		o.Progress(f.Seq(), target)
	}
	stats.Seq = f.Seq()
	stats.Duration = time.Since(start)
	return stats, nil
}
