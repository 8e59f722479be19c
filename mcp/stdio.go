package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// batchlessVersion is the first MCP protocol version without JSON-RPC
// batching (it was added in 2025-03-26 and removed in 2025-06-18).
// Versions compare as strings (they are dates).
const batchlessVersion = "2025-06-18"

// Transport serves MCP over newline-delimited JSON on In/Out (stdin and
// stdout for `lore mcp`) and keeps serving whatever the client sends. The
// SDK's stream transport ends the session on the first line it cannot
// decode; Transport screens every line before the SDK sees it:
//
//   - a line that is not JSON gets a parse error (-32700, id null);
//   - JSON that is not a JSON-RPC message gets an invalid-request error
//     (-32600) with the message's id when it has a usable one, else null;
//   - a line longer than MaxLineLength gets a parse error and is skipped;
//   - a batch (JSON array) is what the negotiated protocol version says:
//     before 2025-06-18 its valid messages are passed on as one batch (the
//     SDK answers with an array) and each invalid element, duplicated id or
//     id still in flight gets its error, in one array; from 2025-06-18 on a
//     batch is refused with an invalid-request error for each request in it
//     (by its id, so no caller waits for a reply that never comes), or one
//     with id null when none has an id. Before the version is negotiated
//     the SDK's rule holds: batches are accepted.
//
// Only well-formed single messages or well-formed batches reach the SDK, one
// per line, so its session never fails on input.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// MaxLineLength bounds one incoming line (0: sdk.DefaultMaxLineLength).
	MaxLineLength int
}

var _ sdk.Transport = (*Transport)(nil)

// Connect starts screening In and returns the SDK connection reading the
// screened lines and writing to Out.
func (t *Transport) Connect(ctx context.Context) (sdk.Connection, error) {
	if t.In == nil || t.Out == nil {
		return nil, errors.New("mcp: transport needs In and Out")
	}
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = sdk.DefaultMaxLineLength
	}
	pr, pw := io.Pipe()
	s := &screen{out: t.Out, inflight: map[jsonrpc.ID]bool{}, closed: make(chan struct{})}
	s.answered = sync.NewCond(&s.mu)
	go s.run(bufio.NewReader(t.In), pw, limit)
	return (&sdk.IOTransport{Reader: pr, Writer: (*screenWriter)(s), MaxLineLength: -1}).Connect(ctx)
}

// screen is the state shared by the line screener and the writer.
type screen struct {
	wmu sync.Mutex // serialises writes to out: one message (or array) per Write
	out io.Writer

	mu       sync.Mutex
	version  string              // negotiated protocol version, "" before
	initID   *jsonrpc.ID         // id of the initialize request, while unanswered
	initWait chan struct{}       // closed when the initialize request is answered
	inflight map[jsonrpc.ID]bool // ids of requests passed on and not yet answered
	answered *sync.Cond          // on mu: signalled when inflight shrinks or the connection closes

	closeOnce sync.Once
	closed    chan struct{} // closed when the SDK closes the connection
}

// screenWriter is the SDK's writer: it notes answered ids and the
// negotiated version, then writes.
type screenWriter screen

func (w *screenWriter) Write(p []byte) (int, error) {
	s := (*screen)(w)
	s.noteOutgoing(p)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.out.Write(p)
}

func (w *screenWriter) Close() error {
	s := (*screen)(w)
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		s.answered.Broadcast()
		s.mu.Unlock()
	})
	return nil
}

// noteOutgoing records the responses in p (one message or an array).
func (s *screen) noteOutgoing(p []byte) {
	var raws []json.RawMessage
	if t := bytes.TrimSpace(p); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &raws) != nil {
			return
		}
	} else {
		raws = []json.RawMessage{t}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			continue
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			continue
		}
		delete(s.inflight, resp.ID)
		s.answered.Broadcast()
		if s.initID != nil && *s.initID == resp.ID {
			s.initID = nil
			close(s.initWait)
			s.initWait = nil
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
				s.version = r.ProtocolVersion
			}
		}
	}
}

// wireError is a JSON-RPC error response; ID is null when unknown.
type wireError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newWireError(id json.RawMessage, code int64, msg string) wireError {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := wireError{JSONRPC: "2.0", ID: id}
	e.Error.Code, e.Error.Message = code, msg
	return e
}

// reply writes one error, or several as one array when batch.
func (s *screen) reply(batch bool, errs ...wireError) error {
	var v any = errs
	if !batch {
		v = errs[0]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("mcp: encode error reply: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.out.Write(append(b, '\n'))
	return err
}

// run screens lines from in until it ends or the SDK stops reading, then
// closes pw (the SDK then sees the end of its input).
func (s *screen) run(in *bufio.Reader, pw *io.PipeWriter, limit int) {
	var err error
	defer func() { pw.CloseWithError(err) }()
	for {
		line, long, rerr := readLine(in, limit)
		if len(line) > 0 || long {
			var pass []byte
			if pass, err = s.screenLine(line, long, limit); err != nil {
				return
			}
			if pass != nil {
				if _, err = pw.Write(append(pass, '\n')); err != nil {
					return
				}
			}
		}
		if err = rerr; err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
				// The client has said all it will: its requests are still
				// answered before the session ends.
				s.drain()
			}
			return
		}
	}
}

