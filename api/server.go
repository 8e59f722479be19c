package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/app"
)

// Backend is what the API serves: app's port to a lore process.
type Backend = app.Backend

// ServiceName is the micro service name. NB: must not change: clients and
// `nats micro info lore` use it.
const ServiceName = "lore"

// Options configure the API service.
type Options struct {
	Version string
	Logger  *slog.Logger
	// Timeout bounds one request (default 30 s).
	Timeout time.Duration
	// Observe, when set, receives each request's endpoint, duration and
	// error (metrics).
	Observe func(subject string, d time.Duration, err error)
	// FoldWait bounds a command's wait for the fold of its events before
	// it replies with projected false (default 10 s; the events are in
	// the log either way and are folded later).
	FoldWait time.Duration
}

// Serve registers every app endpoint as a micro service on nc.
func Serve(nc *nats.Conn, b Backend, o Options) (micro.Service, error) {
	if o.Version == "" {
		o.Version = "0.1.0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     o.Version,
		Description: "lore: the learning memory of a swarm of coding agents (record events, query read models, inject context)",
		ErrorHandler: func(_ micro.Service, e *micro.NATSError) {
			o.Logger.Warn("api subscription error", "subject", e.Subject, "err", e.Description)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("add service: %w", err)
	}
	s := &server{p: app.NewPipeline(b), o: o, nc: nc}
	if o.FoldWait > 0 {
		s.p.WaitTimeout = o.FoldWait
	}
	for _, e := range app.Endpoints() {
		kind := "query"
		if e.Command != nil {
			kind = "command"
		}
		err := svc.AddEndpoint(e.Group+"-"+e.Name, s.handler(e),
			micro.WithEndpointSubject(e.Subject()),
			micro.WithEndpointMetadata(map[string]string{"group": e.Group, "kind": kind, "doc": e.Doc}),
			micro.WithEndpointPendingLimits(1<<16, 256<<20))
		if err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("add endpoint %s: %w", e.Subject(), err)
		}
	}
	return svc, nil
}

// server is transport only: wire request → app.Call → app's pipeline,
// and errors → codes.
type server struct {
	p  *app.Pipeline
	o  Options
	nc *nats.Conn
}

func (s *server) handler(e app.Endpoint) micro.HandlerFunc {
	return func(req micro.Request) {
		start := time.Now()
		var err error
		defer func() {
			if r := recover(); r != nil {
				s.o.Logger.Error("api handler panic", "endpoint", e.Subject(), "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("internal error in %s", e.Subject())
				respondError(req, err)
			}
			if s.o.Observe != nil {
				s.o.Observe(e.Subject(), time.Since(start), err)
			}
		}()
		var reply any
		reply, err = s.serve(e, req.Data())
		if err != nil {
			respondError(req, err)
			return
		}
		if err = s.respond(e, req, reply); err != nil {
			s.o.Logger.Warn("api respond", "endpoint", e.Subject(), "err", err)
			respondError(req, err)
		}
	}
}

// respond sends reply as JSON, or returns why it cannot be sent — a reply
// beyond the connection's max payload (ErrTooLarge, with both sizes), an
// encoding or publish error — so that the handler answers that error:
// the caller never waits for its timeout on a reply that was never sent.
func (s *server) respond(e app.Endpoint, req micro.Request, reply any) error {
	body, err := app.EncodeReply(reply)
	if err != nil {
		return fmt.Errorf("%s: encode the reply: %w", e.Subject(), err)
	}
	if limit := s.nc.MaxPayload(); limit > 0 && int64(len(body)) > limit {
		return fmt.Errorf("%w: %s: the reply is %d bytes, beyond the %d bytes a message may carry on this NATS server (max_payload): ask for less (a limit or a filter)",
			app.ErrTooLarge, e.Subject(), len(body), limit)
	}
	if err := req.Respond(body); err != nil {
		return fmt.Errorf("%s: send the reply: %w", e.Subject(), err)
	}
	return nil
}

func respondError(req micro.Request, err error) {
	code := CodeOf(err)
	body, _ := json.Marshal(Error{Code: code, Message: err.Error()})
	_ = req.Error(code, err.Error(), body)
}

func (s *server) serve(e app.Endpoint, data []byte) (any, error) {
	var wr Request
	if err := app.DecodeStrict(data, &wr, "request"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	return s.p.Do(ctx, e, wr.Call())
}
