package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/test/natstest"
	"github.com/loredev/lore/ui"
)

// TestServeDashboardAndLoreUI: serve writes the dashboard's URL, `lore ui`
// prints it, the dashboard answers there, and the file goes with serve.
func TestServeDashboardAndLoreUI(t *testing.T) {
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		if code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0", "--metrics", "", "--ui", "127.0.0.1:0"); code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()
	urlPath := filepath.Join(data, ui.URLFile)
	natstest.WaitFor(t, 2*time.Minute, func() error { _, err := os.Stat(urlPath); return err })
	code, out, errs := cli(t, context.Background(), "", "ui", "--data", data, "--no-browser")
	u := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("lore ui: exit %d, out %q, err %q", code, out, errs)
	}
	resp, err := http.Get(u + "audit")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<h1>Audit</h1>") {
		t.Fatalf("dashboard: %d %s", resp.StatusCode, body)
	}
	code, out, errs = cli(t, context.Background(), "", "dead-letters", "--data", data)
	if code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Fatalf("lore dead-letters: exit %d, out %q, err %q", code, out, errs)
	}
	stop()
	<-served
	if _, err := os.Stat(urlPath); !os.IsNotExist(err) {
		t.Fatalf("ui.url left after serve stopped: %v", err)
	}
	if code, _, errs := cli(t, context.Background(), "", "ui", "--data", data, "--no-browser"); code == 0 || !strings.Contains(errs, "lore serve") {
		t.Fatalf("lore ui without a server: exit %d, %q", code, errs)
	}
}

// TestServeRefusesDashboardBeyondLoopbackWithoutAuth: bad input, exit 2,
// before anything starts.
func TestServeRefusesDashboardBeyondLoopbackWithoutAuth(t *testing.T) {
	data := t.TempDir()
	code, _, errs := cli(t, context.Background(), "", "serve", "--data", data, "--port", "-1", "--metrics", "", "--ui", "0.0.0.0:7778")
	if code != exitBadInput || !strings.Contains(errs, "--ui") {
		t.Fatalf("serve --ui 0.0.0.0:7778: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(data, "nats")); !os.IsNotExist(err) {
		t.Fatalf("something started: %v", err)
	}
}
