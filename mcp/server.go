// Package mcp serves lore to coding agents over the Model Context Protocol
// (`lore mcp`, stdio): curated tools (record_outcome, record_error,
// add_knowledge, inject_context, find_patterns, promote, deprecate,
// quarantine, why), one tool per API endpoint ("<group>_<name>"), a generic
// `call` and `list_endpoints`. Every tool calls a lore endpoint through a
// Caller: the NATS API client of a running lore, or an embedded node.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
)

// Caller calls lore endpoints; *api.Client implements it. It must be safe
// for concurrent use.
type Caller interface {
	CallRaw(ctx context.Context, group, name string, req api.Request) (json.RawMessage, error)
}

var _ Caller = (*api.Client)(nil)

// Config configures the MCP server.
type Config struct {
	// Caller reaches lore (required).
	Caller Caller
	// Project and Source are the defaults of every request ("" → lore's
	// default project; source "mcp").
	Project, Source string
	// Version is reported to clients.
	Version string
	// Endpoints are the endpoints offered (default app.Endpoints()).
	Endpoints []app.Endpoint
	// NoEndpointTools leaves out the per-endpoint tools (the curated ones,
	// call and list_endpoints remain).
	NoEndpointTools bool
}

// instructions tell the agent how to use lore.
const instructions = `lore is the learning memory of the agents working on this code base.
At the start of a task call inject_context (and find_patterns) and keep the returned text in mind.
When a subtask ends call record_outcome; when an error happens call record_error; when you learn
something reusable call add_knowledge. Use why to understand a state, list_endpoints and call for
everything else (audits with as_of).`

// NewServer returns an MCP server exposing lore's tools.
func NewServer(cfg Config) (*sdk.Server, error) {
	if cfg.Caller == nil {
		return nil, errors.New("mcp: a caller is required")
	}
	if cfg.Source == "" {
		cfg.Source = "mcp"
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.Endpoints == nil {
		cfg.Endpoints = app.Endpoints()
	}
	s := &server{cfg: cfg, eps: map[string]app.Endpoint{}}
	for _, e := range cfg.Endpoints {
		s.eps[e.Group+"."+e.Name] = e
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "lore", Title: "lore — learning memory of agent swarms", Version: cfg.Version},
		&sdk.ServerOptions{Instructions: instructions})
	// add registers a tool with its input schema. A tool whose arguments
	// reach an endpoint as given leaves every check to lore's command
	// pipeline, so the error is the one every door gives; a tool that
	// rewrites its arguments (check) is checked against its own schema
	// first (an unknown, missing or mistyped argument is a tool error
	// naming it), since the endpoint never sees them as sent.
	add := func(t *sdk.Tool, schema obj, h sdk.ToolHandler, check bool) error {
		v, err := newValidator(schema)
		if err != nil {
			return fmt.Errorf("mcp: tool %s: %w", t.Name, err)
		}
		t.InputSchema = schema
		srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args, err := decodeArgs(req.Params.Arguments)
			if err == nil && check {
				err = v.check(args)
			}
			if err != nil {
				return errorResult(fmt.Errorf("%s: %w", t.Name, err)), nil
			}
			return h(ctx, req)
		})
		return nil
	}
	for _, t := range namedTools() {
		if err := add(&sdk.Tool{Name: t.name, Description: t.desc}, t.schema, s.namedHandler(t), t.rewrites); err != nil {
			return nil, err
		}
	}
	if err := add(&sdk.Tool{Name: "call", Description: "Call any lore API endpoint by name (see list_endpoints), optionally as an audit at a past time or sequence."}, object("an endpoint and its arguments", obj{
		"endpoint":        str("group.name, e.g. learning.weights"),
		"args":            obj{"type": "object", "additionalProperties": true, "description": "the endpoint's arguments"},
		"project":         projectProp,
		"now":             str("evaluate decay at this RFC 3339 time instead of now"),
		"as_of":           str("audit: answer from the state as of this RFC 3339 time (queries only)"),
		"at_seq":          integer("audit: answer from the state after this log sequence (queries only)"),
		"idempotency_key": idempotencyProp,
	}, "endpoint"), s.callTool, true); err != nil {
		return nil, err
	}
	if err := add(&sdk.Tool{Name: "list_endpoints", Description: "List lore's API endpoints: name, NATS subject, query or command, what it does, and the tool exposing it."},
		object("no arguments", obj{}), s.listTool, true); err != nil {
		return nil, err
	}
	for _, e := range cfg.Endpoints {
		schema, err := endpointSchema(e)
		if err != nil {
			return nil, fmt.Errorf("mcp: endpoint %s: %w", e.Subject(), err)
		}
		if cfg.NoEndpointTools {
			continue
		}
		if err := add(&sdk.Tool{Name: toolName(e), Description: endpointDesc(e)}, schema, s.endpointHandler(e), false); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

type server struct {
	cfg Config
	eps map[string]app.Endpoint
}

func toolName(e app.Endpoint) string { return e.Group + "_" + e.Name }

func kindOfEndpoint(e app.Endpoint) string {
	if e.Command != nil {
		return "command"
	}
	return "query"
}

func endpointDesc(e app.Endpoint) string {
	return fmt.Sprintf("lore %s %s.%s: %s", kindOfEndpoint(e), e.Group, e.Name, e.Doc)
}

// errorResult is a tool error the agent sees (and can correct).
func errorResult(err error) *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	r.SetError(err)
	if len(r.Content) == 0 {
		r.Content = []sdk.Content{&sdk.TextContent{Text: err.Error()}}
	}
	r.IsError = true
	return r
}

