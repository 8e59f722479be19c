// Package node assembles one lore process: an embedded NATS server with
// JetStream (or a connection to an existing one), lore's streams, the Pebble
// store, the projector runtime, the periodic clock tick and the API.
package node

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedOptions configure the embedded NATS server.
type EmbeddedOptions struct {
	// StoreDir holds JetStream's files.
	StoreDir string
	// Host and Port to listen on; lore listens on loopback only by default,
	// and beyond it only with Security authenticating clients. Port -1
	// picks a free port.
	Host string
	Port int
	// SyncAlways fsyncs every message before acknowledging it (`--fsync
	// always`): no acknowledged event is lost even on power loss, at ~1/10
	// of the append rate. The default syncs every 2 minutes; a process crash
	// loses nothing either way.
	SyncAlways bool
	// ServerName names the server (required in a cluster).
	ServerName string
	// Cluster, when set, joins a JetStream cluster on these routes.
	ClusterName string
	ClusterHost string
	ClusterPort int
	Routes      []string
	// MaxMemory and MaxStore bound JetStream (0: server defaults).
	MaxMemory, MaxStore int64
	// Security: the authentication and TLS clients must present. A Host
	// beyond loopback is refused without authentication (CheckListen).
	Security Security
	// MaxPayload bounds one message, a request or a reply, in bytes (0:
	// DefaultMaxPayload). An API reply beyond it is answered with an
	// error naming both sizes (API code 413).
	MaxPayload int32
}

// DefaultMaxPayload is the embedded server's max_payload: 8 MiB, the most
// NATS recommends (it allows up to 64 MiB).
const DefaultMaxPayload = 8 << 20

// StartEmbedded starts a NATS server with JetStream and waits until it
// accepts connections. A configuration it refuses (see Security) returns an
// error wrapping ErrInvalidConfig before anything starts.
func StartEmbedded(o EmbeddedOptions) (*server.Server, error) {
	s, _, err := startEmbedded(o)
	return s, err
}

// startEmbedded is StartEmbedded that also returns the options this
// process's own connection to the server needs (see configureServer).
func startEmbedded(o EmbeddedOptions) (*server.Server, []nats.Option, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if err := o.Security.validateServer(o.Host); err != nil {
		return nil, nil, err
	}
	opts := &server.Options{
		ServerName:         o.ServerName,
		Host:               o.Host,
		Port:               o.Port,
		JetStream:          true,
		StoreDir:           filepath.Clean(o.StoreDir),
		JetStreamMaxMemory: o.MaxMemory,
		JetStreamMaxStore:  o.MaxStore,
		SyncAlways:         o.SyncAlways,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         o.MaxPayload,
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	if o.ClusterName != "" {
		// Routes carry no authentication here: they stay on loopback (a
		// cluster across machines is a NATS deployment lore joins with --nats).
		if !IsLoopback(o.ClusterHost) {
			return nil, nil, fmt.Errorf("%w: cluster listener %q is beyond loopback", ErrInvalidConfig, o.ClusterHost)
		}
		opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: o.ClusterHost, Port: o.ClusterPort}
		for _, r := range o.Routes {
			u := server.RoutesFromStr(r)
			if len(u) == 0 {
				return nil, nil, fmt.Errorf("route %q: not a nats-route:// URL", r)
			}
			opts.Routes = append(opts.Routes, u...)
		}
	}
	self, err := o.Security.configureServer(opts)
	if err != nil {
		return nil, nil, err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("embedded nats: %w", err)
	}
	// A listener that cannot open (a port in use) is reported by the
	// server's Fatalf and the server never becomes ready: fail with that
	// reason at once instead of waiting out the start-up bound.
	fatal := make(chan string, 1)
	s.SetLoggerV2(fatalLogger(fatal), false, false, false)
	go s.Start()
	ready := make(chan bool, 1)
	go func() { ready <- s.ReadyForConnections(15 * time.Second) }()
	select {
	case ok := <-ready:
		if !ok {
			s.Shutdown()
			return nil, nil, fmt.Errorf("embedded nats on %s:%d did not start within 15s", o.Host, o.Port)
		}
	case msg := <-fatal:
		s.Shutdown()
		return nil, nil, fmt.Errorf("embedded nats on %s:%d: %s", o.Host, o.Port, msg)
	}
	return s, self, nil
}

// fatalLogger passes the embedded server's first fatal message on (the
// server logs nothing else: lore reports what matters itself).
type fatalLogger chan<- string

func (l fatalLogger) Fatalf(format string, v ...any) {
	select {
	case l <- fmt.Sprintf(format, v...):
	default:
	}
}
func (fatalLogger) Noticef(string, ...any) {}
func (fatalLogger) Warnf(string, ...any)   {}
func (fatalLogger) Errorf(string, ...any)  {}
func (fatalLogger) Debugf(string, ...any)  {}
func (fatalLogger) Tracef(string, ...any)  {}

// selfURL is the URL this process dials its own server on: loopback even
// when the server listens on every interface.
func selfURL(s *server.Server) string {
	u := s.ClientURL()
	for _, every := range []string{"//0.0.0.0:", "//[::]:"} {
		u = strings.Replace(u, every, "//127.0.0.1:", 1)
	}
	return u
}
