package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

func TestCheckListen(t *testing.T) {
	cases := []struct {
		addr string
		auth bool
		ok   bool
	}{
		{"127.0.0.1", false, true},
		{"127.0.0.1:4222", false, true},
		{"127.1.2.3:9464", false, true},
		{"localhost:4222", false, true},
		{"LOCALHOST", false, true},
		{"::1", false, true},
		{"[::1]:4222", false, true},
		{"0.0.0.0", false, false},
		{"0.0.0.0:4222", false, false},
		{":9464", false, false},
		{"::", false, false},
		{"[::]:4222", false, false},
		{"192.168.1.10", false, false},
		{"lore.example.com:4222", false, false},
		{"0.0.0.0", true, true},
		{":9464", true, true},
		{"lore.example.com:4222", true, true},
	}
	for _, c := range cases {
		err := node.CheckListen("--host", c.addr, c.auth)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, auth=%v) = %v, want ok=%v", c.addr, c.auth, err, c.ok)
		}
		if err != nil && (!errors.Is(err, node.ErrInvalidConfig) || !strings.Contains(err.Error(), "--token")) {
			t.Errorf("CheckListen(%q): %v: want ErrInvalidConfig naming the flags to set", c.addr, err)
		}
	}
}

// startSecured runs an embedded server on a free loopback port requiring sec.
func startSecured(t *testing.T, sec node.Security) string {
	t.Helper()
	s, err := node.StartEmbedded(node.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1, Security: sec})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// dial connects with sec's client options and proves JetStream answers.
