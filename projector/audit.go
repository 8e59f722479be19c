package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// FoldRanges brings store (the state of an audit at its checkpoint, see
// AuditMark.UsableFor) to the state of the audit at target as of asOf (nil:
// no time bound): it folds, announcing nothing, the events of ranges (from
// AuditRanges over (checkpoint, target]) whose time is <= asOf, passes over
// every other sequence, and leaves the store's checkpoint at target. The
// result is the state a full Replay to target as of asOf folds. models may
// be some of the models only when poisoned holds the refusals of the fold
// of every model over (checkpoint, target] (Store.Poisoned); it is nil
// otherwise. seal (nil: none) verifies the messages' seals.
func FoldRanges(ctx context.Context, js jetstream.JetStream, store *Store, models []Model, ranges []SeqRange, target uint64, asOf *time.Time, poisoned map[uint64]bool, seal *events.Sealer) (ReplayStats, error) {
	start := time.Now()
	var stats ReplayStats
	o := ReplayOptions{Poisoned: poisoned, Sealer: seal}
	if asOf != nil {
		o.UntilTime = *asOf
	}
	if v, err := store.StoredVersion(); err != nil {
		return stats, err
	} else if v == "" {
		if err := store.Reset(FormatVersion(models), target); err != nil {
			return stats, err
		}
	}
	for _, r := range ranges {
		if r.To > target {
			r.To = target
		}
		if r.From > r.To {
			continue
		}
		if err := advance(store, models, r.From-1); err != nil {
			return stats, err
		}
		o.UntilSeq = r.To
		s, err := Replay(ctx, js, store, models, o)
		if err != nil {
			return stats, fmt.Errorf("audit fold %d..%d: %w", r.From, r.To, err)
		}
		stats.Folded += s.Folded
		stats.Skipped += s.Skipped
		stats.Poison += s.Poison
		stats.Duplicates += s.Duplicates
	}
	if err := advance(store, models, target); err != nil {
		return stats, err
	}
	stats.Seq = target
	stats.Duration = time.Since(start)
	return stats, nil
}

// advance moves the store's checkpoint to seq without folding anything (the
// sequences passed hold nothing the audit folds).
func advance(store *Store, models []Model, seq uint64) error {
	cp, err := store.Checkpoint()
	if err != nil || cp >= seq {
		return err
	}
	f, err := NewFolder(store, models, false)
	if err != nil {
		return err
	}
	defer f.Close()
	f.Skip(seq)
	_, err = f.Commit()
	return err
}
