package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	loremcp "github.com/loredev/lore/mcp"
)

// wire is a client speaking raw lines to a lore MCP server run over pipes
// with the stdio transport.
type wire struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startWire(t *testing.T) *wire { return startWireLimited(t, 0) }

func startWireLimited(t *testing.T, limit int) *wire {
	t.Helper()
	srv, err := loremcp.NewServer(loremcp.Config{Caller: startNode(t), Project: "default"})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	w.out.Buffer(make([]byte, 1<<20), 1<<22)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := srv.Run(ctx, &loremcp.Transport{In: inR, Out: outW, MaxLineLength: limit})
		_ = outW.Close()
		w.done <- err
	}()
	t.Cleanup(func() { _ = inW.Close(); cancel(); <-w.done })
	return w
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		w.t.Fatalf("send %q: %v (the server stopped reading)", line, err)
	}
}

// recv reads the next line the server writes.
func (w *wire) recv() string {
	w.t.Helper()
	if !w.out.Scan() {
		w.t.Fatalf("server closed its output: %v", w.out.Err())
	}
	return w.out.Text()
}

// reply is one JSON-RPC response.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseReply(t *testing.T, line string) reply {
	t.Helper()
	var r reply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	return r
}

func parseReplies(t *testing.T, line string) map[string]reply {
	t.Helper()
	var rs []reply
	if err := json.Unmarshal([]byte(line), &rs); err != nil {
		t.Fatalf("batch reply %q: %v", line, err)
	}
	out := map[string]reply{}
	for _, r := range rs {
		out[string(r.ID)] = r
	}
	return out
}

func (w *wire) initialize(version string) {
	w.t.Helper()
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version))
	r := parseReply(w.t, w.recv())
	if r.Error != nil || !strings.Contains(string(r.Result), version) {
		w.t.Fatalf("initialize %s: %+v %s", version, r.Error, r.Result)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

const listTools = `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`

// wantTools checks that line answers id with the tool list.
func wantTools(t *testing.T, r reply, id int) {
	t.Helper()
	if string(r.ID) != fmt.Sprint(id) || r.Error != nil || !strings.Contains(string(r.Result), `"record_outcome"`) {
		t.Fatalf("tools/list %d: id=%s error=%+v", id, r.ID, r.Error)
	}
}

func TestStdioMalformedLinesGetErrorsAndServingGoesOn(t *testing.T) {
	w := startWire(t)
	w.initialize("2025-06-18")
	for _, tc := range []struct {
		line string
		code int
		id   string
	}{
		{"hello", -32700, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
		{`{"jsonrpc":"2.0","id":1} {"x":2}`, -32700, "null"},
		{`42`, -32600, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, -32600, "7"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600, "null"},
		{`[]`, -32600, "null"},
	} {
		w.send(tc.line)
		r := parseReply(t, w.recv())
		if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id {
			t.Errorf("%q: want error %d id %s, got id=%s error=%+v", tc.line, tc.code, tc.id, r.ID, r.Error)
		}
	}
	w.send(fmt.Sprintf(listTools, 2))
	wantTools(t, parseReply(t, w.recv()), 2)

	// A tool call still reaches lore.
	w.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call","arguments":{"endpoint":"audit.stats"}}}`)
	if r := parseReply(t, w.recv()); r.Error != nil || string(r.ID) != "3" || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("tool call after bad lines: id=%s error=%+v %s", r.ID, r.Error, r.Result)
	}
}

func TestStdioBatchRefusedFrom20250618WithAReplyPerRequest(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			w := startWire(t)
			w.initialize(version)
			w.send(`[` + fmt.Sprintf(listTools, 10) + `,` + fmt.Sprintf(listTools, 11) + `,{"jsonrpc":"2.0","method":"notifications/progress"}]`)
			got := map[string]bool{}
			for range 2 {
				r := parseReply(t, w.recv())
				if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batching is not supported") {
					t.Fatalf("batch under %s: want -32600 naming batching, got id=%s %+v", version, r.ID, r.Error)
				}
				got[string(r.ID)] = true
			}
			if !got["10"] || !got["11"] {
				t.Fatalf("batch under %s: replies for %v, want 10 and 11", version, got)
			}
			w.send(`[{"jsonrpc":"2.0","method":"notifications/progress"}]`)
			if r := parseReply(t, w.recv()); r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "null" {
				t.Fatalf("batch of notifications: want -32600 id null, got id=%s %+v", r.ID, r.Error)
			}
			w.send(fmt.Sprintf(listTools, 12))
			wantTools(t, parseReply(t, w.recv()), 12)
		})
	}
}

func TestStdioBatchServedUnder20250326(t *testing.T) {
	w := startWire(t)
	w.initialize("2025-03-26")
	w.send(`[` + fmt.Sprintf(listTools, 20) + `,` + fmt.Sprintf(listTools, 21) + `]`)
	rs := parseReplies(t, w.recv())
	wantTools(t, rs["20"], 20)
	wantTools(t, rs["21"], 21)

	// Invalid elements are answered with their errors (one array); the
	// valid ones are served as a batch.
	w.send(`[` + fmt.Sprintf(listTools, 22) + `,"junk",` + fmt.Sprintf(listTools, 22) + `,{"jsonrpc":"2.0","id":23,"method":5}]`)
	errs := parseReplies(t, w.recv())
	if r := errs["null"]; r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batch element 1") {
		t.Errorf("junk element: %+v", errs)
	}
	if r := errs["22"]; r.Error == nil || !strings.Contains(r.Error.Message, "already in use") {
		t.Errorf("duplicated id: %+v", errs)
	}
	if r := errs["23"]; r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("element whose method is not a string: %+v", errs)
	}
	rs = parseReplies(t, w.recv())
	wantTools(t, rs["22"], 22)

	w.send(fmt.Sprintf(listTools, 24))
	wantTools(t, parseReply(t, w.recv()), 24)
}

func TestStdioOverlongLineIsSkipped(t *testing.T) {
	w := startWireLimited(t, 512)
	w.initialize("2025-06-18")
	w.send(`{"jsonrpc":"2.0","id":30,"method":"tools/list","params":{"cursor":"` + strings.Repeat("x", 5000) + `"}}`)
	if r := parseReply(t, w.recv()); r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "512") {
		t.Fatalf("overlong line: want -32700 naming the limit, got id=%s %+v", r.ID, r.Error)
	}
	w.send(fmt.Sprintf(listTools, 31))
	wantTools(t, parseReply(t, w.recv()), 31)
}
