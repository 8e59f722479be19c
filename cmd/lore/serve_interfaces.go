package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/metrics"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
)

// serveInterfaces are the optional outward interfaces of `lore serve`:
// Prometheus metrics and a webhook deliverer.
type serveInterfaces struct {
	metricsAddr string
	pprof       bool
	webhook     webhookOptions
}

func (o *serveInterfaces) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.metricsAddr, "metrics", envOr("LORE_METRICS", metrics.DefaultAddr), "serve Prometheus /metrics and /healthz on this address (\"\" disables)")
	fl.BoolVar(&o.pprof, "pprof", false, "also serve Go profiles (net/http/pprof) under /debug/pprof/ on the metrics address")
	fl.StringVar(&o.webhook.url, "webhook", "", "also deliver announcements to this URL (see `lore webhook`)")
	fl.StringVar(&o.webhook.secret, "webhook-secret", os.Getenv("LORE_WEBHOOK_SECRET"), "HMAC secret signing webhook bodies (env LORE_WEBHOOK_SECRET)")
	fl.StringVar(&o.webhook.types, "webhook-type", "", "announcements the webhook delivers, comma-separated (default: all)")
	fl.StringVar(&o.webhook.name, "webhook-name", "serve", "durable name of the webhook consumer")
	declare(fl, rules{"metrics": hostPort, "webhook": domain("webhook-url"), "webhook-type": domain("announcement-types"),
		"webhook-name": domain("consumer-name")})
	freeText(fl, "webhook-secret")
}

// started holds what startInterfaces started.
type started struct {
	m      *metrics.Metrics
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// observe is the api.Options.Observe hook (nil without metrics).
func (s *started) observe() func(string, time.Duration, error) {
	if s.m == nil {
		return nil
	}
	return s.m.Observe
}

// running marks the projector running (health).
func (s *started) running(on bool) {
	if s.m != nil {
		s.m.SetProjectorRunning(on)
	}
}

// stop ends the interfaces and waits for them.
func (s *started) stop() { s.cancel(); s.wg.Wait() }

// startInterfaces starts metrics and the webhook on n. A metrics address
// that cannot be bound is a warning, not a failure: lore still serves.
func startInterfaces(ctx context.Context, f *Factory, n *node.Node, logger *slog.Logger, o serveInterfaces) (*started, error) {
	s := &started{}
	var wh *consumers.Webhook
	if o.webhook.url != "" {
		var err error
		wh, err = consumers.NewWebhook(n.JS, webhookConfig(o.webhook, f.Project, logger))
		if err != nil {
			if errors.Is(err, consumers.ErrInvalidOption) {
				return nil, fmt.Errorf("%w: --webhook: %v", errBadInput, err)
			}
			return nil, err
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	if o.metricsAddr != "" {
		s.m = metrics.New(metrics.Config{NC: n.NC, JS: n.JS, Projector: n.Runtime, Profiling: o.pprof,
			Store: func() projector.StoreMemory { return n.Store.Memory() }})
		addr, err := s.m.Serve(ctx, o.metricsAddr)
		if err != nil {
			fmt.Fprintf(f.Err, "lore: metrics disabled: %v\n", err)
		} else {
			fmt.Fprintf(f.Err, "metrics on http://%s/metrics (health: /healthz)\n", addr)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.m.Run(ctx); err != nil {
				logger.Warn("metrics stopped", "err", err)
			}
		}()
	}
	if wh != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := wh.Run(ctx); err != nil {
				fmt.Fprintf(f.Err, "lore: webhook stopped: %v\n", err)
			}
		}()
		fmt.Fprintf(f.Err, "delivering announcements to %s\n", o.webhook.url)
	}
	return s, nil
}