// decodeArgs parses tool arguments as an object ({} when absent).
func decodeArgs(raw json.RawMessage) (obj, error) {
	a := obj{}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %v", err)
	}
	return a, nil
}

// invoke calls group.name with args, taking "project" from args when given.
func (s *server) invoke(ctx context.Context, group, name string, args obj, req api.Request, text bool) *sdk.CallToolResult {
	if _, ok := s.eps[group+"."+name]; !ok {
		return errorResult(fmt.Errorf("lore: endpoint lore.api.%s.%s is not available in this lore (see list_endpoints)", group, name))
	}
	if p, ok := args["project"].(string); ok && p != "" && req.Project == "" {
		req.Project = p
	}
	// project and idempotency_key belong to the request, unless the
	// endpoint takes them as arguments.
	e := s.eps[group+"."+name]
	if !slices.Contains(e.ArgNames(), "project") {
		delete(args, "project")
	}
	if k, ok := args["idempotency_key"].(string); ok && !slices.Contains(e.ArgNames(), "idempotency_key") {
		req.IdempotencyKey = k
		delete(args, "idempotency_key")
	}
	if req.Project == "" {
		req.Project = s.cfg.Project
	}
	req.Source = s.cfg.Source
	raw, err := json.Marshal(args)
	if err != nil {
		return errorResult(err)
	}
	req.Args = raw
	reply, err := s.cfg.Caller.CallRaw(ctx, group, name, req)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return errorResult(fmt.Errorf("lore.api.%s.%s: %s (code %s)", group, name, ae.Message, ae.Code))
		}
		return errorResult(err)
	}
	return replyResult(reply, text)
}

// replyResult returns the reply's JSON; with text, a command's or query's
// "text" field (a prompt block) comes first.
func replyResult(reply json.RawMessage, text bool) *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	if text {
		var v struct {
			Text   string `json:"text"`
			Result struct {
				Text string `json:"text"`
			} `json:"result"`
		}
		if json.Unmarshal(reply, &v) == nil {
			t := v.Text
			if t == "" {
				t = v.Result.Text
			}
			if t != "" {
				r.Content = append(r.Content, &sdk.TextContent{Text: t})
			}
		}
	}
	r.Content = append(r.Content, &sdk.TextContent{Text: string(reply)})
	return r
}

