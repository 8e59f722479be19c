package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/events"
)

func init() { addCommand(newCmdWebhook) }

type webhookOptions struct {
	url, secret, types, name string
	all                      bool
}

func newCmdWebhook(f *Factory) *cobra.Command {
	var o webhookOptions
	cmd := &cobra.Command{
		Use:   "webhook --url URL [--secret S] [--type ...] [--name N]",
		Short: "POST every announcement to a URL, signed, at least once",
		Long: `Deliver lore's announcements (derived events) to an HTTP endpoint: one POST per
announcement, in order, body = the event envelope as JSON.

With a secret (--secret or LORE_WEBHOOK_SECRET), each request carries
Lore-Signature: sha256=<hex HMAC-SHA256 of the body>. An announcement is
acknowledged only after a 2xx answer and retried with exponential backoff
otherwise; the durable consumer "lore-webhook-<name>" resumes after the last
acknowledged one on restart. Receivers deduplicate with Lore-Event-Id.`,
		Example: `  lore webhook --url https://ci.example.com/lore --secret "$SECRET" --type promoted,inverted`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWebhook(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.url, "url", "", "endpoint receiving the POSTs (required)")
	fl.StringVar(&o.secret, "secret", os.Getenv("LORE_WEBHOOK_SECRET"), "HMAC secret signing each body (env LORE_WEBHOOK_SECRET)")
	fl.StringVar(&o.types, "type", "", "announcements to deliver, comma-separated (default: all)")
	fl.StringVar(&o.name, "name", "default", "durable name: resume where this webhook stopped")
	fl.BoolVar(&o.all, "all", false, "on the first run, deliver every announcement since the beginning")
	declare(fl, rules{"url": domain("webhook-url"), "type": domain("announcement-types"), "name": domain("consumer-name")})
	freeText(fl, "secret")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// webhookConfig builds a deliverer's configuration from flags.
func webhookConfig(o webhookOptions, project string, logger *slog.Logger) consumers.WebhookConfig {
	return consumers.WebhookConfig{URL: o.url, Secret: o.secret, Logger: logger,
		Options: consumers.Options{Name: o.name, All: o.all,
			Filter: consumers.Filter{Types: consumers.ParseTypes(o.types), Project: project}}}
}

func runWebhook(ctx context.Context, f *Factory, o webhookOptions) error {
	logger := slog.New(slog.NewTextHandler(f.Err, nil))
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	js, err := events.NewJetStream(nc)
	if err != nil {
		return err
	}
	wh, err := consumers.NewWebhook(js, webhookConfig(o, f.Project, logger))
	if err != nil {
		if errors.Is(err, consumers.ErrInvalidOption) {
			return fmt.Errorf("%w: %v", errBadInput, err)
		}
		return err
	}
	fmt.Fprintf(f.Err, "delivering announcements to %s (consumer lore-webhook-%s); Ctrl-C to stop\n", o.url, o.name)
	return wh.Run(ctx)
}
