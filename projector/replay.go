package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// Poisoned, when set, are events passed over as poison without folding
	// them (Folder.SetPoisoned): the refusals of a fold of every model,
	// for a replay of some of them (Store.Poisoned).
	Poisoned map[uint64]bool
	// Foreign, when set, replays a fold set (FoldSet) whose refusals of
	// the kinds it does not fold are not known (Folder.SetForeign): it
	// collects the sequences of the events none of the models folds, and
	// the replay fails with ErrForeignDuplicate where that is not enough.
	Foreign map[uint64]bool
	// IDs, when set, answers the id look-ups of a replay on a copy of
	// another store's state (Store.AuditIDs; Folder.SetAuditIDs).
	IDs *AuditIDs
	// Sealer, when set, verifies the seals of the messages read: a sealed
	// message is not checked again (events.CheckSealed).
	Sealer *events.Sealer
}

// ReplayStats summarise a replay.
type ReplayStats struct {
	Seq     uint64 `json:"seq"`
	Folded  uint64 `json:"folded"`
	Skipped uint64 `json:"skipped"` // later than UntilTime
	Poison  uint64 `json:"poison"`
	// Duplicates were passed over: an event with the same id was folded.
	Duplicates uint64        `json:"duplicates"`
	Duration   time.Duration `json:"duration_ns"`
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
	f.SetPoisoned(o.Poisoned)
	f.SetForeign(o.Foreign)
	f.SetAuditIDs(o.IDs)
	f.Parallel()
	defer f.Close()
	// Each batch is written while the next one folds (CommitAsync); the
	// last one is committed and made durable before Replay returns.
	commit := func(last bool) error {
		poison, err := f.Settle()
		if err != nil {
			return err
		}
		for _, p := range poison {
			stats.Folded--
			stats.Poison++
			if o.OnPoison != nil {
				o.OnPoison(p.Seq, p.Err)
			}
		}
		if last {
			_, err = f.Commit()
			return err
		}
		return f.CommitAsync()
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
	deliveries, _, stop := startPump(it, 1000, o.Sealer, preparer(models))
	defer stop()
	lastReport := time.Now()
	for f.Seq() < target {
		d := next(deliveries, 5*time.Second)
		if d.err != nil {
			if errors.Is(d.err, errNoMessage) && ctx.Err() == nil {
				continue
			}
			if ctx.Err() != nil {
				return stats, ctx.Err()
			}
			return stats, fmt.Errorf("replay next: %w", d.err)
		}
		seq := d.meta.Sequence.Stream
		if seq > target {
			break
		}
		switch {
		case d.ev == nil:
			f.Skip(seq)
			stats.Poison++
			if o.OnPoison != nil {
				o.OnPoison(seq, d.derr)
			}
		case !o.UntilTime.IsZero() && d.ev.Time.After(o.UntilTime):
			f.Skip(seq)
			stats.Skipped++
		default:
			skipped, err := f.foldDecoded(d.ev, d.data, d.derr, false)
			switch {
			case err != nil && !errors.Is(err, ErrPoison):
				return stats, err
			case err != nil:
				stats.Poison++
				if o.OnPoison != nil {
					o.OnPoison(seq, err)
				}
			case !skipped:
				stats.Folded++
			}
		}
		if f.Full(1000) {
			// A cancelled replay stops at its next commit: a long rebuild
			// answers SIGTERM without folding the rest of the log.
			if err := ctx.Err(); err != nil {
				return stats, err
			}
			if err := commit(false); err != nil {
				return stats, err
			}
		}
		if o.Progress != nil && time.Since(lastReport) > 200*time.Millisecond {
			o.Progress(seq, target)
			lastReport = time.Now()
		}
	}
	if err := commit(true); err != nil {
		return stats, err
	}
	if o.Progress != nil {
		o.Progress(f.Seq(), target)
	}
	stats.Seq = f.Seq()
	stats.Duplicates = f.Duplicates()
	stats.Duration = time.Since(start)
	return stats, nil
}
