package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/test/natstest"
)

// shortDedup is the duplicate window of the streams in these tests: a copy
// re-sent after it is stored again, as one re-sent after the default two
// minutes would be.
const shortDedup = 300 * time.Millisecond

func foldedTotal(t testing.TB, st *projector.Store) uint64 {
	t.Helper()
	s, err := eventlog.Read(st.Model(eventlog.Name))
	if err != nil {
		t.Fatal(err)
	}
	return s.Total
}

// publishAfterWindow publishes m with its Nats-Msg-Id again until the
// stream stores it (the duplicate window has passed) and returns its seq.
func publishAfterWindow(t testing.TB, js jetstream.JetStream, m *nats.Msg) uint64 {
	t.Helper()
	for range 100 {
		time.Sleep(shortDedup)
		ack, err := js.PublishMsg(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			return ack.Sequence
		}
	}
	t.Fatal("the stream kept deduplicating past its window")
	return 0
}

// TestEventFoldedOnceWhateverTheDuplicateWindow: an event re-sent with
// the same id after the stream's duplicate window, and two copies
// published without Nats-Msg-Id, are each stored twice and folded once:
// live, in a rebuild and in audit replays; the store says where each id
// was folded.
func TestEventFoldedOnceWhateverTheDuplicateWindow(t *testing.T) {
	n := startNode(t, node.Config{Streams: events.StreamOptions{Duplicates: shortDedup}})
	runNode(t, n)
	_, js := natstest.Connect(t, n.ClientURL())
	ctx := context.Background()

	first := outcome(t, "default", "bd-once", day0, true)
	msg, err := n.Appender.Prepare(first)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	again := publishAfterWindow(t, js, msg)

	// Two copies without Nats-Msg-Id: the stream keeps both.
	bare := outcome(t, "default", "bd-bare", day0, true)
	bareMsg, err := n.Appender.Prepare(bare)
	if err != nil {
		t.Fatal(err)
	}
	var bareSeqs []uint64
	for range 2 {
		a, err := js.Publish(ctx, bareMsg.Subject, bareMsg.Data)
		if err != nil {
			t.Fatal(err)
		}
		bareSeqs = append(bareSeqs, a.Sequence)
	}
	last := bareSeqs[1]
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	if got := foldedTotal(t, n.Store); got != 2 {
		t.Fatalf("folded %d events from 4 stored copies of 2 events, want 2", got)
	}
	if d := n.Runtime.Duplicates(); d != 2 {
		t.Fatalf("runtime counted %d duplicates, want 2", d)
	}
	for id, want := range map[string]uint64{first.ID: ack.Sequence, bare.ID: bareSeqs[0]} {
		if seq, ok, err := n.Store.EventSeq(id); err != nil || !ok || seq != want {
			t.Fatalf("EventSeq(%s) = %d %v %v, want %d", id, seq, ok, err, want)
		}
	}

	// A rebuild and audit replays (at a sequence, as of a time) fold the
	// same: once per id.
	for _, o := range []projector.ReplayOptions{{}, {UntilSeq: again}, {UntilTime: day0}} {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := projector.Replay(ctx, js, st, app.Models(), o)
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(2)
		if o.UntilSeq != 0 {
			want = 1
		}
		if got := foldedTotal(t, st); got != want || stats.Folded != want {
			t.Errorf("replay %+v: folded %d (stats %d), want %d", o, got, stats.Folded, want)
		}
		if stats.Duplicates == 0 {
			t.Errorf("replay %+v: no duplicate counted", o)
		}
		st.Close()
	}
	// The rebuilt read model equals the live one.
	live, err := n.Store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt, _ := rebuildDigest(t, js); rebuilt != live {
		t.Fatal("a rebuild differs from the live read model")
	}
}

// rawCase is one message a raw client publishes on the log's subjects.
type rawCase struct {
	name, subject, body string
	header              nats.Header
	reason              string // what the dead letter's reason names
}

