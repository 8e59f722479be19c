package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/test/natstest"
)

// pubAck is JetStream's answer to a publish on a stream subject.
type pubAck struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// rawAppend publishes an envelope the way any NATS client can: a request
// on the documented subject with a Nats-Msg-Id header, answered by
// JetStream's publish ack.
func rawAppend(t *testing.T, nc *nats.Conn, subject, id, body string) pubAck {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Header.Set("Nats-Msg-Id", id)
	m.Data = []byte(body)
	reply, err := nc.RequestMsg(m, 10*time.Second)
	if err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	var ack pubAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Seq == 0 {
		t.Fatalf("publish ack %s: %v", reply.Data, err)
	}
	return ack
}

func TestRawClientAppendIsFolded(t *testing.T) {
	n, nc := ifcServe(t)
	id := "01JRAW0000000000000000001"
	subj := events.AggregateSubject("default", "bead", "bd-raw.1")
	if subj != "lore.ev.default.bead.bd-raw%2E1" {
		t.Fatalf("documented subject = %s", subj)
	}
	body := fmt.Sprintf(ifcOutcome, id, "bd-raw.1", 900)
	first := rawAppend(t, nc, subj, id, body)
	if first.Stream != events.LogStream || first.Duplicate {
		t.Fatalf("first publish ack = %+v", first)
	}
	// A retry with the same id is deduplicated by the stream.
	if again := rawAppend(t, nc, subj, id, body); !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retry ack = %+v, want a duplicate of seq %d", again, first.Seq)
	}
	natstest.WaitFor(t, 10*time.Second, func() error {
		if total, byType := ifcStats(t, nc); total != 1 || byType["outcome.recorded/v1"] != 1 {
			return fmt.Errorf("stats total %d by type %v, want the one raw outcome", total, byType)
		}
		return nil
	})

	// A raw event breaking its schema is dead-lettered with its reason; the
	// projector moves on.
	badID := "01JRAW0000000000000000002"
	bad := rawAppend(t, nc, events.AggregateSubject("default", "bead", "bd-bad"), badID, fmt.Sprintf(ifcOutcome, badID, "bd-bad", -3))
	if err := n.Runtime.WaitFor(context.Background(), bad.Seq); err != nil {
		t.Fatal(err)
	}
	st, err := n.JS.Stream(context.Background(), events.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := st.GetLastMsgForSubject(context.Background(), fmt.Sprintf("%s.%d", events.DLQPrefix, bad.Seq))
	if err != nil {
		t.Fatalf("dead letter of seq %d: %v", bad.Seq, err)
	}
	if reason := dl.Header.Get(projector.HeaderReason); !strings.Contains(reason, "duration_ms") {
		t.Fatalf("dead-letter reason %q does not name the field", reason)
	}
	if total, _ := ifcStats(t, nc); total != 1 {
		t.Fatalf("stats total %d after a poison event, want 1", total)
	}
}
