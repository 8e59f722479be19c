package projector

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/loredev/lore/events"
)

// Event ids reused with other content. The fold passes over an event
// whose id it folded before (the first one counts); the live runtime
// reads the first one back and, when the copy is not one, dead-letters
// the copy with the reason, so that no such event is passed over
// silently.

// ErrIDReused is the reason of the dead letter of an event passed over as
// a duplicate whose content differs from the event folded with its id.
var ErrIDReused = errors.New("lore: event id reused")

// otherContent compares a delivery passed over as a duplicate with the
// event folded at first under the same id: "" when it is a copy of it (a
// retry, whenever and however it was sent), else what differs (type,
// project, subject, data: what the fold reads; the time and source of a
// re-sent copy may differ, as lore's own imports re-send a line's event at
// a later time).
func (r *Runtime) otherContent(ctx context.Context, d delivery, first uint64) (string, error) {
	if r.log == nil {
		st, err := r.js.Stream(ctx, events.LogStream)
		if err != nil {
			return "", fmt.Errorf("log stream: %w", err)
		}
		r.log = st
	}
	msg, err := r.log.GetMsg(ctx, first)
	if err != nil {
		return "", fmt.Errorf("read the event at seq %d: %w", first, err)
	}
	if bytes.Equal(msg.Data, d.msg.Data()) {
		return "", nil
	}
	a, err := events.Decode(msg.Data)
	if err != nil {
		return "", fmt.Errorf("decode the event at seq %d: %w", first, err)
	}
	b, err := events.Decode(d.msg.Data())
	if err != nil {
		return "", fmt.Errorf("decode the event at seq %d: %w", d.meta.Sequence.Stream, err)
	}
	return events.OtherContent(a, b), nil
}
