package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// Announcements: each is published once for the whole group of replicas.
//
// Every replica folds every event and so decides every announcement, with
// the same deterministic message id. The derived stream's duplicate window
// (events.StreamOptions.DerivedDuplicates, short: the server holds every
// id of the window in memory) drops a copy published within the window of
// the first. A copy may come later only from a replica announcing a batch
// whose events were stored long ago (a replica lagging behind the log, or
// one republishing its outbox after a restart); such a replica first looks
// each announcement up in the stream and publishes only those not there.
//
// INVARIANT: an announcement is published without a look-up only while
// now < stored + window/2, where stored is the server's time of the oldest
// event of its batch. Any earlier publish of the same id happened after
// its cause was stored (a replica folds an event after it is stored), so
// within the window of this one: the server drops the copy. The other half
// of the window absorbs clock skew and publish delays.
//
// INVARIANT: a subject's announcements are stored in the order of their
// causes, each once. Every replica announces a subject's transitions in
// the order of their causes and publishes one only after the subject's
// earlier ones were acked (stored, or found stored): a publishing window
// holds each subject at most once, and a failure sends the rest one by
// one. So when a subject's newest announcement has an earlier cause than
// one looked up, that one is not in the stream: the look-up reads one
// message, not the subject's history.

// announcer is what announcing needs of the derived stream, read when the
// runtime (re)starts.
type announcer struct {
	stream jetstream.Stream
	// freshFor is half the stream's duplicate window.
	freshFor time.Duration
}

// prepareAnnounce reads the derived stream's duplicate window.
func (r *Runtime) prepareAnnounce(ctx context.Context) error {
	st, err := r.js.Stream(ctx, events.DerivedStream)
	if err != nil {
		return fmt.Errorf("derived stream: %w", err)
	}
	r.ann = announcer{stream: st, freshFor: st.CachedInfo().Config.Duplicates / 2}
	return nil
}

// publishOutbox publishes what a crash left in the store's outbox (each
// looked up first: its events were stored before the crash).
func (r *Runtime) publishOutbox(ctx context.Context) error {
	keys, entries, err := r.store.outbox()
	if err != nil || len(entries) == 0 {
		return err
	}
	return r.announce(ctx, entries, keys, time.Time{})
}

// announceWindow is how many announcements are published before their
// acks are awaited.
const announceWindow = 256

// announce publishes entries (stored in the outbox at keys) in order, each
// with its deterministic message id, then clears them from the outbox.
// stored is the server's time of the oldest event of their batch (zero:
// unknown, every entry is looked up). Publishes are asynchronous within a
// window; an entry whose ack fails is looked up and re-sent, with the ones
// after it, one by one until acked (the same ids: the server keeps one
// copy of each).
//
// INVARIANT: the outbox is cleared only after every entry was acked or
// found in the stream, so a crash in between re-announces (deduplicated),
// never loses one.
func (r *Runtime) announce(ctx context.Context, entries []outboxEntry, keys [][]byte, stored time.Time) error {
	msgs := make([]*nats.Msg, len(entries))
	for i, e := range entries {
		m, err := derivedMsg(e)
		if err != nil {
			return err
		}
		msgs[i] = m
	}
	fresh := func() bool {
		return !stored.IsZero() && time.Since(stored) < r.ann.freshFor
	}
	acked := r.announceAsync(ctx, msgs, fresh)
	for _, m := range msgs[acked:] {
		if err := r.publishNew(ctx, m); err != nil {
			return fmt.Errorf("announce %s: %w", m.Header.Get(jetstream.MsgIDHeader), err)
		}
	}
	return r.store.clearOutbox(keys)
}

