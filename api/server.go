package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

// Backend is what the API needs from a lore process.
type Backend interface {
	// Live is the view of the live read models.
	Live() app.View
	// At folds the log into a temporary store up to a time (event time <=
	// asOf) or a sequence, for audits; release frees it.
	At(ctx context.Context, asOf *time.Time, atSeq uint64) (v app.View, release func(), err error)
	// Append stores events (one with optional optimistic concurrency).
	Append(ctx context.Context, evs []*events.Event, expectLastSeq *uint64) ([]events.Result, error)
	// WaitFor blocks until the live read models include seq.
	WaitFor(ctx context.Context, seq uint64) error
}

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
	s := &server{b: b, o: o}
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

type server struct {
	b Backend
	o Options
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
		if rerr := req.RespondJSON(reply); rerr != nil {
			s.o.Logger.Warn("api respond", "endpoint", e.Subject(), "err", rerr)
		}
	}
}

func respondError(req micro.Request, err error) {
	code := CodeOf(err)
	body, _ := json.Marshal(Error{Code: code, Message: err.Error()})
	_ = req.Error(code, err.Error(), body)
}

func (s *server) serve(e app.Endpoint, data []byte) (any, error) {
	var wr Request
	if len(data) > 0 {
		if err := json.Unmarshal(data, &wr); err != nil {
			return nil, fmt.Errorf("%w: request is not JSON {\"args\": ...}: %v", app.ErrBadRequest, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	areq := app.Request{Now: time.Now().UTC(), Project: wr.Project, Source: wr.Source, Args: wr.Args}
	if areq.Project == "" {
		areq.Project = events.DefaultProject
	}
	if wr.Now != nil {
		areq.Now = wr.Now.UTC()
	}
	audit := wr.AsOf != nil || wr.AtSeq > 0
	if audit && e.Command != nil {
		return nil, fmt.Errorf("%w: as_of/at_seq audit only a query, and %s is a command", app.ErrBadRequest, e.Subject())
	}
	view := s.b.Live()
	if audit {
		if wr.AsOf != nil && wr.Now == nil {
			areq.Now = wr.AsOf.UTC()
		}
		v, release, err := s.b.At(ctx, wr.AsOf, wr.AtSeq)
		if err != nil {
			return nil, err
		}
		defer release()
		view = v
	}
	if e.Query != nil {
		return e.Query(ctx, view, areq)
	}
	evs, result, err := e.Command(ctx, view, areq)
	if err != nil {
		return nil, err
	}
	reply := CommandReply{Appended: []events.Result{}}
	if result != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		reply.Result = raw
	}
	if len(evs) == 0 {
		reply.Projected = true
		return reply, nil
	}
	for _, ev := range evs {
		if ev.Source == "" {
			ev.Source = areq.Source
		}
		if ev.Project == "" {
			ev.Project = areq.Project
		}
	}
	res, err := s.b.Append(ctx, evs, wr.ExpectLastSeq)
	if err != nil {
		if errors.Is(err, events.ErrWrongSequence) {
			return nil, fmt.Errorf("%w: %v", app.ErrConflict, err)
		}
		return nil, err
	}
	reply.Appended = res
	if !wr.NoWait {
		var max uint64
		for _, r := range res {
			max = maxU(max, r.Seq)
		}
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		reply.Projected = s.b.WaitFor(wctx, max) == nil
		wcancel()
	}
	return reply, nil
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
