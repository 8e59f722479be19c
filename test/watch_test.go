package test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/events"
)

// TestInversionReachesWatchAndWebhook drives a real announcement: a
// pattern failing three times out of three is inverted by the learning
// read model, and the announcement reaches a durable watch and a signed
// webhook.
func TestInversionReachesWatchAndWebhook(t *testing.T) {
	if _, ok := app.Lookup("learning", "observe_pattern"); !ok {
		t.Skip("learning.observe_pattern is not registered")
	}
	n, nc := ifcServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	var posted []events.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !consumers.Verify([]byte("k"), body, r.Header.Get(consumers.HeaderSignature)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev events.Event
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		posted = append(posted, ev)
		mu.Unlock()
	}))
	defer srv.Close()
	wh, err := consumers.NewWebhook(n.JS, consumers.WebhookConfig{URL: srv.URL, Secret: "k",
		Options: consumers.Options{Name: "e2e", All: true, Filter: consumers.Filter{Types: []string{"inverted"}}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = wh.Run(ctx) }()

	w, err := consumers.NewWatch(ctx, n.JS, consumers.Options{Name: "e2e", All: true,
		Filter: consumers.Filter{Types: []string{"inverted"}, Project: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	client := api.NewClient(nc)
	at := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		req, err := api.NewRequest(map[string]any{"content": "one file per subtask", "success": false,
			"time": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Call(ctx, "learning", "observe_pattern", req, nil); err != nil {
			t.Fatal(err)
		}
	}
	d, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("no inversion announced: %v", err)
	}
	if d.Event.Type != "pattern.inverted/v1" || d.CauseSeq == 0 {
		t.Fatalf("announcement = %s cause %d, want pattern.inverted/v1 with its cause", d.Event.Type, d.CauseSeq)
	}
	var inv events.PatternInverted
	if err := json.Unmarshal(d.Event.Data, &inv); err != nil || inv.FailureCount != 3 {
		t.Fatalf("inversion data = %s (%v), want 3 failures", d.Event.Data, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		got := len(posted)
		var first events.Event
		if got > 0 {
			first = posted[0]
		}
		mu.Unlock()
		if got > 0 {
			if first.ID != d.Event.ID {
				t.Fatalf("webhook got %s, watch got %s: want the same announcement", first.ID, d.Event.ID)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the webhook received nothing")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