// drain waits until every request passed on is answered (or cancelled),
// or the connection is closed.
func (s *screen) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.inflight) > 0 {
		select {
		case <-s.closed:
			return
		default:
		}
		s.answered.Wait()
	}
}

// readLine reads one line (without its end and surrounding blanks). A line
// over limit bytes is consumed and reported as long, without its content.
func readLine(in *bufio.Reader, limit int) ([]byte, bool, error) {
	var buf []byte
	long := false
	for {
		frag, err := in.ReadSlice('\n')
		if !long {
			buf = append(buf, frag...)
			if len(buf) > limit+2 { // +2: the line's own \r\n
				long, buf = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(buf), long, err
	}
}

// screenLine decides what a line becomes: the bytes passed to the SDK (nil:
// none), after writing any error replies. The error is a write failure.
func (s *screen) screenLine(line []byte, long bool, limit int) ([]byte, error) {
	if long {
		return nil, s.reply(false, newWireError(nil, jsonrpc.CodeParseError,
			fmt.Sprintf("parse error: message longer than %d bytes", limit)))
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		return nil, s.reply(false, newWireError(nil, jsonrpc.CodeParseError, "parse error: "+errText(err)))
	}
	if line[0] != '[' {
		msg, werr := s.check(line, nil)
		if werr != nil {
			return nil, s.reply(false, *werr)
		}
		s.admit(msg)
		return line, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		return nil, s.reply(false, newWireError(nil, jsonrpc.CodeParseError, "parse error: "+errText(err)))
	}
	if len(elems) == 0 {
		return nil, s.reply(false, newWireError(nil, jsonrpc.CodeInvalidRequest, "invalid request: empty batch"))
	}
	// A batch sent while initialize is unanswered waits for the answer: the
	// negotiated version decides what a batch is.
	s.mu.Lock()
	wait := s.initWait
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-s.closed:
			return nil, io.ErrClosedPipe
		}
	}
	s.mu.Lock()
	version := s.version
	s.mu.Unlock()
	if version >= batchlessVersion {
		return nil, s.refuseBatch(elems, version)
	}
	var (
		pass []json.RawMessage
		errs []wireError
		seen = map[jsonrpc.ID]bool{}
	)
	for i, raw := range elems {
		msg, werr := s.check(raw, seen)
		if werr != nil {
			werr.Error.Message = fmt.Sprintf("batch element %d: %s", i, werr.Error.Message)
			errs = append(errs, *werr)
			continue
		}
		if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
			seen[r.ID] = true
		}
		pass = append(pass, raw)
	}
	if len(errs) > 0 {
		if err := s.reply(true, errs...); err != nil {
			return nil, err
		}
	}
	if len(pass) == 0 {
		return nil, nil
	}
	for _, raw := range pass {
		msg, _ := jsonrpc.DecodeMessage(raw)
		s.admit(msg)
	}
	out, err := json.Marshal(pass)
	if err != nil {
		return nil, fmt.Errorf("mcp: re-encode batch: %w", err)
	}
	return out, nil
}

// refuseBatch answers a batch sent under a protocol version without
// batching: an invalid-request error per request id, or one with id null.
func (s *screen) refuseBatch(elems []json.RawMessage, version string) error {
	text := fmt.Sprintf("invalid request: JSON-RPC batching is not supported in MCP protocol version %s and later "+
		"(this session: %s); send each message on its own line", batchlessVersion, version)
	var errs []wireError
	for _, raw := range elems {
		if id := idOf(raw); id != nil {
			errs = append(errs, newWireError(id, jsonrpc.CodeInvalidRequest, text))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, newWireError(nil, jsonrpc.CodeInvalidRequest, text))
	}
	for _, e := range errs {
		if err := s.reply(false, e); err != nil {
			return err
		}
	}
	return nil
}

// check decodes one message; it is refused when it is not JSON-RPC, or its
// id is already used in this batch (seen) or by a request in flight.
func (s *screen) check(raw json.RawMessage, seen map[jsonrpc.ID]bool) (jsonrpc.Message, *wireError) {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		e := newWireError(idOf(raw), jsonrpc.CodeInvalidRequest, "invalid request: "+errText(err))
		return nil, &e
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() && seen != nil {
		s.mu.Lock()
		busy := s.inflight[r.ID]
		s.mu.Unlock()
		if busy || seen[r.ID] {
			e := newWireError(idOf(raw), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("invalid request: id %v is already in use", r.ID.Raw()))
			return nil, &e
		}
	}
	return msg, nil
}

// admit records a request passed on to the SDK (in flight until answered
// or cancelled; the initialize request's answer carries the negotiated
// version).
func (s *screen) admit(msg jsonrpc.Message) {
	r, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.IsCall() {
		// A cancelled request may get no answer: it is no longer awaited.
		var p struct {
			RequestID any `json:"requestId"`
		}
		if r.Method == "notifications/cancelled" && json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				delete(s.inflight, id)
				s.answered.Broadcast()
			}
		}
		return
	}
	s.inflight[r.ID] = true
	if r.Method == "initialize" && s.initID == nil {
		id := r.ID
		s.initID, s.initWait = &id, make(chan struct{})
	}
}

// idOf is a message's id when it is a JSON string or number, else nil.
func idOf(raw json.RawMessage) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return "not a single JSON value"
	}
	return err.Error()
}
