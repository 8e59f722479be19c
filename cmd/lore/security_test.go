package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/test/natstest"
)

// serveInBackground runs `lore serve` with args until the test ends and
// waits for the URL file it writes.
func serveInBackground(t *testing.T, data string, args ...string) {
	t.Helper()
	startServe(t, data, args...)
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
}

// startServe runs `lore serve` with args until the test ends.
func startServe(t *testing.T, data string, args ...string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, _, errs := cli(t, ctx, "", append([]string{"serve", "--data", data, "--port", "-1", "--tick", "0", "--metrics", "", "--snapshot-every", "0"}, args...)...)
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}

func TestServeRefusesAnOpenListenerWithoutAuthentication(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--host", "0.0.0.0"},
		{"serve", "--host", "::", "--port", "-1"},
		{"serve", "--port", "-1", "--metrics", "0.0.0.0:0"},
		{"serve", "--port", "-1", "--metrics", ":9464"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		code, _, errs := cli(t, context.Background(), "", append(args, "--data", data)...)
		if code != exitBadInput || !strings.Contains(errs, "without authentication") || !strings.Contains(errs, "--token") {
			t.Errorf("%v: exit %d, %q; want 2 naming the flags to set", args, code, errs)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%v: the refused serve created its data folder", args)
		}
	}
	code, _, errs := cli(t, context.Background(), "", "serve", "--port", "-1", "--data", t.TempDir(), "--creds", "x.creds")
	if code != exitBadInput || !strings.Contains(errs, "--nats") {
		t.Errorf("serve --creds on the embedded server: exit %d, %q; want 2 saying creds go with --nats", code, errs)
	}
}

