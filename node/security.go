package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrInvalidConfig is returned (wrapped, naming the option) when a lore
// process is configured in a way it refuses to run: a listener beyond
// loopback without authentication, an unreadable key, options that do not
// go together. Nothing was started.
var ErrInvalidConfig = errors.New("lore: invalid configuration")

// Security is how lore authenticates and encrypts NATS connections. The same
// values configure both sides: the embedded server requires them of its
// clients, and every client (the CLI, MCP, watch, webhooks, snapshots, a
// replica on a cluster) presents them.
type Security struct {
	// User and Password: a NATS user.
	User, Password string
	// Token: a NATS authorization token.
	Token string
	// Nkey is an nkey seed file (clients sign with it; the embedded server
	// accepts its public key) or, for the embedded server only, a user
	// public key ("U…") given as is or in a file.
	Nkey string
	// Creds is a JWT credentials file for a NATS deployment in operator
	// mode (clients only: the embedded server has no operator).
	Creds string
	// TLSCA is the CA that signed the server's certificate (clients verify
	// the server with it); with TLSVerify the embedded server also requires
	// client certificates signed by it.
	TLSCA string
	// TLSCert and TLSKey: the embedded server's certificate and key; for a
	// client, its certificate for mutual TLS.
	TLSCert, TLSKey string
	// TLSVerify makes the embedded server require client certificates
	// signed by TLSCA (mutual TLS); it authenticates clients.
	TLSVerify bool
}

// Authenticates reports whether a credential is configured: a user, a
// token, an nkey, JWT creds (clients only) or mutual TLS. On the embedded
// server it means a client that presents nothing is refused.
func (s Security) Authenticates() bool {
	return s.User != "" || s.Token != "" || s.Nkey != "" || s.Creds != "" || s.TLSVerify
}

// IsLoopback reports whether host names only the loopback interface
// ("localhost", 127.0.0.0/8, ::1). An empty or unspecified host (0.0.0.0,
// ::) is every interface and is not loopback; a name other than localhost
// may resolve anywhere and is not either.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses a listener (flag names it, addr is host or
// host:port) beyond loopback unless the process authenticates clients.
// Every listener lore opens is checked with it.
func CheckListen(flag, addr string, authenticated bool) error {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if IsLoopback(host) || authenticated {
		return nil
	}
	if host == "" {
		addr += " (every interface)"
	}
	return fmt.Errorf("%w: %s %s listens beyond loopback without authentication: "+
		"set --user and --password, --token, --nkey, or --tls-verify with --tls-ca (or the LORE_NATS_USER/LORE_NATS_PASSWORD, "+
		"LORE_NATS_TOKEN, LORE_NATS_NKEY environment variables), or listen on 127.0.0.1",
		ErrInvalidConfig, flag, addr)
}

// Validate checks the options of an embedded server: what it cannot honour
// and a listener beyond loopback without authentication.
func (s Security) validateServer(host string) error {
	if s.Creds != "" {
		return fmt.Errorf("%w: --creds (JWT credentials) needs a NATS deployment in operator mode: use it with --nats; "+
			"the embedded server authenticates with --user/--password, --token, --nkey or --tls-verify", ErrInvalidConfig)
	}
	if s.Password != "" && s.User == "" {
		return fmt.Errorf("%w: --password without --user", ErrInvalidConfig)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("%w: the embedded server needs both --tls-cert and --tls-key", ErrInvalidConfig)
	}
	if s.TLSVerify && (s.TLSCA == "" || s.TLSCert == "") {
		return fmt.Errorf("%w: --tls-verify needs --tls-ca (the CA of client certificates) and --tls-cert/--tls-key", ErrInvalidConfig)
	}
	return CheckListen("--host", host, s.Authenticates())
}

// nkeyPublic returns the user public key v stands for: v itself, or the
// public key in (or of the seed in) the file v.
func nkeyPublic(v string) (string, error) {
	if nkeys.IsValidPublicUserKey(v) {
		return v, nil
	}
	raw, err := os.ReadFile(v)
	if err != nil {
		return "", fmt.Errorf("%w: --nkey: %v", ErrInvalidConfig, err)
	}
	if pub := string(bytes.TrimSpace(raw)); nkeys.IsValidPublicUserKey(pub) {
		return pub, nil
	}
	kp, err := nkeys.ParseDecoratedUserNKey(raw)
	if err != nil {
		return "", fmt.Errorf("%w: --nkey %s: not a user nkey seed or public key: %v", ErrInvalidConfig, v, err)
	}
	return kp.PublicKey()
}

