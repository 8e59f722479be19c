package app

import (
	"context"
	"fmt"
	"time"
)

// The projector's state as the log sees it: how far the read models are
// behind the log, and the dead letters (events no projector could fold)
// with their reasons. Neither is folded into a read model: they are read
// from the streams, so only a live view answers (an audit refuses).

func init() {
	Register(Endpoint{Group: "audit", Name: "dead_letters", Args: DeadLettersArgs{}, Query: deadLetters,
		Doc: "the projector's lag behind the log and the dead letters (events no projector could fold) with their reasons, newest first (live only)"})
}

// DeadLettersArgs are the arguments of audit.dead_letters.
type DeadLettersArgs struct {
	// Limit bounds the dead letters listed, newest first (0: 50).
	Limit int `json:"limit,omitempty"`
}

// DeadLetter is one event the projector could not fold.
type DeadLetter struct {
	// Seq is the log sequence of the event (its cause).
	Seq uint64 `json:"seq"`
	// Subject is the event's subject in the log.
	Subject string `json:"subject"`
	// Reason is why it was refused.
	Reason string `json:"reason"`
	// Time is when it was dead-lettered.
	Time time.Time `json:"time"`
	// Type and ID are read from the payload when it decodes ("" otherwise).
	Type string `json:"type,omitempty"`
	ID   string `json:"id,omitempty"`
}

// ProjectorStatus is the answer of audit.dead_letters.
type ProjectorStatus struct {
	// LogLastSeq is the log's last stream sequence; FoldedSeq the read
	// models' checkpoint; LagEvents their difference (0 when caught up).
	LogLastSeq uint64 `json:"log_last_seq"`
	FoldedSeq  uint64 `json:"folded_seq"`
	LagEvents  uint64 `json:"lag_events"`
	// DeadLetterTotal counts the dead-letter stream's messages; DeadLetters
	// lists the newest of them.
	DeadLetterTotal uint64       `json:"dead_letter_total"`
	DeadLetters     []DeadLetter `json:"dead_letters"`
}

// StreamView is a view that also reads lore's streams: the live view of a
// process. Audit views are not: the streams are not folded to a point.
type StreamView interface {
	View
	// LogLastSeq is the log stream's last sequence.
	LogLastSeq(ctx context.Context) (uint64, error)
	// DeadLetters returns the newest dead letters (at most limit, newest
	// first) and how many the stream holds.
	DeadLetters(ctx context.Context, limit int) ([]DeadLetter, uint64, error)
}

func deadLetters(ctx context.Context, v View, req Request) (any, error) {
	var a DeadLettersArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.Limit < 0 {
		return nil, badField("limit", errNegative)
	}
	if a.Limit == 0 {
		a.Limit = 50
	}
	sv, ok := v.(StreamView)
	if !ok {
		return nil, fmt.Errorf("%w: audit.dead_letters reads the live streams: as_of/at_seq do not apply", ErrBadRequest)
	}
	out := ProjectorStatus{FoldedSeq: v.Seq()}
	last, err := sv.LogLastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	out.LogLastSeq = last
	if last > out.FoldedSeq {
		out.LagEvents = last - out.FoldedSeq
	}
	if out.DeadLetters, out.DeadLetterTotal, err = sv.DeadLetters(ctx, a.Limit); err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if out.DeadLetters == nil {
		out.DeadLetters = []DeadLetter{}
	}
	return out, nil
}
