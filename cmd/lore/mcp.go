package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/mcp"
	"github.com/loredev/lore/node"
)

func init() { addCommand(newCmdMCP) }

type mcpOptions struct {
	embed, noEndpointTools bool
}

func newCmdMCP(f *Factory) *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [--embed]",
		Short: "Serve lore to coding agents over MCP (stdio)",
		Long: `Run an MCP server on stdin/stdout so coding agents call lore as tools:
record_outcome, record_error, add_knowledge, inject_context, find_patterns,
promote, deprecate, quarantine, why, call, list_endpoints, and one tool per
API endpoint (<group>_<name>).

By default the tools call a running lore (lore serve, or --nats URL); the
connection is made on the first call. With --embed, lore mcp runs lore itself
on the data folder (embedded NATS on a free loopback port, the projectors,
the API) for as long as the agent keeps it open.

Register it with Claude Code:  claude mcp add lore -- lore mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.embed, "embed", false, "run an embedded lore on the data folder instead of connecting to one")
	cmd.Flags().BoolVar(&o.noEndpointTools, "curated-only", false, "offer only the curated tools, call and list_endpoints")
	return cmd
}

// lazyCaller dials lore on the first call, so the MCP server starts (and
// lists its tools) even before lore runs; each failed dial is retried on
// the next call.
type lazyCaller struct {
	f  *Factory
	mu sync.Mutex
	c  *api.Client
}

func (l *lazyCaller) CallRaw(ctx context.Context, group, name string, req api.Request) (json.RawMessage, error) {
	l.mu.Lock()
	if l.c == nil {
		nc, err := l.f.Conn()
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.c = api.NewClient(nc)
	}
	c := l.c
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, l.f.Timeout)
	defer cancel()
	return c.CallRaw(ctx, group, name, req)
}

func runMCP(ctx context.Context, f *Factory, o mcpOptions) error {
	var caller mcp.Caller = &lazyCaller{f: f}
	if o.embed {
		n, err := node.Start(ctx, node.Config{DataDir: f.DataDir, Embedded: node.EmbeddedOptions{Port: -1},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fmt.Errorf("embedded lore on %s: %w", f.DataDir, err)
		}
		defer n.Close()
		svc, err := n.Serve(api.Options{Version: version})
		if err != nil {
			return err
		}
		defer svc.Stop()
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = n.Run(rctx) }()
		defer func() { cancel(); <-done }()
		caller = api.NewClient(n.NC)
	}
	srv, err := mcp.NewServer(mcp.Config{Caller: caller, Project: f.Project, Source: mcpSource(f), Version: version,
		NoEndpointTools: o.noEndpointTools})
	if err != nil {
		return err
	}
	return mcp.Serve(ctx, srv, f.In, f.Out)
}

// mcpSource is the source of events recorded through MCP: --source unless
// left at the CLI default.
func mcpSource(f *Factory) string {
	if f.Source == "" || f.Source == "cli" {
		return "mcp"
	}
	return f.Source
}
