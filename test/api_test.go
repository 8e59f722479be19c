package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/node"
)

// serveAPI starts a node with its projector and API; it returns a plain
// NATS connection, as a client in another language would have.
func ifcServe(t *testing.T) (*node.Node, *nats.Conn) {
	t.Helper()
	n := startNode(t, node.Config{})
	runNode(t, n)
	svc, err := n.Serve(api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return n, nc
}

func ifcRequest(t *testing.T, nc *nats.Conn, subject, body string) *nats.Msg {
	t.Helper()
	m, err := nc.Request(subject, []byte(body), 10*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	return m
}

const ifcOutcome = `{"id":"%s","type":"outcome.recorded/v1","source":"py-agent","time":"2026-01-02T10:00:00Z","project":"default",` +
	`"data":{"bead_id":"%s","duration_ms":%d,"retry_count":0,"success":true}}`

// stats reads audit.stats with a plain request.
func ifcStats(t *testing.T, nc *nats.Conn) (total uint64, byType map[string]uint64) {
	t.Helper()
	m := ifcRequest(t, nc, "lore.api.audit.stats", `{}`)
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("audit.stats: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	var s struct {
		Total  uint64            `json:"total"`
		ByType map[string]uint64 `json:"by_type"`
	}
	if err := json.Unmarshal(m.Data, &s); err != nil {
		t.Fatalf("audit.stats reply %s: %v", m.Data, err)
	}
	return s.Total, s.ByType
}

func TestAPIWithPlainNATSClient(t *testing.T) {
	_, nc := ifcServe(t)

	m := ifcRequest(t, nc, "lore.api.record.event", `{"args":`+fmt.Sprintf(ifcOutcome, "01JAPI0000000000000000001", "bd-1", 1200)+`}`)
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("record.event: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	var reply api.CommandReply
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Appended) != 1 || reply.Appended[0].Seq == 0 || !reply.Projected {
		t.Fatalf("record.event reply = %s, want one appended event, projected", m.Data)
	}
	if _, byType := ifcStats(t, nc); byType["outcome.recorded/v1"] != 1 {
		t.Fatalf("audit.stats by type = %v, want one outcome", byType)
	}

	tests := []struct {
		name, subject, body string
		code, mention       string
	}{
		{"body is not JSON", "lore.api.audit.stats", `not json`, "400", "not JSON"},
		{"data breaks the schema", "lore.api.record.event", `{"args":` + fmt.Sprintf(ifcOutcome, "01JAPI0000000000000000002", "bd-2", -1) + `}`, "400", "duration_ms"},
		{"unknown type", "lore.api.record.event", `{"args":{"type":"nothing.happened/v1","data":{}}}`, "400", "nothing.happened/v1"},
		{"audit of a command", "lore.api.record.event", `{"args":{},"at_seq":1}`, "400", "command"},
		{"stale expected sequence", "lore.api.record.event", `{"expect_last_seq":0,"args":` + fmt.Sprintf(ifcOutcome, "01JAPI0000000000000000003", "bd-1", 5) + `}`, "409", ""},
	}
	if _, ok := app.Lookup("learning", "criterion"); ok {
		tests = append(tests, struct{ name, subject, body, code, mention string }{
			"missing entity", "lore.api.learning.criterion", `{"args":{"criterion":"never-seen"}}`, "404", "never-seen"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ifcRequest(t, nc, tt.subject, tt.body)
			if got := m.Header.Get(micro.ErrorCodeHeader); got != tt.code {
				t.Fatalf("code = %q (%s), want %s", got, m.Header.Get(micro.ErrorHeader), tt.code)
			}
			msg := m.Header.Get(micro.ErrorHeader)
			if !strings.Contains(msg, tt.mention) {
				t.Fatalf("error %q does not mention %q", msg, tt.mention)
			}
			var body api.Error
			if err := json.Unmarshal(m.Data, &body); err != nil || body.Code != tt.code || body.Message == "" {
				t.Fatalf("error body = %s (%v), want {\"error\": ..., \"code\": %q}", m.Data, err, tt.code)
			}
		})
	}
	if total, _ := ifcStats(t, nc); total != 1 {
		t.Fatalf("after refused requests the log folded %d events, want 1", total)
	}
}

func TestServiceDiscoveryListsEndpoints(t *testing.T) {
	_, nc := ifcServe(t)
	m := ifcRequest(t, nc, "$SRV.INFO.lore", "")
	var info micro.Info
	if err := json.Unmarshal(m.Data, &info); err != nil {
		t.Fatalf("$SRV.INFO.lore reply %s: %v", m.Data, err)
	}
	if info.Name != api.ServiceName {
		t.Fatalf("service name = %q, want %q", info.Name, api.ServiceName)
	}
	got := map[string]micro.EndpointInfo{}
	for _, e := range info.Endpoints {
		got[e.Subject] = e
	}
	for _, e := range app.Endpoints() {
		ei, ok := got[e.Subject()]
		if !ok {
			t.Errorf("discovery misses %s", e.Subject())
			continue
		}
		if ei.Metadata["doc"] != e.Doc || ei.Metadata["group"] != e.Group {
			t.Errorf("%s metadata = %v, want its doc and group", e.Subject(), ei.Metadata)
		}
	}
	if _, ok := got["lore.api.audit.stats"]; !ok {
		t.Fatal("discovery misses lore.api.audit.stats")
	}
}
