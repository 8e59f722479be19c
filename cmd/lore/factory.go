package main

import (
	"context"
	"crypto/x509"
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
	"github.com/spf13/pflag"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
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
	// ID is the idempotency key of the command's call(s) (--id).
	ID string

	// commandCalls counts the command calls made, naming the n-th one's
	// idempotency key (see Call).
	commandCalls int

	// Sec authenticates and encrypts every NATS connection (the
	// --user/--password/--token/--nkey/--creds/--tls-* flags).
	Sec node.Security

	// Now is the clock; tests replace it.
	Now func() time.Time

	nc *nats.Conn
	// globalFlags tells a flag set from its default (dataExplicit).
	globalFlags *pflag.FlagSet
}

// NewFactory returns a factory on the given streams.
func NewFactory(in io.Reader, out, errw io.Writer) *Factory {
	return &Factory{In: in, Out: out, Err: errw, Now: time.Now}
}

func (f *Factory) bindGlobalFlags(root *cobra.Command) {
	p := root.PersistentFlags()
	f.globalFlags = p
	p.StringVar(&f.NatsURL, "nats", os.Getenv("LORE_NATS"), "NATS URL of a lore deployment (env LORE_NATS; default: the lore serve of --data, else the one started in this folder or a parent, else the one of the default data folder)")
	p.StringVar(&f.DataDir, "data", envOr("LORE_DATA", defaultDataDir()), "data folder (env LORE_DATA); a client talks to the lore serve of this folder")
	p.BoolVar(&f.JSON, "json", false, "print JSON (one object per line for streams)")
	p.StringVar(&f.Project, "project", os.Getenv("LORE_PROJECT"), "project scope (default \"default\")")
	p.StringVar(&f.Source, "source", envOr("LORE_SOURCE", "cli"), "who reports: agent, loop id or user")
	p.StringVar(&f.AsOf, "as-of", "", "audit: answer from the state as of this time (RFC 3339), decay evaluated then")
	p.Uint64Var(&f.AtSeq, "at-seq", 0, "audit: answer from the state after this stream sequence")
	p.StringVar(&f.NowFlag, "now", "", "evaluate decay at this time (RFC 3339) instead of the clock")
	p.DurationVar(&f.Timeout, "timeout", 30*time.Second, "time limit of one call to lore")
	p.StringVar(&f.Sec.User, "user", os.Getenv("LORE_NATS_USER"), "NATS user (env LORE_NATS_USER); lore serve requires it of clients")
	p.StringVar(&f.Sec.Password, "password", os.Getenv("LORE_NATS_PASSWORD"), "NATS password (env LORE_NATS_PASSWORD)")
	p.StringVar(&f.Sec.Token, "token", os.Getenv("LORE_NATS_TOKEN"), "NATS token (env LORE_NATS_TOKEN)")
	p.StringVar(&f.Sec.Nkey, "nkey", os.Getenv("LORE_NATS_NKEY"), "NATS nkey seed file (env LORE_NATS_NKEY); lore serve also takes a user public key")
	p.StringVar(&f.Sec.Creds, "creds", os.Getenv("LORE_NATS_CREDS"), "NATS JWT credentials file, for a cluster in operator mode (env LORE_NATS_CREDS)")
	p.StringVar(&f.Sec.TLSCA, "tls-ca", os.Getenv("LORE_NATS_TLS_CA"), "CA certificate that signed the NATS server's (env LORE_NATS_TLS_CA)")
	p.StringVar(&f.Sec.TLSCert, "tls-cert", os.Getenv("LORE_NATS_TLS_CERT"), "certificate: lore serve's own, or a client's for mutual TLS (env LORE_NATS_TLS_CERT)")
	p.StringVar(&f.Sec.TLSKey, "tls-key", os.Getenv("LORE_NATS_TLS_KEY"), "key of --tls-cert (env LORE_NATS_TLS_KEY)")
	p.StringVar(&f.ID, "id", "", "idempotency key of a command that appends: its event id; re-running the command with the same --id appends nothing new and prints the same decision; another command under a used --id is refused")
	declare(p, rules{"nats": domain("nats-urls"), "as-of": timestamp, "at-seq": atLeast(0), "now": timestamp, "timeout": above(0), "id": domain("idempotency-key"),
		"project": schemaField("envelope.v1.json", "project", "two words"), "source": schemaField("envelope.v1.json", "source", strings.Repeat("s", 257))})
	freeText(p, "data")
	freeText(p, "user", "password", "token", "nkey", "creds", "tls-ca", "tls-cert", "tls-key")
}

