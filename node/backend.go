package node

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// storeView is an app.View over a store.
type storeView struct {
	st  *projector.Store
	seq func() uint64
}

func (v storeView) Model(name string) projector.Reader { return v.st.Model(name) }
func (v storeView) Seq() uint64                        { return v.seq() }

var _ api.Backend = (*Node)(nil)

// Live is the view of the live read models.
func (n *Node) Live() app.View {
	return liveView{storeView: storeView{st: n.Store, seq: n.Runtime.Seq}, js: n.JS}
}

// Append stores events: one (optionally conditional) or a batch.
func (n *Node) Append(ctx context.Context, evs []*events.Event, expect *uint64) ([]events.Result, error) {
	if len(evs) == 1 {
		var opts []events.AppendOption
		if expect != nil {
			opts = append(opts, events.ExpectLastSeq(*expect))
		}
		r, err := n.Appender.Append(ctx, evs[0], opts...)
		if err != nil {
			return nil, err
		}
		return []events.Result{r}, nil
	}
	if expect != nil {
		return nil, fmt.Errorf("%w: expect_last_seq needs exactly one event, got %d", app.ErrBadRequest, len(evs))
	}
	return n.Appender.AppendBatch(ctx, evs)
}

// WaitFor blocks until the live read models include seq.
func (n *Node) WaitFor(ctx context.Context, seq uint64) error { return n.Runtime.WaitFor(ctx, seq) }

// Folded returns the event folded with id, read from the log at the
// sequence the read models recorded for that id.
func (n *Node) Folded(ctx context.Context, id string) (*events.Event, events.Result, bool, error) {
	seq, ok, err := n.Store.EventSeq(id)
	if err != nil || !ok {
		return nil, events.Result{}, false, err
	}
	st, err := n.JS.Stream(ctx, events.LogStream)
	if err != nil {
		return nil, events.Result{}, false, fmt.Errorf("folded %s: %w", id, err)
	}
	msg, err := st.GetMsg(ctx, seq)
	if err != nil {
		return nil, events.Result{}, false, fmt.Errorf("folded %s: get seq %d: %w", id, seq, err)
	}
	ev, err := events.Decode(msg.Data)
	if err != nil {
		return nil, events.Result{}, false, fmt.Errorf("folded %s at seq %d: %w", id, seq, err)
	}
	ev.Seq, ev.Received = seq, msg.Time
	ev.Request = msg.Header.Get(events.RequestHeader)
	return ev, events.Result{ID: ev.ID, Seq: seq, Subject: msg.Subject}, true, nil
}

// Serve starts the API service on the node's connection.
func (n *Node) Serve(o api.Options) (micro.Service, error) {
	if o.Logger == nil {
		o.Logger = n.log
	}
	svc, err := api.Serve(n.NC, n, o)
	if err != nil {
		return nil, err
	}
	// The endpoints' subscriptions are registered once the server has seen
	// them: flush, so a request sent right after Serve finds a responder.
	if err := n.NC.Flush(); err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("serve: flush subscriptions: %w", err)
	}
	return svc, nil
}
