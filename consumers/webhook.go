package consumers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
)

// Webhook headers. NB: must not change: receivers read them.
const (
	// HeaderSignature is "sha256=<hex HMAC-SHA256 of the body>" with the
	// shared secret; absent when no secret is configured.
	HeaderSignature = "Lore-Signature"
	// HeaderEventID is the announcement's id: deterministic per cause, so a
	// receiver deduplicates redeliveries with it.
	HeaderEventID = "Lore-Event-Id"
	// HeaderEventType is the announcement's versioned type.
	HeaderEventType = "Lore-Event-Type"
	// HeaderDeliverySeq is the announcement's sequence in LORE_DERIVED.
	HeaderDeliverySeq = "Lore-Delivery-Seq"
	// HeaderAttempt counts POST attempts of this process for the delivery.
	HeaderAttempt = "Lore-Attempt"
)

// Sign returns the Lore-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of body keyed with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature with secret (constant time).
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(strings.TrimSpace(sig)))
}

// WebhookConfig configures a webhook deliverer.
type WebhookConfig struct {
	// URL receives a POST per announcement (http or https).
	URL string
	// Secret signs every body (Lore-Signature); empty: unsigned.
	Secret string
	// Options select announcements and name the durable consumer
	// ("lore-webhook-<name>"; default name "default").
	Options
	// Client sends the requests (default: 10 s timeout per attempt).
	Client *http.Client
	// InitialInterval and MaxInterval shape the retry backoff (default
	// 500 ms and 1 min); MaxElapsed gives up on a delivery after this long
	// without acknowledging it, ending Run with an error (0: retry until the
	// context ends).
	InitialInterval, MaxInterval, MaxElapsed time.Duration
	Logger                                   *slog.Logger
	// OnDelivered, when set, is called after each acknowledged delivery.
	OnDelivered func(d *Delivery)
}

func (c *WebhookConfig) setDefaults() {
	if c.Name == "" {
		c.Name = "default"
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if c.InitialInterval <= 0 {
		c.InitialInterval = 500 * time.Millisecond
	}
	if c.MaxInterval <= 0 {
		c.MaxInterval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ValidateURL checks that s is a URL a webhook can POST to: http or https,
// with a host.
func ValidateURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %q: must be an http:// or https:// URL", ErrInvalidOption, s)
	}
	return nil
}

// Validate checks the URL, the name and the filter.
func (c *WebhookConfig) Validate() error {
	if err := ValidateURL(c.URL); err != nil {
		return err
	}
	if _, err := DurableName("webhook", c.Name); err != nil {
		return err
	}
	return c.Filter.Validate()
}

// Webhook delivers announcements to a URL: one POST per announcement, in
// stream order, with the envelope JSON as body.
//
// INVARIANT: an announcement is acknowledged only after a 2xx answer, so
// every announcement reaches the receiver at least once, also across
// restarts; a receiver deduplicates with Lore-Event-Id.
type Webhook struct {
	cfg WebhookConfig
	js  jetstream.JetStream
}

// NewWebhook returns a deliverer; Run starts it.
func NewWebhook(js jetstream.JetStream, cfg WebhookConfig) (*Webhook, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Webhook{cfg: cfg, js: js}, nil
}

// Run delivers until ctx ends (then it returns nil) or a delivery exceeds
// MaxElapsed.
func (w *Webhook) Run(ctx context.Context) error {
	sub, err := subscribe(ctx, w.js, "webhook", w.cfg.Options)
	if err != nil {
		return err
	}
	defer sub.Stop()
	w.cfg.Logger.Info("webhook delivering", "url", w.cfg.URL, "consumer", sub.Durable())
	for {
		d, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := w.deliver(ctx, d); err != nil {
			// Not acknowledged: hand it back so the next run delivers it
			// at once rather than after AckWait.
			_ = d.Nak()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Acknowledge even when ctx ends meanwhile: the receiver has it,
		// and an unacknowledged delivery would come again only after
		// AckWait. The server's confirmation is awaited with the
		// JetStream default timeout.
		if err := d.Ack(context.WithoutCancel(ctx)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if w.cfg.OnDelivered != nil {
			w.cfg.OnDelivered(d)
		}
	}
}

// deliver POSTs d until a 2xx answer, with exponential backoff, telling the
// server the delivery is in progress between attempts.
func (w *Webhook) deliver(ctx context.Context, d *Delivery) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = w.cfg.InitialInterval
	b.MaxInterval = w.cfg.MaxInterval
	b.MaxElapsedTime = w.cfg.MaxElapsed
	attempt := 0
	op := func() error {
		attempt++
		err := w.post(ctx, d, attempt)
		if err != nil {
			w.cfg.Logger.Warn("webhook delivery failed; retrying", "event", d.Event.ID, "attempt", attempt, "err", err)
			_ = d.InProgress()
		}
		return err
	}
	if err := backoff.Retry(op, backoff.WithContext(b, ctx)); err != nil {
		return fmt.Errorf("deliver %s (%s) to %s after %d attempts: %w", d.Event.ID, d.Event.Type, w.cfg.URL, attempt, err)
	}
	return nil
}

// errStatus is a non-2xx answer.
var errStatus = errors.New("webhook answered non-2xx")

func (w *Webhook) post(ctx context.Context, d *Delivery, attempt int) error {
	actx, cancel := context.WithTimeout(ctx, w.cfg.Client.Timeout+time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.cfg.URL, bytes.NewReader(d.Body))
	if err != nil {
		return backoff.Permanent(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lore-webhook/1")
	req.Header.Set(HeaderEventID, d.Event.ID)
	req.Header.Set(HeaderEventType, d.Event.Type)
	req.Header.Set(HeaderDeliverySeq, strconv.FormatUint(d.Seq, 10))
	req.Header.Set(HeaderAttempt, strconv.Itoa(attempt))
	if w.cfg.Secret != "" {
		req.Header.Set(HeaderSignature, Sign([]byte(w.cfg.Secret), d.Body))
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %s", errStatus, resp.Status)
	}
	return nil
}
