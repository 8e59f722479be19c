package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Client calls lore's endpoints over a NATS connection.
type Client struct {
	nc *nats.Conn
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

// Call sends req to lore.api.<group>.<name> and decodes the reply into out
// (when out is non-nil). A remote error is returned as *Error, which matches
// app.ErrBadRequest / ErrNotFound / ErrConflict with errors.Is.
func (c *Client) Call(ctx context.Context, group, name string, req Request, out any) error {
	raw, err := c.CallRaw(ctx, group, name, req)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode reply of %s.%s: %w", group, name, err)
	}
	return nil
}

// CallRaw is Call returning the reply's JSON bytes.
func (c *Client) CallRaw(ctx context.Context, group, name string, req Request) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	subj := "lore.api." + group + "." + name
	msg, err := c.nc.RequestWithContext(ctx, subj, body)
	if err != nil {
		if err == nats.ErrNoResponders {
			return nil, fmt.Errorf("call %s: no lore server answers on this NATS (is `lore serve` running?): %w", subj, err)
		}
		return nil, fmt.Errorf("call %s: %w", subj, err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		return nil, &Error{Code: code, Message: msg.Header.Get(micro.ErrorHeader)}
	}
	return msg.Data, nil
}
