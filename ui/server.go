// Package ui is lore's web dashboard: server-rendered pages (html/template,
// a little plain JavaScript for the live stream, SVG plots) over the same
// app endpoints the NATS API serves, called in process through the same
// pipeline. A page reads through queries; an action is a command; so the
// dashboard can do nothing the API cannot.
//
// Every page takes the audit control (as_of: an event time; at_seq: a log
// sequence) and answers from the state folded up to that point, as the
// CLI's --as-of and --at-seq do.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// DefaultAddr is the dashboard's default address: loopback, a port of its
// own (NATS listens on 4222, metrics on 9464).
const DefaultAddr = "127.0.0.1:7778"

// URLFile is the file in the data folder where `lore serve` writes the
// dashboard's URL for `lore ui`. NB: must not change: `lore ui` reads it.
const URLFile = "ui.url"

// ErrInvalidOption is returned (wrapped, naming the option) by New for a
// configuration it cannot serve.
var ErrInvalidOption = errors.New("lore: invalid dashboard option")

// Auth is the credential the dashboard requires: the user and password, or
// the token, the API requires (HTTP basic authentication: the user and
// password, or any user with the token as password; or "Authorization:
// Bearer <token>"). Zero: no authentication (loopback only).
type Auth struct {
	User, Password, Token string
}

// Enabled reports whether a credential is required.
func (a Auth) Enabled() bool { return a.User != "" || a.Token != "" }

// Config configures the dashboard.
type Config struct {
	// Backend is the lore process (node.Node); every page and action goes
	// through app.NewPipeline(Backend).
	Backend app.Backend
	// JS reads the announcements (LORE_DERIVED) for the live page.
	JS jetstream.JetStream
	// Project is the project shown when the page names none (default
	// events.DefaultProject).
	Project string
	// Auth is required of every request when set.
	Auth Auth
	// TLSCert and TLSKey, when set, serve HTTPS (the API's certificate:
	// a password then never crosses the network in clear).
	TLSCert, TLSKey string
	Logger          *slog.Logger
	// Clock is the wall clock (default time.Now).
	Clock func() time.Time
}

// Server serves the dashboard.
type Server struct {
	cfg   Config
	p     *app.Pipeline
	pages map[string]*template.Template
	csrf  string // form token: every POST carries it
	live  *hub
	cache *seriesCache
	mux   *http.ServeMux
}

// New returns the dashboard over cfg.Backend.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, fmt.Errorf("%w: Backend is required", ErrInvalidOption)
	}
	if cfg.Auth.Password != "" && cfg.Auth.User == "" {
		return nil, fmt.Errorf("%w: password without user", ErrInvalidOption)
	}
	if cfg.Project == "" {
		cfg.Project = events.DefaultProject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("dashboard token: %w", err)
	}
	s := &Server{cfg: cfg, p: app.NewPipeline(cfg.Backend), csrf: hex.EncodeToString(tok),
		cache: newSeriesCache(256), mux: http.NewServeMux()}
	s.p.Clock = cfg.Clock
	s.live = newHub(cfg.JS, cfg.Logger)
	if err := s.parse(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/live?"+r.URL.RawQuery, http.StatusSeeOther)
	})
	s.mux.HandleFunc("GET /live", s.livePage)
	s.mux.HandleFunc("GET /live/stream", s.liveStream)
	s.mux.HandleFunc("GET /patterns", s.patternsPage)
	s.mux.HandleFunc("GET /patterns/show", s.patternPage)
	s.mux.HandleFunc("POST /patterns/action", s.patternAction)
	s.mux.HandleFunc("GET /criteria", s.criteriaPage)
	s.mux.HandleFunc("GET /knowledge", s.knowledgePage)
	s.mux.HandleFunc("GET /knowledge/show", s.entryPage)
	s.mux.HandleFunc("POST /knowledge/action", s.entryAction)
	s.mux.HandleFunc("POST /knowledge/inject", s.injectAction)
	s.mux.HandleFunc("GET /crossloop", s.crossloopPage)
	s.mux.HandleFunc("GET /audit", s.auditPage)
}

// Scheme is "https" when the dashboard serves TLS, else "http".
func (s *Server) Scheme() string {
	if s.cfg.TLSCert != "" {
		return "https"
	}
	return "http"
}

// Handler is the dashboard's HTTP handler, authentication included.
func (s *Server) Handler() http.Handler { return s.authenticate(s.mux) }

// Serve listens on addr and serves until ctx ends. The address is refused
// beyond loopback unless a credential is required (node.CheckListen). It
// returns once listening, with the address bound; done is closed when the
// server has stopped.
func (s *Server) Serve(ctx context.Context, addr string) (bound net.Addr, done <-chan struct{}, err error) {
	if err := node.CheckListen("--ui", addr, s.cfg.Auth.Enabled()); err != nil {
		return nil, nil, err
	}
	var tlsConfig *tls.Config
	if s.cfg.TLSCert != "" || s.cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: dashboard TLS certificate: %v", ErrInvalidOption, err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dashboard: listen %s: %w", addr, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	ctx, cancel := context.WithCancel(ctx)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	ch := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.live.run(ctx, s) }()
	go func() {
		defer wg.Done()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Warn("dashboard stopped", "err", err)
		}
		cancel()
	}()
	go func() {
		<-ctx.Done()
		sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hs.Shutdown(sctx)
		stop()
		wg.Wait()
		close(ch)
	}()
	return ln.Addr(), ch, nil
}