// TestRawDoorDeadLettersWhatTheAppenderRefuses: messages published
// straight to lore.ev.… that the appender would refuse are dead-lettered
// with a reason, whatever their headers claim; nothing of them is folded.
func TestRawDoorDeadLettersWhatTheAppenderRefuses(t *testing.T) {
	n, nc := ifcServe(t)
	longID := strings.Repeat("x", 10000)
	outcomeBody := func(id, project, subject, bead, extra string) string {
		return fmt.Sprintf(`{"id":%q,"type":"outcome.recorded/v1","source":"raw","subject":%q,"time":"2026-01-02T10:00:00Z","project":%q,`+
			`"data":{"bead_id":%q,"duration_ms":900,"retry_count":0,"success":true%s}}`, id, subject, project, bead, extra)
	}
	cases := []rawCase{
		{name: "long id", subject: events.AggregateSubject("default", "bead", "bd-long"),
			body: outcomeBody(longID, "default", "bd-long", "bd-long", ""), reason: `field "id"`},
		{name: "id with spaces", subject: events.AggregateSubject("default", "bead", "bd-space"),
			body: outcomeBody("an id with spaces", "default", "bd-space", "bd-space", ""), reason: `field "id"`},
		{name: "announcement type", subject: events.AggregateSubject("default", "pattern", "pat-1"),
			body: `{"id":"raw-inverted-1","type":"pattern.inverted/v1","source":"raw","subject":"pat-1","time":"2026-01-02T10:00:00Z","project":"default",` +
				`"data":{"pattern_id":"pat-1","anti_pattern_id":"anti-1","content":"AVOID: x","reason":"forged","success_count":0,"failure_count":3}}`,
			reason: "announced by lore"},
		{name: "forged Lore-Checked", subject: events.AggregateSubject("default", "bead", "bd-forged"),
			body:   outcomeBody("raw-forged-1", "default", "bd-forged", "bd-forged", `,"evil":true`),
			header: nats.Header{events.CheckedHeader: {"outcome.recorded/v1"}, events.TypeHeader: {"outcome.recorded/v1"}},
			reason: `"data.evil": is not allowed`},
		{name: "subject of another project and aggregate", subject: "lore.ev.web.bead.bd-bad5",
			body: outcomeBody("raw-mismatch-1", "mobile", "bd-OTHER", "bd-OTHER", ""), reason: `belongs on "lore.ev.mobile.bead.bd-OTHER"`},
		{name: "no time", subject: events.AggregateSubject("default", "bead", "bd-notime"),
			body:   `{"id":"raw-notime-1","type":"outcome.recorded/v1","project":"default","data":{"bead_id":"bd-notime","duration_ms":900,"retry_count":0,"success":true}}`,
			reason: `field "time"`},
	}
	seqs := make([]uint64, len(cases))
	for i, c := range cases {
		m := nats.NewMsg(c.subject)
		m.Data = []byte(c.body)
		for k, v := range c.header {
			m.Header[k] = v
		}
		m.Header.Set("Nats-Msg-Id", fmt.Sprintf("raw-door-%d", i))
		reply, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: publish: %v", c.name, err)
		}
		var ack pubAck
		if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Seq == 0 {
			t.Fatalf("%s: publish ack %s: %v", c.name, reply.Data, err)
		}
		seqs[i] = ack.Seq
	}
	good := rawAppend(t, nc, events.AggregateSubject("default", "bead", "bd-good"), "raw-good-1",
		outcomeBody("raw-good-1", "default", "", "bd-good", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, good.Seq); err != nil {
		t.Fatal(err)
	}
	if got := foldedTotal(t, n.Store); got != 1 {
		t.Fatalf("folded %d events, want only the good one", got)
	}
	st, err := n.JS.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		dl, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, seqs[i]))
		if err != nil {
			t.Errorf("%s: no dead letter of seq %d: %v", c.name, seqs[i], err)
			continue
		}
		if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, c.reason) {
			t.Errorf("%s: dead-letter reason %q does not name %s", c.name, reason, c.reason)
		}
		if dl.Header.Get(projector.HeaderSubject) != c.subject {
			t.Errorf("%s: dead letter's subject %q, want %q", c.name, dl.Header.Get(projector.HeaderSubject), c.subject)
		}
	}
}