func dial(url string, sec node.Security) error {
	opts, err := sec.ClientOptions()
	if err != nil {
		return err
	}
	nc, err := nats.Connect(url, append(opts, nats.Timeout(5*time.Second), nats.MaxReconnects(0))...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := events.NewJetStream(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

func seedFile(t *testing.T) (file, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ = kp.PublicKey()
	file = filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, pub
}

func TestEmbeddedServerAuthentication(t *testing.T) {
	seed, pub := seedFile(t)
	otherSeed, _ := seedFile(t)
	cases := []struct {
		name   string
		server node.Security
		good   node.Security
		bad    []node.Security
	}{
		{"user and password", node.Security{User: "agent", Password: "s3cret"},
			node.Security{User: "agent", Password: "s3cret"},
			[]node.Security{{}, {User: "agent", Password: "wrong"}, {User: "other", Password: "s3cret"}}},
		{"token", node.Security{Token: "t0ken"},
			node.Security{Token: "t0ken"},
			[]node.Security{{}, {Token: "wrong"}, {User: "t0ken"}}},
		{"nkey from a seed file", node.Security{Nkey: seed},
			node.Security{Nkey: seed},
			[]node.Security{{}, {Nkey: otherSeed}}},
		{"nkey from a public key", node.Security{Nkey: pub},
			node.Security{Nkey: seed},
			[]node.Security{{}, {Nkey: otherSeed}}},
		{"user, token and nkey together", node.Security{User: "agent", Password: "pw", Token: "t0ken", Nkey: pub},
			node.Security{Token: "t0ken"},
			[]node.Security{{}, {User: "agent", Password: "no"}, {Nkey: otherSeed}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := startSecured(t, c.server)
			if err := dial(url, c.good); err != nil {
				t.Fatalf("a client with the credentials was refused: %v", err)
			}
			for _, bad := range c.bad {
				err := dial(url, bad)
				if !errors.Is(err, nats.ErrAuthorization) {
					t.Errorf("client %+v: %v, want an authorization violation", bad, err)
				}
			}
		})
	}
	t.Run("the same server also admits user and nkey clients", func(t *testing.T) {
		url := startSecured(t, node.Security{User: "agent", Password: "pw", Token: "t0ken", Nkey: pub})
		for _, good := range []node.Security{{User: "agent", Password: "pw"}, {Nkey: seed}} {
			if err := dial(url, good); err != nil {
				t.Errorf("client %+v refused: %v", good, err)
			}
		}
	})
}

func TestEmbeddedServerTLS(t *testing.T) {
	ca := natstest.NewCA(t, "lore-test")
	cert, key := ca.Issue(t, "server")
	other := natstest.NewCA(t, "elsewhere")

	url := startSecured(t, node.Security{TLSCert: cert, TLSKey: key})
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("server URL %q: want tls://", url)
	}
	if err := dial(url, node.Security{TLSCA: ca.CertFile}); err != nil {
		t.Fatalf("a client trusting the CA was refused: %v", err)
	}
	plain := strings.Replace(url, "tls://", "nats://", 1)
	if err := dial(plain, node.Security{TLSCA: ca.CertFile}); err != nil {
		t.Fatalf("a client trusting the CA on a nats:// URL was refused: %v", err)
	}
	for name, sec := range map[string]node.Security{"no CA": {}, "another CA": {TLSCA: other.CertFile}} {
		err := dial(url, sec)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("client with %s: %v, want a certificate error", name, err)
		}
	}

	t.Run("mutual TLS authenticates clients", func(t *testing.T) {
		url := startSecured(t, node.Security{TLSCert: cert, TLSKey: key, TLSCA: ca.CertFile, TLSVerify: true})
		ccert, ckey := ca.Issue(t, "client")
		if err := dial(url, node.Security{TLSCA: ca.CertFile, TLSCert: ccert, TLSKey: ckey}); err != nil {
			t.Fatalf("a client with a certificate of the CA was refused: %v", err)
		}
		ocert, okey := other.Issue(t, "stranger")
		for name, sec := range map[string]node.Security{
			"no client certificate":       {TLSCA: ca.CertFile},
			"a certificate of another CA": {TLSCA: ca.CertFile, TLSCert: ocert, TLSKey: okey},
		} {
			if err := dial(url, sec); err == nil {
				t.Errorf("client with %s was admitted", name)
			}
		}
	})
}

func TestStartSecuredNode(t *testing.T) {
	ca := natstest.NewCA(t, "lore-test")
	cert, key := ca.Issue(t, "server")
	_, pub := seedFile(t)
	ccert, ckey := ca.Issue(t, "client")
	cases := []struct {
		name   string
		server node.Security
		client node.Security
	}{
		{"user and password", node.Security{User: "agent", Password: "pw"}, node.Security{User: "agent", Password: "pw"}},
		// The node dials its own server with a key of its own: a server
		// knowing only a public key still runs.
		{"nkey public key only", node.Security{Nkey: pub}, node.Security{}},
		{"token and TLS", node.Security{Token: "t0ken", TLSCert: cert, TLSKey: key}, node.Security{Token: "t0ken", TLSCA: ca.CertFile}},
		{"mutual TLS", node.Security{TLSCert: cert, TLSKey: key, TLSCA: ca.CertFile, TLSVerify: true},
			node.Security{TLSCA: ca.CertFile, TLSCert: ccert, TLSKey: ckey}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := node.Start(context.Background(), node.Config{DataDir: t.TempDir(), TickInterval: -1,
				Embedded: node.EmbeddedOptions{Port: -1, Security: c.server}})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer n.Close()
			if err := n.Tick(context.Background(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Fatalf("the node's own connection cannot append: %v", err)
			}
			if c.client == (node.Security{}) {
				return
			}
			if err := dial(n.Server.ClientURL(), c.client); err != nil {
				t.Fatalf("client refused: %v", err)
			}
			if err := dial(n.Server.ClientURL(), node.Security{TLSCA: c.client.TLSCA}); err == nil {
				t.Fatal("a client without credentials was admitted")
			}
		})
	}
}

func TestStartRefusesAnOpenListenerBeforeAnything(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, host := range []string{"0.0.0.0", "::", "192.0.2.1"} {
		_, err := node.Start(context.Background(), node.Config{DataDir: data, Embedded: node.EmbeddedOptions{Host: host, Port: -1}})
		if !errors.Is(err, node.ErrInvalidConfig) || !strings.Contains(err.Error(), "--user") {
			t.Fatalf("host %s without auth: %v, want ErrInvalidConfig naming the flags", host, err)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("a refused start created the data folder: %v", err)
	}
	for name, sec := range map[string]node.Security{
		"creds on the embedded server": {Creds: "/nonexistent.creds"},
		"TLS without its key":          {TLSCert: "cert.pem"},
		"--tls-verify without a CA":    {User: "a", TLSVerify: true},
		"a password without a user":    {Password: "pw"},
	} {
		_, err := node.Start(context.Background(), node.Config{DataDir: data, Embedded: node.EmbeddedOptions{Port: -1, Security: sec}})
		if !errors.Is(err, node.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}