func (s *server) namedHandler(t named) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Errorf("%s: %w", t.name, err)), nil
		}
		group, name, out, err := t.route(args)
		if err != nil {
			return errorResult(fmt.Errorf("%s: %w", t.name, err)), nil
		}
		if p, ok := args["project"].(string); ok && p != "" {
			out["project"] = p
		}
		return s.invoke(ctx, group, name, out, api.Request{}, t.text), nil
	}
}

func (s *server) endpointHandler(e app.Endpoint) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			return errorResult(fmt.Errorf("%s: %w", toolName(e), err)), nil
		}
		return s.invoke(ctx, e.Group, e.Name, args, api.Request{}, false), nil
	}
}

// callArgs are the arguments of the call tool.
type callArgs struct {
	Endpoint string          `json:"endpoint"`
	Args     json.RawMessage `json:"args"`
	Project  string          `json:"project"`
	Now      string          `json:"now"`
	AsOf     string          `json:"as_of"`
	AtSeq    uint64          `json:"at_seq"`
	// IdempotencyKey of a command (api.Request.IdempotencyKey).
	IdempotencyKey string `json:"idempotency_key"`
}

func (s *server) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var a callArgs
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return errorResult(fmt.Errorf("call: arguments: %v", err)), nil
		}
	}
	group, name, ok := strings.Cut(strings.TrimPrefix(a.Endpoint, "lore.api."), ".")
	if !ok || group == "" || name == "" {
		return errorResult(fmt.Errorf("call: field \"endpoint\": %q is not group.name (see list_endpoints)", a.Endpoint)), nil
	}
	args := obj{}
	if len(a.Args) > 0 && string(a.Args) != "null" {
		if err := json.Unmarshal(a.Args, &args); err != nil {
			return errorResult(fmt.Errorf("call: field \"args\": must be an object: %v", err)), nil
		}
	}
	r := api.Request{Project: a.Project, AtSeq: a.AtSeq, IdempotencyKey: a.IdempotencyKey}
	for _, tf := range []struct {
		field, val string
		dst        **time.Time
	}{{"now", a.Now, &r.Now}, {"as_of", a.AsOf, &r.AsOf}} {
		if tf.val == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, tf.val)
		if err != nil {
			return errorResult(fmt.Errorf("call: field %q: %q is not an RFC 3339 time", tf.field, tf.val)), nil
		}
		*tf.dst = &t
	}
	return s.invoke(ctx, group, name, args, r, false), nil
}

// endpointInfo is one line of list_endpoints.
type endpointInfo struct {
	Endpoint string `json:"endpoint"`
	Subject  string `json:"subject"`
	Kind     string `json:"kind"`
	Doc      string `json:"doc"`
	Tool     string `json:"tool,omitempty"`
}

func (s *server) listTool(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	curated := map[string]string{}
	for _, t := range namedTools() {
		if g, n, _, err := t.route(obj{"id": "x", "kind": "pattern"}); err == nil {
			curated[g+"."+n] = t.name
		}
	}
	out := make([]endpointInfo, 0, len(s.cfg.Endpoints))
	for _, e := range s.cfg.Endpoints {
		tool := curated[e.Group+"."+e.Name]
		if tool == "" && !s.cfg.NoEndpointTools {
			tool = toolName(e)
		}
		out = append(out, endpointInfo{Endpoint: e.Group + "." + e.Name, Subject: e.Subject(), Kind: kindOfEndpoint(e), Doc: e.Doc, Tool: tool})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return errorResult(err), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
}

// Serve runs srv over in and out (stdin and stdout) until the client
// disconnects or ctx ends; a malformed line or a batch gets its JSON-RPC
// error reply and the session goes on (see Transport).
func Serve(ctx context.Context, srv *sdk.Server, in io.Reader, out io.Writer) error {
	return srv.Run(ctx, &Transport{In: in, Out: out})
}