// ClientOptions turns s into nats.Connect options for a client.
func (s Security) ClientOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if s.User != "" {
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	}
	if s.Token != "" {
		opts = append(opts, nats.Token(s.Token))
	}
	if s.Nkey != "" {
		if nkeys.IsValidPublicUserKey(s.Nkey) {
			return nil, fmt.Errorf("%w: --nkey %s is a public key: a client needs the seed file", ErrInvalidConfig, s.Nkey)
		}
		opt, err := nats.NkeyOptionFromSeed(s.Nkey)
		if err != nil {
			return nil, fmt.Errorf("%w: --nkey %s: %v", ErrInvalidConfig, s.Nkey, err)
		}
		opts = append(opts, opt)
	}
	if s.Creds != "" {
		if _, err := os.Stat(s.Creds); err != nil {
			return nil, fmt.Errorf("%w: --creds: %v", ErrInvalidConfig, err)
		}
		opts = append(opts, nats.UserCredentials(s.Creds))
	}
	if s.TLSCA != "" {
		pem, err := os.ReadFile(s.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("%w: --tls-ca: %v", ErrInvalidConfig, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --tls-ca %s: no PEM certificate in it", ErrInvalidConfig, s.TLSCA)
		}
		opts = append(opts, nats.RootCAs(s.TLSCA))
	}
	if s.TLSCert != "" || s.TLSKey != "" {
		if s.TLSCert == "" || s.TLSKey == "" {
			return nil, fmt.Errorf("%w: a client certificate needs both --tls-cert and --tls-key", ErrInvalidConfig)
		}
		if _, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey); err != nil {
			return nil, fmt.Errorf("%w: --tls-cert/--tls-key: %v", ErrInvalidConfig, err)
		}
		opts = append(opts, nats.ClientCert(s.TLSCert, s.TLSKey))
	}
	return opts, nil
}

// configureServer sets the server's authentication and TLS from s and
// returns the options this process's own connection to it uses: an nkey
// made for this run (so it needs none of the clients' secrets, and works
// when only a public key is configured) and, with TLS, the server's own
// certificate pinned (and presented, for mutual TLS).
// REQUIRES: s.validateServer passed.
func (s Security) configureServer(opts *server.Options) (self []nats.Option, err error) {
	// Mutual TLS alone authenticates at the handshake: the server then
	// asks no credentials, and this process presents its certificate.
	if s.User != "" || s.Token != "" || s.Nkey != "" {
		if s.User != "" {
			opts.Users = append(opts.Users, &server.User{Username: s.User, Password: s.Password})
		}
		if s.Token != "" {
			opts.Authorization = s.Token
		}
		if s.Nkey != "" {
			pub, err := nkeyPublic(s.Nkey)
			if err != nil {
				return nil, err
			}
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: pub})
		}
		own, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("own nkey: %w", err)
		}
		ownPub, err := own.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("own nkey: %w", err)
		}
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: ownPub})
		self = append(self, nats.Nkey(ownPub, own.Sign))
	}
	if s.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: s.TLSCert, KeyFile: s.TLSKey,
			CaFile: s.TLSCA, Verify: s.TLSVerify})
		if err != nil {
			return nil, fmt.Errorf("%w: --tls-cert/--tls-key/--tls-ca: %v", ErrInvalidConfig, err)
		}
		opts.TLSConfig = tc
		opts.TLSVerify = s.TLSVerify
		opts.TLSTimeout = 5
		self = append(self, nats.Secure(pinned(tc.Certificates[0], s.TLSVerify)))
	}
	return self, nil
}

// pinned is the TLS configuration of this process's own connection to its
// server: it trusts exactly the server's certificate (whatever names it
// holds), and presents it as its client certificate for mutual TLS.
func pinned(cert tls.Certificate, present bool) *tls.Config {
	leaf := cert.Certificate[0]
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain and names are not checked: the one certificate
		// accepted is compared byte for byte below.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], leaf) {
				return errors.New("server certificate is not this process's own")
			}
			return nil
		},
	}
	if present {
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}