// onlySet marshals args to a JSON object and drops every key whose flags
// the user did not set (keys maps an argument key to the flags setting
// it), so that a flag left out reaches lore as a missing argument —
// refused when the event's schema requires it — never as the flag's
// default value.
func onlySet(cmd *cobra.Command, args any, keys map[string][]string) (map[string]any, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	out := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	for key, flags := range keys {
		set := false
		for _, fl := range flags {
			set = set || cmd.Flags().Changed(fl)
		}
		if !set {
			delete(out, key)
		}
	}
	return out, nil
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

// Conn dials NATS once, lazily, at the lore found by resolveTarget. A
// server whose id differs from the one its serve record names is refused.
func (f *Factory) Conn() (*nats.Conn, error) {
	if f.nc != nil {
		return f.nc, nil
	}
	t, err := f.resolveTarget()
	if err != nil {
		return nil, err
	}
	auth, err := f.Sec.ClientOptions()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(t.url, append([]nats.Option{nats.Name("lore-cli"), nats.Timeout(5 * time.Second)}, auth...)...)
	if err != nil {
		if t.serverID != "" {
			return nil, fmt.Errorf("connect to lore at %s, found from %s (is it still running? start it again, or pass --data DIR or --nats URL): %w", t.url, t.from, err)
		}
		return nil, fmt.Errorf("connect to lore at %s (%s): %w", t.url, connectHint(err), err)
	}
	if t.serverID != "" && nc.ConnectedServerId() != t.serverID {
		got := nc.ConnectedServerId()
		nc.Close()
		return nil, fmt.Errorf("%w: %s is answered by NATS server %s, not by %s recorded by %s: that lore stopped; start it again, or pass --data DIR or --nats URL",
			errNoLore, t.url, got, t.serverID, t.from)
	}
	f.nc = nc
	return nc, nil
}

// connectHint says what to do about a failed connection.
func connectHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return "it requires authentication: pass --user and --password, --token, --nkey or --creds, " +
			"or set LORE_NATS_USER/LORE_NATS_PASSWORD, LORE_NATS_TOKEN, LORE_NATS_NKEY or LORE_NATS_CREDS"
	case errors.As(err, &unknownCA):
		return "its certificate is signed by a CA this client does not trust: pass --tls-ca or set LORE_NATS_TLS_CA"
	case errors.As(err, &badHost):
		return "its certificate is not valid for this address: pass --nats with a name the certificate holds"
	case errors.Is(err, nats.ErrSecureConnRequired):
		return "it serves TLS: pass --tls-ca with the CA of its certificate, or set LORE_NATS_TLS_CA"
	case errors.Is(err, nats.ErrSecureConnWanted):
		return "it does not serve TLS: drop --tls-ca/--tls-cert (and LORE_NATS_TLS_*), or start it with --tls-cert and --tls-key"
	default:
		return "start it with `lore serve`, or pass --nats"
	}
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
// With --id, a command call carries it as its idempotency key: the first
// command call of a CLI command the key itself, the n-th "<key>/<n>", so
// a command that makes several calls (imports in parts) names each the
// same way on every run.
func (f *Factory) Call(ctx context.Context, group, name string, args any, out any) error {
	raw, err := f.call(ctx, group, name, args, false)
	if err != nil {
		return err
	}
	return decodeReply(group, name, raw, out)
}

// Command invokes the command lore.api.<group>.<name> (as Call does) and
// returns its whole reply; with noWait the reply comes once the events
// are stored, before they are folded (pending).
func (f *Factory) Command(ctx context.Context, group, name string, args any, noWait bool) (api.CommandReply, error) {
	var reply api.CommandReply
	raw, err := f.call(ctx, group, name, args, noWait)
	if err != nil {
		return reply, err
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return reply, fmt.Errorf("decode reply of %s.%s: %w", group, name, err)
	}
	return reply, nil
}

func (f *Factory) call(ctx context.Context, group, name string, args any, noWait bool) (json.RawMessage, error) {
	req, err := f.Request(args)
	if err != nil {
		return nil, err
	}
	req.NoWait = noWait
	if e, ok := app.Lookup(group, name); ok && e.Command != nil && f.ID != "" {
		f.commandCalls++
		req.IdempotencyKey = f.ID
		if f.commandCalls > 1 {
			req.IdempotencyKey = fmt.Sprintf("%s/%d", f.ID, f.commandCalls)
		}
	}
	nc, err := f.Conn()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	return api.NewClient(nc).CallRaw(ctx, group, name, req)
}

// decodeReply decodes an endpoint's reply into out (when non-nil). A
// command answers with {appended, projected, result}: out receives the
// command's own result (or the whole reply when it has none).
func decodeReply(group, name string, raw json.RawMessage, out any) error {
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
	return errors.Is(err, errBadInput) || errors.Is(err, app.ErrBadRequest) || errors.Is(err, node.ErrInvalidConfig) ||
		errors.Is(err, events.ErrInvalidEvent) || isFlagError(err)
}

func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.Contains(s, "flag needs an argument") ||
		strings.HasPrefix(s, "invalid argument") || strings.Contains(s, "accepts ") ||
		strings.HasPrefix(s, "required flag")
}