func TestServeWithAuthenticationAndItsClients(t *testing.T) {
	data := t.TempDir()
	serveInBackground(t, data, "--user", "agent", "--password", "pw", "--token", "t0ken")
	bg := context.Background()
	d := []string{"--data", data}

	code, _, errs := cli(t, bg, "", append(d, "stats")...)
	if code != exitFailure || !strings.Contains(errs, "requires authentication") || !strings.Contains(errs, "--user") {
		t.Fatalf("stats without credentials: exit %d, %q; want 1 saying which flags to pass", code, errs)
	}
	code, _, errs = cli(t, bg, "", append(d, "stats", "--user", "agent", "--password", "wrong")...)
	if code != exitFailure || !strings.Contains(errs, "Authorization Violation") {
		t.Fatalf("stats with a wrong password: exit %d, %q", code, errs)
	}
	code, out, errs := cli(t, bg, "", append(d, "--user", "agent", "--password", "pw", "record", "outcome.recorded", "--set", "bead_id=bd-1",
		"--set", "duration_ms=1000", "--set", "retry_count=0", "--set", "success=true")...)
	if code != 0 || !strings.Contains(out, "recorded") {
		t.Fatalf("record with user and password: exit %d, %q %q", code, out, errs)
	}
	// watch, webhook and snapshots dial through the same factory.
	for _, args := range [][]string{{"watch", "--count", "1"}, {"webhook", "--url", "http://127.0.0.1:9/x"}, {"snapshot", "list"}} {
		code, _, errs = cli(t, bg, "", append(d, args...)...)
		if code != exitFailure || !strings.Contains(errs, "requires authentication") {
			t.Errorf("%v without credentials: exit %d, %q; want 1", args, code, errs)
		}
	}
	t.Setenv("LORE_NATS_TOKEN", "t0ken")
	code, out, errs = cli(t, bg, "", append(d, "stats", "--json")...)
	if code != 0 || !strings.Contains(out, `"total": 1`) {
		t.Fatalf("stats with the token from LORE_NATS_TOKEN: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs = cli(t, bg, "", append(d, "snapshot", "list")...); code != 0 {
		t.Fatalf("snapshot list with the token: exit %d, %q %q", code, out, errs)
	}

	// lore mcp calls lore through the factory's connection.
	for _, c := range []struct {
		token string
		ok    bool
	}{{"", false}, {"t0ken", true}} {
		f := NewFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
		f.DataDir, f.Timeout, f.Sec.Token = data, 10*time.Second, c.token
		_, err := (&lazyCaller{f: f}).CallRaw(bg, "audit", "stats", api.Request{})
		if (err == nil) != c.ok {
			t.Errorf("mcp caller with token %q: %v, want ok=%v", c.token, err, c.ok)
		}
		f.Close()
	}
}

func TestServeTLSAndItsClients(t *testing.T) {
	ca := natstest.NewCA(t, "lore-test")
	cert, key := ca.Issue(t, "server")
	data := t.TempDir()
	serveInBackground(t, data, "--token", "t0ken", "--tls-cert", cert, "--tls-key", key)
	bg := context.Background()
	d := []string{"--data", data, "--token", "t0ken"}

	code, _, errs := cli(t, bg, "", append(d, "stats")...)
	if code != exitFailure || !strings.Contains(errs, "--tls-ca") {
		t.Fatalf("stats not trusting the CA: exit %d, %q; want 1 naming --tls-ca", code, errs)
	}
	code, _, errs = cli(t, bg, "", append(d, "stats", "--tls-ca", key)...)
	if code != exitBadInput || !strings.Contains(errs, "--tls-ca") {
		t.Fatalf("stats with a key as --tls-ca: exit %d, %q; want 2 naming the flag", code, errs)
	}
	code, out, errs := cli(t, bg, "", append(d, "stats", "--json", "--tls-ca", ca.CertFile)...)
	if code != 0 || !strings.Contains(out, `"total"`) {
		t.Fatalf("stats trusting the CA: exit %d, %q %q", code, out, errs)
	}
}

func TestServeRefusesAReadModelFromTheFuture(t *testing.T) {
	data := t.TempDir()
	n, err := node.Start(context.Background(), node.Config{DataDir: data, TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	_, now, _ := n.FormatChange()
	n.Close()
	st, err := projector.OpenStore(filepath.Join(data, "pebble"), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	future := now + ";graph=1"
	if err := st.Reset(future, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, _, errs := cli(t, context.Background(), "", "serve", "--data", data, "--port", "-1", "--metrics", "")
	if code == 0 || !strings.Contains(errs, future) || !strings.Contains(errs, "("+now+")") || !strings.Contains(errs, "upgrade lore") {
		t.Fatalf("serve on a read model from the future: exit %d, %q; want a failure naming both formats", code, errs)
	}

	// An older one is rebuilt, and serve says so naming both formats.
	older := withStoreLayout(t, now, -1)
	if st, err = projector.OpenStore(filepath.Join(data, "pebble"), projector.StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Reset(older, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		code int
		errs string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--metrics", "", "--tick", "0")
		done <- result{code, errs}
	}()
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
	stop()
	r := <-done
	if r.code != 0 || !strings.Contains(r.errs, "read-model format "+older+" is older than this lore's "+now) {
		t.Fatalf("serve on an older read model: exit %d, %q; want a rebuild naming both formats", r.code, r.errs)
	}
}

func TestReplicaDialsAnAuthenticatedNATS(t *testing.T) {
	s, err := node.StartEmbedded(node.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1, Security: node.Security{Token: "t0ken"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	url := s.ClientURL()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, _, errs := cli(t, ctx, "", "serve", "--nats", url, "--data", t.TempDir(), "--metrics", "")
	if code != exitFailure || !strings.Contains(errs, "Authorization Violation") {
		t.Fatalf("replica without the token: exit %d, %q; want 1", code, errs)
	}
	data := t.TempDir()
	startServe(t, data, "--nats", url, "--token", "t0ken", "--replica", "lore-a")
	natstest.WaitFor(t, 2*time.Minute, func() error {
		code, out, errs := cli(t, context.Background(), "", "--nats", url, "--token", "t0ken", "--timeout", "2s", "stats", "--json")
		if code != 0 || !strings.Contains(out, `"total"`) {
			return fmt.Errorf("stats through the replica: exit %d, %q %q", code, out, errs)
		}
		return nil
	})
}

// withStoreLayout returns format with its store layout version moved by delta.
func withStoreLayout(t *testing.T, format string, delta int) string {
	t.Helper()
	head, rest, _ := strings.Cut(format, ";")
	var n int
	if _, err := fmt.Sscanf(head, "store=%d", &n); err != nil {
		t.Fatalf("format %q: %v", format, err)
	}
	return fmt.Sprintf("store=%d;%s", n+delta, rest)
}
