package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

// Factory carries the CLI's streams, global flags and lazy dependencies, so
// that --help and version dial nothing.
type Factory struct {
	In       io.Reader
	Out, Err io.Writer

	// global flags
	NatsURL string
	DataDir string
	JSON    bool
	Project string
	Source  string
	AsOf    string
	AtSeq   uint64
	NowFlag string
	Timeout time.Duration

	// Now is the clock; tests replace it.
	Now func() time.Time

	nc *nats.Conn
}

// NewFactory returns a factory on the given streams.
func NewFactory(in io.Reader, out, errw io.Writer) *Factory {
	return &Factory{In: in, Out: out, Err: errw, Now: time.Now}
}

func (f *Factory) bindGlobalFlags(root *cobra.Command) {
	p := root.PersistentFlags()
	p.StringVar(&f.NatsURL, "nats", os.Getenv("LORE_NATS"), "NATS URL of a lore deployment (default: the URL lore serve wrote in the data folder, else nats://127.0.0.1:4222)")
	p.StringVar(&f.DataDir, "data", envOr("LORE_DATA", defaultDataDir()), "data folder")
	p.BoolVar(&f.JSON, "json", false, "print JSON (one object per line for streams)")
	p.StringVar(&f.Project, "project", os.Getenv("LORE_PROJECT"), "project scope (default \"default\")")
	p.StringVar(&f.Source, "source", envOr("LORE_SOURCE", "cli"), "who reports: agent, loop id or user")
	p.StringVar(&f.AsOf, "as-of", "", "audit: answer from the state as of this time (RFC 3339), decay evaluated then")
	p.Uint64Var(&f.AtSeq, "at-seq", 0, "audit: answer from the state after this stream sequence")
	p.StringVar(&f.NowFlag, "now", "", "evaluate decay at this time (RFC 3339) instead of the clock")
	p.DurationVar(&f.Timeout, "timeout", 30*time.Second, "time limit of one call to lore")
	declare(p, rules{"nats": domain("nats-urls"), "as-of": timestamp, "at-seq": atLeast(0), "now": timestamp, "timeout": above(0),
		"project": schemaField("envelope.v1.json", "project", "two words"), "source": schemaField("envelope.v1.json", "source", strings.Repeat("s", 257))})
	freeText(p, "data")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "lore")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "lore")
	}
	return ".lore"
}

// urlFile is where `lore serve` writes the client URL of its NATS server.
const urlFile = "nats.url"

// natsURL resolves which NATS to dial.
func (f *Factory) natsURL() string {
	if f.NatsURL != "" {
		return f.NatsURL
	}
	if b, err := os.ReadFile(filepath.Join(f.DataDir, urlFile)); err == nil {
		if u := strings.TrimSpace(string(b)); u != "" {
			return u
		}
	}
	return "nats://127.0.0.1:4222"
}

// Conn dials NATS once, lazily.
func (f *Factory) Conn() (*nats.Conn, error) {
	if f.nc != nil {
		return f.nc, nil
	}
	url := f.natsURL()
	nc, err := nats.Connect(url, nats.Name("lore-cli"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to lore at %s (start it with `lore serve`, or pass --nats): %w", url, err)
	}
	f.nc = nc
	return nc, nil
}

// Close releases the connection.
func (f *Factory) Close() {
	if f.nc != nil {
		f.nc.Close()
		f.nc = nil
	}
}

// Request builds an API request from args and the global flags.
func (f *Factory) Request(args any) (api.Request, error) {
	req, err := api.NewRequest(args)
	if err != nil {
		return req, err
	}
	req.Project, req.Source, req.AtSeq = f.Project, f.Source, f.AtSeq
	if f.AsOf != "" {
		t, err := parseTime(f.AsOf)
		if err != nil {
			return req, fmt.Errorf("%w: --as-of: %v", errBadInput, err)
		}
		req.AsOf = &t
	}
	if f.NowFlag != "" {
		t, err := parseTime(f.NowFlag)
		if err != nil {
			return req, fmt.Errorf("%w: --now: %v", errBadInput, err)
		}
		req.Now = &t
	}
	return req, nil
}

// Call invokes lore.api.<group>.<name> with args and decodes into out.
func (f *Factory) Call(ctx context.Context, group, name string, args any, out any) error {
	req, err := f.Request(args)
	if err != nil {
		return err
	}
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	raw, err := api.NewClient(nc).CallRaw(ctx, group, name, req)
	if err != nil {
		return err
	}
	// A command answers with {appended, projected, result}: the CLI shows
	// the command's own result (or the whole reply when it has none).
	if e, ok := app.Lookup(group, name); ok && e.Command != nil {
		var reply api.CommandReply
		if err := json.Unmarshal(raw, &reply); err == nil && len(reply.Result) > 0 {
			raw = reply.Result
		}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode reply of %s.%s: %w", group, name, err)
	}
	return nil
}

// PrintJSON writes v as indented JSON (one value) to Out.
func (f *Factory) PrintJSON(v any) error {
	enc := json.NewEncoder(f.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseTime accepts RFC 3339 (with or without fractional seconds) or a date.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (2026-01-02T15:04:05Z) or a date (2026-01-02)", s)
}

// isBadInput reports whether err is the caller's fault.
func isBadInput(err error) bool {
	return errors.Is(err, errBadInput) || errors.Is(err, app.ErrBadRequest) ||
		errors.Is(err, events.ErrInvalidEvent) || isFlagError(err)
}

func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.Contains(s, "flag needs an argument") ||
		strings.HasPrefix(s, "invalid argument") || strings.Contains(s, "accepts ") ||
		strings.HasPrefix(s, "required flag")
}
