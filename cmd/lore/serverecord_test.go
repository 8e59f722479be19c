package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/test/natstest"
)

// TestClientFindsOnlyARecordedLore: with nothing recorded a command fails
// naming where it looked (no default address is dialled); a serve record
// whose server id differs from the server now at its URL is refused; a
// subfolder finds its parent's record; --data wins over the record.
func TestClientFindsOnlyARecordedLore(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("LORE_NATS", "")
	t.Setenv("LORE_DATA", "")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	bg := context.Background()

	code, _, errs := cli(t, bg, "", "stats")
	if code != exitFailure || !strings.Contains(errs, "no lore serving found") || !strings.Contains(errs, "serve records of") {
		t.Fatalf("stats with nothing recorded: exit %d, err %q", code, errs)
	}

	// Another NATS at the recorded address: refused, naming the record.
	other := natstest.Start(t)
	wd, err := workDir()
	if err != nil {
		t.Fatal(err)
	}
	remove, err := writeServeRecord(serveRecord{URL: other.ClientURL(), ServerID: "NOT-" + other.ID(), Data: "./lore-data", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	sub := filepath.Join(work, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{wd, sub} {
		t.Chdir(dir)
		code, _, errs = cli(t, bg, "", "stats")
		if code != exitFailure || !strings.Contains(errs, "is answered by NATS server "+other.ID()) || !strings.Contains(errs, "started in "+wd) {
			t.Fatalf("stats in %s against a foreign server: exit %d, err %q", dir, code, errs)
		}
	}

	// --data names the lore: the record is not consulted.
	data := t.TempDir()
	serveInBackground(t, data)
	if code, out, errs := cli(t, bg, "", "--data", data, "stats"); code != 0 || !strings.Contains(out, "events folded: 0") {
		t.Fatalf("stats --data: exit %d, out %q, err %q", code, out, errs)
	}
}