// announceAsync publishes msgs window by window and returns how many, from
// the first, were acked (or found in the stream) before the first failure.
// A window published when fresh() is false has its messages looked up
// first.
func (r *Runtime) announceAsync(ctx context.Context, msgs []*nats.Msg, fresh func() bool) int {
	acked := 0
	for acked < len(msgs) {
		window := msgs[acked:windowEnd(msgs, acked)]
		lookUp := !fresh()
		// futures[i] is nil for a message found in the stream.
		futures := make([]jetstream.PubAckFuture, 0, len(window))
		for _, m := range window {
			if lookUp {
				there, err := r.announced(ctx, m)
				if err != nil {
					break
				}
				if there {
					futures = append(futures, nil)
					continue
				}
			}
			f, err := r.js.PublishMsgAsync(m)
			if err != nil {
				break
			}
			futures = append(futures, f)
		}
		wait := time.NewTimer(10 * time.Second)
		for _, f := range futures {
			if f == nil {
				acked++
				continue
			}
			select {
			case <-f.Ok():
				acked++
				continue
			case <-f.Err():
			case <-wait.C:
			case <-ctx.Done():
			}
			wait.Stop()
			return acked
		}
		wait.Stop()
		if len(futures) < len(window) {
			return acked
		}
	}
	return acked
}

// windowEnd is the end of the publishing window that starts at msgs[from]:
// at most announceWindow messages, none on the subject of an earlier one
// (a subject's next announcement waits for the ack of its previous one).
func windowEnd(msgs []*nats.Msg, from int) int {
	seen := make(map[string]struct{}, min(announceWindow, len(msgs)-from))
	end := from
	for end < len(msgs) && end-from < announceWindow {
		if _, dup := seen[msgs[end].Subject]; dup {
			break
		}
		seen[msgs[end].Subject] = struct{}{}
		end++
	}
	return end
}

// publishNew publishes m unless the derived stream holds it, looking it up
// before every attempt, until done or ctx ends.
func (r *Runtime) publishNew(ctx context.Context, m *nats.Msg) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0
	return backoff.Retry(func() error {
		there, err := r.announced(ctx, m)
		if err == nil && !there {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = r.js.PublishMsg(actx, m)
			cancel()
		}
		if err != nil && ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return err
	}, backoff.WithContext(b, ctx))
}

// announced reports whether the derived stream holds a message with m's id
// on m's subject. It reads through the stream's leader (the derived stream
// allows no direct gets) the subject's newest message: m itself, or one
// with an earlier cause (m is not there: the subject's announcements are
// stored in the order of their causes); otherwise the subject's others
// from the oldest (a subject holds the few transitions of one aggregate).
func (r *Runtime) announced(ctx context.Context, m *nats.Msg) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	id := m.Header.Get(jetstream.MsgIDHeader)
	st := r.ann.stream
	newest, err := st.GetLastMsgForSubject(ctx, m.Subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up announcement %s: %w", id, err)
	}
	if newest.Header.Get(jetstream.MsgIDHeader) == id {
		return true, nil
	}
	if causedBefore(newest.Header.Get(HeaderCauseSeq), m.Header.Get(HeaderCauseSeq)) {
		return false, nil
	}
	for seq := uint64(1); seq < newest.Sequence; {
		sm, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(m.Subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("look up announcement %s: %w", id, err)
		}
		if sm.Header.Get(jetstream.MsgIDHeader) == id {
			return true, nil
		}
		seq = sm.Sequence + 1
	}
	return false, nil
}

// causedBefore reports whether cause sequence a is known to precede b (a
// missing or malformed one precedes nothing).
func causedBefore(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

func derivedMsg(e outboxEntry) (*nats.Msg, error) {
	t, _ := time.Parse(time.RFC3339Nano, e.Time)
	ev := &events.Event{ID: e.MsgID, Type: e.Type, Source: "lore", Subject: e.Subject,
		Time: t, Project: e.Project, Data: e.Data}
	subj, err := events.SubjectFor(ev)
	if err != nil {
		return nil, fmt.Errorf("announce %s: %w", e.MsgID, err)
	}
	body, err := events.Encode(ev)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(subj)
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, e.MsgID)
	m.Header.Set(events.TypeHeader, e.Type)
	m.Header.Set(HeaderCauseSeq, strconv.FormatUint(e.Cause, 10))
	return m, nil
}
