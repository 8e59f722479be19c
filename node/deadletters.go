package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
)

// liveView is the live store's view, which also reads the streams
// (app.StreamView): the log's last sequence and the dead letters.
type liveView struct {
	storeView
	js jetstream.JetStream
}

var (
	_ app.StreamView = liveView{}
	_ app.TailView   = liveView{}
)

// Tail reads events of the log stream (app.TailView).
func (v liveView) Tail(ctx context.Context, q eventlog.TailQuery) ([]eventlog.Entry, uint64, error) {
	s, err := v.js.Stream(ctx, events.LogStream)
	if err != nil {
		return nil, 0, fmt.Errorf("log stream: %w", err)
	}
	return eventlog.Tail(ctx, s, q)
}

func (v liveView) LogLastSeq(ctx context.Context) (uint64, error) {
	s, err := v.js.Stream(ctx, events.LogStream)
	if err != nil {
		return 0, fmt.Errorf("log stream: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("log stream info: %w", err)
	}
	return info.State.LastSeq, nil
}

// DeadLetters reads the newest dead letters, walking the dead-letter
// stream back from its last message.
func (v liveView) DeadLetters(ctx context.Context, limit int) ([]app.DeadLetter, uint64, error) {
	s, err := v.js.Stream(ctx, events.DLQStream)
	if err != nil {
		return nil, 0, fmt.Errorf("dead-letter stream: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("dead-letter stream info: %w", err)
	}
	var out []app.DeadLetter
	for seq := info.State.LastSeq; seq >= info.State.FirstSeq && seq > 0 && len(out) < limit; seq-- {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted
		}
		if err != nil {
			return nil, 0, fmt.Errorf("dead letter %d: %w", seq, err)
		}
		d := app.DeadLetter{Subject: m.Header.Get(projector.HeaderSubject), Reason: m.Header.Get(projector.HeaderReason), Time: m.Time.UTC()}
		d.Seq, _ = strconv.ParseUint(m.Header.Get(projector.HeaderCauseSeq), 10, 64)
		if ev, err := events.Decode(m.Data); err == nil {
			d.Type, d.ID = ev.Type, ev.ID
		}
		out = append(out, d)
	}
	return out, info.State.Msgs, nil
}