// authenticate requires the configured credential of every request, and a
// same-origin form token of every POST (a browser holding basic
// credentials must not be made to act by another site).
func (s *Server) authenticate(next http.Handler) http.Handler {
	a := s.cfg.Auth
	eq := func(x, y string) bool { return subtle.ConstantTimeCompare([]byte(x), []byte(y)) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'")
		if a.Enabled() {
			ok := false
			if u, p, has := r.BasicAuth(); has {
				ok = (a.User != "" && eq(u, a.User) && eq(p, a.Password)) || (a.Token != "" && eq(p, a.Token))
			} else if b, has := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); has {
				ok = a.Token != "" && eq(b, a.Token)
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="lore", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if r.Method == http.MethodPost {
			if o := r.Header.Get("Origin"); o != "" && o != "null" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					http.Error(w, "cross-origin form refused", http.StatusForbidden)
					return
				}
			}
			if !eq(r.PostFormValue("csrf"), s.csrf) {
				http.Error(w, "form token missing or stale: reload the page", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// view is what a request asks of every page: the project and the audit
// point.
type view struct {
	Project string
	AsOf    *time.Time
	AtSeq   uint64
	// AsOfText and AtSeqText are the control's values as entered.
	AsOfText, AtSeqText string
}

// Audit reports whether the page shows a past state.
func (v view) Audit() bool { return v.AsOf != nil || v.AtSeq > 0 }

// Query is the view's query string (project and audit point), for links.
func (v view) Query() string {
	q := url.Values{}
	if v.Project != "" {
		q.Set("project", v.Project)
	}
	if v.AsOfText != "" {
		q.Set("as_of", v.AsOfText)
	}
	if v.AtSeqText != "" {
		q.Set("at_seq", v.AtSeqText)
	}
	return q.Encode()
}

// parseView reads the project and audit control. A bad value is bad input,
// named.
func (s *Server) parseView(r *http.Request) (view, error) {
	v := view{Project: strings.TrimSpace(r.FormValue("project"))}
	if v.Project == "" {
		v.Project = s.cfg.Project
	}
	if t := strings.TrimSpace(r.FormValue("as_of")); t != "" {
		at, err := parseTime(t)
		if err != nil {
			return v, fmt.Errorf("%w: as_of %q: %v", app.ErrBadRequest, t, err)
		}
		v.AsOf, v.AsOfText = &at, t
	}
	if t := strings.TrimSpace(r.FormValue("at_seq")); t != "" {
		n, err := strconv.ParseUint(t, 10, 64)
		if err != nil || n == 0 {
			return v, fmt.Errorf("%w: at_seq %q: must be a log sequence >= 1", app.ErrBadRequest, t)
		}
		v.AtSeq, v.AtSeqText = n, t
	}
	return v, nil
}

// parseTime reads RFC 3339, or the browser's datetime-local value
// (2006-01-02T15:04[:05]) taken as UTC.
func parseTime(t string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if at, err := time.Parse(layout, t); err == nil {
			return at.UTC(), nil
		}
	}
	return time.Time{}, errors.New("want an RFC 3339 time (2026-03-01T00:00:00Z) or a date")
}

// query calls a query endpoint through the pipeline at the view's audit
// point and returns its answer as JSON values (maps, slices, float64), the
// answer the API sends.
func (s *Server) query(ctx context.Context, v view, group, name string, args any) (any, error) {
	return s.queryAt(ctx, v, group, name, args, nil)
}

// queryAt is query with decay evaluated at now (nil: the audit point or
// the wall clock).
func (s *Server) queryAt(ctx context.Context, v view, group, name string, args any, now *time.Time) (any, error) {
	e, ok := app.Lookup(group, name)
	if !ok {
		return nil, fmt.Errorf("%w: no endpoint %s.%s", app.ErrNotFound, group, name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("%s.%s arguments: %w", group, name, err)
	}
	if args == nil {
		raw = nil
	}
	res, err := s.p.Do(ctx, e, app.Call{Args: raw, Project: v.Project, Source: "dashboard", AsOf: v.AsOf, AtSeq: v.AtSeq, Now: now})
	if err != nil {
		return nil, err
	}
	return toJSON(res)
}

// command calls a command endpoint through the pipeline (never at an
// audit point: the pipeline refuses it).
func (s *Server) command(ctx context.Context, v view, group, name string, args any) (app.CommandReply, error) {
	var reply app.CommandReply
	e, ok := app.Lookup(group, name)
	if !ok || e.Command == nil {
		return reply, fmt.Errorf("%w: no command %s.%s", app.ErrNotFound, group, name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return reply, fmt.Errorf("%s.%s arguments: %w", group, name, err)
	}
	res, err := s.p.Do(ctx, e, app.Call{Args: raw, Project: v.Project, Source: "dashboard", AsOf: v.AsOf, AtSeq: v.AtSeq})
	if err != nil {
		return reply, err
	}
	reply, _ = res.(app.CommandReply)
	return reply, nil
}

// toJSON turns an answer into the JSON values the API would send.
func toJSON(res any) (any, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return out, nil
}

// status maps an error to an HTTP status, as the API maps it to a code.
func status(err error) int {
	switch {
	case errors.Is(err, app.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, app.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, app.ErrConflict):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// Live is the view at the present (the audit point dropped).
func (v view) Live() view { return view{Project: v.Project} }
