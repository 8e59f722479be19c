package consumers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/test/natstest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFilterMatch(t *testing.T) {
	tests := []struct {
		name    string
		filter  consumers.Filter
		typ     string
		project string
		data    string
		want    bool
	}{
		{"class word matches the last token", consumers.Filter{Types: []string{"inverted"}}, "pattern.inverted/v1", "default", `{}`, true},
		{"class word matches the last '_' segment", consumers.Filter{Types: []string{"promoted"}}, "knowledge.hive_promoted/v1", "default", `{}`, true},
		{"archived matches registry archives", consumers.Filter{Types: []string{"archived"}}, "registry.pattern_archived/v1", "default", `{}`, true},
		{"a pattern reaching proven is promoted", consumers.Filter{Types: []string{"promoted"}}, "pattern.maturity_changed/v1", "default", `{"to":"proven"}`, true},
		{"a pattern reaching established is not promoted", consumers.Filter{Types: []string{"promoted"}}, "pattern.maturity_changed/v1", "default", `{"to":"established"}`, false},
		{"a pattern reaching deprecated is deprecated", consumers.Filter{Types: []string{"deprecated"}}, "pattern.maturity_changed/v1", "default", `{"to":"deprecated"}`, true},
		{"full name matches", consumers.Filter{Types: []string{"criterion.deprecated"}}, "criterion.deprecated/v1", "default", `{}`, true},
		{"versioned type matches", consumers.Filter{Types: []string{"pattern.inverted/v1"}}, "pattern.inverted/v1", "default", `{}`, true},
		{"other word does not match", consumers.Filter{Types: []string{"archived"}}, "pattern.inverted/v1", "default", `{}`, false},
		{"other project does not match", consumers.Filter{Project: "web"}, "pattern.inverted/v1", "default", `{}`, false},
		{"empty filter matches all", consumers.Filter{}, "knowledge.archived/v1", "x", `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events.Event{Type: tt.typ, Project: tt.project, Data: json.RawMessage(tt.data)}
			if got := tt.filter.Match(ev); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterValidate(t *testing.T) {
	for _, w := range []string{"promoted", "inverted", "deprecated", "archived", "pattern.inverted"} {
		if err := (consumers.Filter{Types: []string{w}}).Validate(); err != nil {
			t.Errorf("%s: %v", w, err)
		}
	}
	err := consumers.Filter{Types: []string{"exploded"}}.Validate()
	if !errors.Is(err, consumers.ErrInvalidOption) {
		t.Fatalf("unknown word: err = %v, want ErrInvalidOption", err)
	}
	if _, err := consumers.DurableName("watch", "a.b"); !errors.Is(err, consumers.ErrInvalidOption) {
		t.Fatalf("dotted name: err = %v, want ErrInvalidOption", err)
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	sig := consumers.Sign([]byte("s3cret"), body)
	if !consumers.Verify([]byte("s3cret"), body, sig) {
		t.Fatal("signature does not verify")
	}
	if consumers.Verify([]byte("other"), body, sig) || consumers.Verify([]byte("s3cret"), []byte(`{"id":"y"}`), sig) {
		t.Fatal("signature verifies with another secret or body")
	}
}

// stream starts NATS with lore's streams.
func stream(t *testing.T) jetstream.JetStream {
	t.Helper()
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s.ClientURL())
	if err := events.EnsureStreams(context.Background(), js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	return js
}

// announce publishes a derived-shaped message as the projector does.
func announce(t *testing.T, js jetstream.JetStream, typ, project, subject, data string, cause uint64) string {
	t.Helper()
	id := fmt.Sprintf("d-%s-%s-%d", project, subject, cause)
	ev := &events.Event{ID: id, Type: typ, Source: "lore", Subject: subject, Time: t0, Project: project, Data: json.RawMessage(data)}
	subj, err := events.SubjectFor(ev)
	if err != nil {
		t.Fatal(err)
	}
	body, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(subj)
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(projector.HeaderCauseSeq, strconv.FormatUint(cause, 10))
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return id
}

const inverted = `{"pattern_id":"%s","anti_pattern_id":"anti-%s","content":"x","reason":"r","success_count":1,"failure_count":3}`

// next returns the next delivery, acknowledged; the bound only ends a test
// that would otherwise hang.
func next(t *testing.T, w *consumers.Watch) *consumers.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWatchFiltersAndResumes(t *testing.T) {
	js := stream(t)
	ctx := context.Background()
	o := consumers.Options{Name: "w1", Filter: consumers.Filter{Types: []string{"inverted", "promoted"}, Project: "default"}}
	w, err := consumers.NewWatch(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	announce(t, js, "knowledge.archived/v1", "default", "k1", `{}`, 1)                        // other type
	announce(t, js, "pattern.inverted/v1", "web", "p0", fmt.Sprintf(inverted, "p0", "p0"), 2) // other project
	a := announce(t, js, "pattern.inverted/v1", "default", "p1", fmt.Sprintf(inverted, "p1", "p1"), 3)
	b := announce(t, js, "pattern.maturity_changed/v1", "default", "p2", `{"pattern_id":"p2","from":"established","to":"proven","reason":"r"}`, 4)
	if d := next(t, w); d.Event.ID != a || d.CauseSeq != 3 {
		t.Fatalf("first = %s cause %d, want %s cause 3", d.Event.ID, d.CauseSeq, a)
	}
	if d := next(t, w); d.Event.ID != b {
		t.Fatalf("second = %s, want %s", d.Event.ID, b)
	}
	w.Stop()

	c := announce(t, js, "pattern.inverted/v1", "default", "p3", fmt.Sprintf(inverted, "p3", "p3"), 5)
	w2, err := consumers.NewWatch(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if d := next(t, w2); d.Event.ID != c {
		t.Fatalf("after restart = %s, want %s (acked ones must not come again)", d.Event.ID, c)
	}
}

// ackPending reads how many deliveries of the durable consumer wait for an
// acknowledgement (a handed-back one counts until redelivered), and how
// many announcements it has not delivered yet.
func ackPending(t *testing.T, js jetstream.JetStream, durable string) (ackPending int, undelivered uint64) {
	t.Helper()
	c, err := js.Consumer(context.Background(), events.DerivedStream, durable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.NumAckPending, info.NumPending
}

// TestStopHandsBackUnhandledDeliveries: a delivery that reached the
// subscription but was never returned by Next is handed back by Stop, and
// nothing is delivered to a stopped subscription, so a restart resumes at
// once. AckWait is an hour: a restart that relied on the redelivery timer
// would not get the announcement during the test.
func TestStopHandsBackUnhandledDeliveries(t *testing.T) {
	js := stream(t)
	ctx := context.Background()
	o := consumers.Options{Name: "w2", AckWait: time.Hour}
	w, err := consumers.NewWatch(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	// A Next abandoned by its context leaves a pull request behind.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Next(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("next on an ended context: %v", err)
	}
	a := announce(t, js, "pattern.inverted/v1", "default", "p1", fmt.Sprintf(inverted, "p1", "p1"), 1)
	// The server has sent a to the subscription; no Next returned it.
	natstest.WaitFor(t, time.Minute, func() error {
		if n, _ := ackPending(t, js, w.Durable()); n != 1 {
			return fmt.Errorf("%d deliveries await an ack, want 1", n)
		}
		return nil
	})
	w.Stop()
	b := announce(t, js, "pattern.inverted/v1", "default", "p2", fmt.Sprintf(inverted, "p2", "p2"), 2)
	// The server counts a consumer's undelivered messages as it learns of
	// them, after the publish is acknowledged: b shows as undelivered, and
	// stays so (delivered to the stopped subscription, it would show as
	// awaiting an ack and the restart below would not get it).
	natstest.WaitFor(t, time.Minute, func() error {
		if _, pending := ackPending(t, js, "lore-watch-w2"); pending != 1 {
			return fmt.Errorf("after Stop %d announcements are undelivered, want 1 (nothing is delivered to a stopped subscription)", pending)
		}
		return nil
	})

	w2, err := consumers.NewWatch(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	d := next(t, w2)
	if d.Event.ID != a || !d.Redelivered {
		t.Fatalf("after restart = %s (redelivered %v), want %s redelivered", d.Event.ID, d.Redelivered, a)
	}
	if d := next(t, w2); d.Event.ID != b {
		t.Fatalf("then %s, want %s", d.Event.ID, b)
	}
}

// receiver is a webhook endpoint failing the first `fail` attempts of each
// event with 500 and recording accepted event ids.
type receiver struct {
	mu       sync.Mutex
	fail     int
	attempts map[string]int
	accepted []string
	badSigs  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !consumers.Verify([]byte("s3cret"), body, req.Header.Get(consumers.HeaderSignature)) {
		r.badSigs++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev events.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != req.Header.Get(consumers.HeaderEventID) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.attempts[ev.ID]++
	if r.attempts[ev.ID] <= r.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.accepted = append(r.accepted, ev.ID)
}

func (r *receiver) snapshot() ([]string, map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := map[string]int{}
	for k, v := range r.attempts {
		at[k] = v
	}
	return append([]string(nil), r.accepted...), at, r.badSigs
}

func TestWebhookRetriesSignsAndResumes(t *testing.T) {
	js := stream(t)
	rcv := &receiver{fail: 2, attempts: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()

	var mu sync.Mutex
	delivered := map[string]bool{}
	cfg := consumers.WebhookConfig{URL: srv.URL, Secret: "s3cret",
		// AckWait is an hour: a restart must resume at once, never by
		// waiting for the server's redelivery timer.
		Options:         consumers.Options{Name: "hook", All: true, AckWait: time.Hour, Filter: consumers.Filter{Types: []string{"inverted"}}},
		InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		OnDelivered: func(d *consumers.Delivery) { mu.Lock(); delivered[d.Event.ID] = true; mu.Unlock() }}
	run := func() (stop func()) {
		wh, err := consumers.NewWebhook(js, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wh.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("webhook run: %v", err)
			}
		}
	}
	waitDelivered := func(ids ...string) {
		natstest.WaitFor(t, time.Minute, func() error {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if !delivered[id] {
					return fmt.Errorf("%s not delivered", id)
				}
			}
			return nil
		})
	}

	stop := run()
	e1 := announce(t, js, "pattern.inverted/v1", "default", "p1", fmt.Sprintf(inverted, "p1", "p1"), 1)
	announce(t, js, "knowledge.archived/v1", "default", "k1", `{}`, 2) // filtered out
	e2 := announce(t, js, "pattern.inverted/v1", "default", "p2", fmt.Sprintf(inverted, "p2", "p2"), 3)
	waitDelivered(e1, e2)
	stop()

	e3 := announce(t, js, "pattern.inverted/v1", "default", "p3", fmt.Sprintf(inverted, "p3", "p3"), 4)
	stop = run()
	waitDelivered(e3)
	stop()

	accepted, attempts, bad := rcv.snapshot()
	if bad != 0 {
		t.Fatalf("%d requests with a bad signature", bad)
	}
	if want := []string{e1, e2, e3}; fmt.Sprint(accepted) != fmt.Sprint(want) {
		t.Fatalf("accepted %v, want %v (in order, acked ones never again)", accepted, want)
	}
	for _, id := range []string{e1, e2, e3} {
		if attempts[id] != 3 {
			t.Errorf("%s: %d attempts, want 3 (two 500s then 200)", id, attempts[id])
		}
	}
}

func TestWebhookConfigRefusesBadURL(t *testing.T) {
	_, err := consumers.NewWebhook(nil, consumers.WebhookConfig{URL: "ftp://x"})
	if !errors.Is(err, consumers.ErrInvalidOption) {
		t.Fatalf("err = %v, want ErrInvalidOption", err)
	}
}
