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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	f := NewFactory(strings.NewReader(""), &out, &errw)
	// The bound only ends a run that would hang (a watch that never sees
	// its announcement).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, f, args)
	return code, out.String(), errw.String()
}

func TestWatchPrintsAnnouncementsAsJSONLines(t *testing.T) {
	n, err := node.Start(context.Background(), node.Config{DataDir: t.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i, typ := range []string{"knowledge.archived/v1", "pattern.inverted/v1"} {
		ev := &events.Event{ID: "a" + typ, Type: typ, Source: "lore", Subject: "x1", Time: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC),
			Project: "default", Data: json.RawMessage(`{"pattern_id":"x1"}`)}
		subj, _ := events.SubjectFor(ev)
		body, _ := events.Encode(ev)
		m := nats.NewMsg(subj)
		m.Data = body
		if _, err := n.JS.PublishMsg(context.Background(), m, jetstream.WithMsgID(ev.ID)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "--nats", n.ClientURL(), "--json", "watch", "--all", "--count", "1", "--type", "inverted")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var line watchLine
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil || line.Type != "pattern.inverted/v1" || line.Seq != 2 {
		t.Fatalf("watch --json printed %q (%v), want one pattern.inverted/v1 line at seq 2", out, err)
	}
	code, _, errs = runCLI(t, "--nats", n.ClientURL(), "watch", "--type", "exploded")
	if code != exitBadInput || !strings.Contains(errs, "exploded") {
		t.Fatalf("unknown type: exit %d %s, want 2 naming it", code, errs)
	}
	code, _, errs = runCLI(t, "--nats", n.ClientURL(), "webhook", "--url", "ftp://nowhere")
	if code != exitBadInput || !strings.Contains(errs, "url") {
		t.Fatalf("bad webhook url: exit %d %s, want 2", code, errs)
	}
}

func TestSchemasExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if code, _, errs := runCLI(t, "schemas", "export", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, k := range events.Kinds() {
		name := strings.Replace(k.Type, "/v", ".v", 1) + ".json"
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("schema of %s not exported: %v", k.Type, err)
		}
	}
	doc, err := os.ReadFile(filepath.Join(dir, "subjects.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lore.ev.<project>.<aggregate>.<aggregate id>", "Nats-Msg-Id", "| `outcome.recorded/v1` | bead | `bead_id` |"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("subjects.md lacks %q", want)
		}
	}
}