// TestReusedIDWithOtherContentIsDeadLettered: a raw client re-sends an
// event id (outside the stream's duplicate window: each copy is stored)
// once as a copy of the first event (a later time and source: a retry)
// and once with other data. Both are passed over (the first event
// counts); the copy silently, the other content with a dead letter saying
// which event holds the id and what differs.
func TestReusedIDWithOtherContentIsDeadLettered(t *testing.T) {
	n, nc := ifcServe(t)
	subject := events.AggregateSubject("default", "bead", "bd-reuse")
	body := func(at, source string, success bool) string {
		return fmt.Sprintf(`{"id":"raw-reuse-1","type":"outcome.recorded/v1","source":%q,"subject":"bd-reuse","time":%q,"project":"default",`+
			`"data":{"success":%t,"bead_id":"bd-reuse","duration_ms":900,"retry_count":0}}`, source, at, success)
	}
	first := rawAppend(t, nc, subject, "m-1", body("2026-01-02T10:00:00Z", "raw", true))
	retry := rawAppend(t, nc, subject, "m-2", body("2026-01-02T11:00:00Z", "raw-retry", true))
	other := rawAppend(t, nc, subject, "m-3", body("2026-01-02T10:00:00Z", "raw", false))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Runtime.WaitFor(ctx, other.Seq); err != nil {
		t.Fatal(err)
	}
	if got := foldedTotal(t, n.Store); got != 1 {
		t.Fatalf("folded %d events, want the first only", got)
	}
	st, err := n.JS.Stream(ctx, events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, retry.Seq)); err == nil {
		t.Errorf("the retry (seq %d) was dead-lettered", retry.Seq)
	}
	dl, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("%s.%d", events.DLQPrefix, other.Seq))
	if err != nil {
		t.Fatalf("no dead letter of the other content (seq %d): %v", other.Seq, err)
	}
	want := fmt.Sprintf(`id "raw-reuse-1" was folded at seq %d with another data`, first.Seq)
	if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, want) {
		t.Errorf("dead-letter reason %q, want it to say %q", reason, want)
	}
}

// TestDeadLetterWrittenOnceByReplicas: a second replica folding a log with
// poison events, after the dead-letter stream's duplicate window, finds
// them dead-lettered already and writes none again.
func TestDeadLetterWrittenOnceByReplicas(t *testing.T) {
	so := events.StreamOptions{Duplicates: shortDedup}
	a := startNode(t, node.Config{Streams: so})
	runNode(t, a)
	nc, js := natstest.Connect(t, a.ClientURL())
	ctx := context.Background()
	subj := events.AggregateSubject("default", "bead", "bd-1")
	for i := range 3 {
		bad := fmt.Sprintf(`{"id":"poison-%d","type":"outcome.recorded/v1","time":"2026-01-01T00:00:00Z","project":"default","data":{"bead_id":"bd-1","duration_ms":-3,"retry_count":0,"success":true}}`, i)
		rawAppend(t, nc, subj, fmt.Sprintf("poison-%d", i), bad)
	}
	r, err := a.Appender.Append(ctx, outcome(t, "default", "bd-1", day0, true))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Runtime.WaitFor(wctx, r.Seq); err != nil {
		t.Fatal(err)
	}
	if _, msgs := lastSeq(t, js, events.DLQStream); msgs != 3 {
		t.Fatalf("dead letters after one replica: %d, want 3", msgs)
	}
	time.Sleep(3 * shortDedup) // past the dead-letter stream's duplicate window

	b := startNode(t, node.Config{NatsURL: a.ClientURL(), Replica: "lore-b", Streams: so})
	runNode(t, b)
	if err := b.Runtime.WaitFor(wctx, r.Seq); err != nil {
		t.Fatal(err)
	}
	if _, msgs := lastSeq(t, js, events.DLQStream); msgs != 3 {
		t.Fatalf("dead letters after a second replica: %d, want 3 (each once)", msgs)
	}
	if b.Runtime.Poisoned() != 3 {
		t.Fatalf("second replica passed %d poison events, want 3", b.Runtime.Poisoned())
	}
}
