package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/test/natstest"
)

// cli runs the real command tree with buffers, as a user's shell would.
func cli(t *testing.T, ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	f := NewFactory(strings.NewReader(stdin), &out, &errb)
	code = run(ctx, f, args)
	return code, out.String(), errb.String()
}

// TestServeRecordQueryReplayShutdown drives lore from its CLI: serve on a
// temp data folder, record events (valid and not), query, tail, replay,
// then stop serve with its context (SIGINT) and find every event projected.
func TestServeRecordQueryReplayShutdown(t *testing.T) {
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0")
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
		served <- code
	}()
	// Wait for the condition; the bound only ends a test that would hang.
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
	bg := context.Background()
	d := []string{"--data", data}

	code, out, errs := cli(t, bg, "", append(d, "record", "outcome.recorded", "--set", "bead_id=bd-123.1",
		"--set", "duration_ms=180000", "--set", "retry_count=0", "--set", "success=true")...)
	if code != 0 || !strings.Contains(out, "recorded") || !strings.Contains(out, "bd-123%2E1") {
		t.Fatalf("record: exit %d, out %q, err %q", code, out, errs)
	}
	code, _, errs = cli(t, bg, `{"bead_id":"bd-9","error_type":"timeout","message":"tests hung"}`, append(d, "record", "error.recorded")...)
	if code != 0 {
		t.Fatalf("record from stdin: exit %d: %s", code, errs)
	}
	code, _, errs = cli(t, bg, "", append(d, "record", "outcome.recorded", "--set", "bead_id=b", "--set", "duration_ms=-5",
		"--set", "retry_count=0", "--set", "success=true")...)
	if code != exitBadInput || !strings.Contains(errs, `"data.duration_ms"`) {
		t.Fatalf("invalid record: exit %d, err %q", code, errs)
	}
	if code, _, _ = cli(t, bg, "", append(d, "record", "nonsense.type")...); code != exitBadInput {
		t.Fatalf("unknown type: exit %d", code)
	}
	if code, _, _ = cli(t, bg, "", append(d, "stats", "--bogus-flag")...); code != exitBadInput {
		t.Fatalf("unknown flag: exit %d", code)
	}

	code, out, errs = cli(t, bg, "", append(d, "stats", "--json")...)
	var stats struct {
		Total uint64 `json:"total"`
		Seq   uint64 `json:"seq"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || stats.Total != 2 {
		t.Fatalf("stats: exit %d, out %q, err %q", code, out, errs)
	}
	var ready struct {
		Seq    uint64 `json:"seq"`
		LogSeq uint64 `json:"log_seq"`
		Ready  *bool  `json:"ready"`
	}
	if json.Unmarshal([]byte(out), &ready) != nil || ready.Ready == nil || !*ready.Ready || ready.LogSeq != ready.Seq {
		t.Fatalf("stats of a caught-up read model: %q, want ready with the log's seq", out)
	}
	code, out, _ = cli(t, bg, "", append(d, "stats", "--json", "--at-seq", "1")...)
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || stats.Total != 1 {
		t.Fatalf("stats --at-seq 1: exit %d, out %q", code, out)
	}
	code, out, _ = cli(t, bg, "", append(d, "events", "tail", "--json")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"subject":"bd-123.1"`) {
		t.Fatalf("tail: exit %d, %q", code, out)
	}
	// Human answers of an empty registry and an empty injection say so.
	code, out, errs = cli(t, bg, "", append(d, "patterns", "list")...)
	if code != 0 || !strings.HasPrefix(out, "No patterns match") {
		t.Fatalf("patterns list on an empty registry: exit %d, out %q, err %q", code, out, errs)
	}
	code, out, errs = cli(t, bg, "", append(d, "inject", "--task", "fix the build", "--headroom", "0.01")...)
	if code != 0 || out != "" || !strings.Contains(errs, "nothing to inject") {
		t.Fatalf("inject with no room: exit %d, out %q, err %q", code, out, errs)
	}
	audit := filepath.Join(t.TempDir(), "audit")
	code, out, errs = cli(t, bg, "", append(d, "replay", "--out", audit, "--until-seq", "1")...)
	if code != 0 || !strings.Contains(out, "replayed to seq 1") {
		t.Fatalf("replay: exit %d, out %q, err %q", code, out, errs)
	}

	stop() // what SIGINT does
	select {
	case <-served:
	case <-time.After(2 * time.Minute): // only ends a test that would hang
		t.Fatal("serve did not stop")
	}
	st, err := projector.OpenStore(filepath.Join(data, "pebble"), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if cp, _ := st.Checkpoint(); cp != 2 {
		t.Fatalf("after shutdown the read model is at seq %d, want 2", cp)
	}
	if _, err := os.Stat(filepath.Join(data, urlFile)); !os.IsNotExist(err) {
		t.Fatalf("serve left its URL file behind: %v", err)
	}
}
