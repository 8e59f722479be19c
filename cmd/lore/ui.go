package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/ui"
)

// `lore ui` prints the dashboard's URL (written by `lore serve` to
// DATA/ui.url, as it writes nats.url) and opens it in a browser when one
// can be started (xdg-open, open); without one it only prints.

type uiOptions struct{ noBrowser bool }

func init() { addCommand(newCmdUI) }

func newCmdUI(f *Factory) *cobra.Command {
	var o uiOptions
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Print the web dashboard's URL and open it in a browser",
		Long: `Print the URL of the web dashboard that "lore serve" serves (--ui, default
` + ui.DefaultAddr + `) and open it in a browser when one exists (xdg-open or open).
The dashboard shows the live announcements, patterns, criteria, knowledge, the
cross-loop registry and an audit control; see docs/dashboard.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUI(cmd.Context(), f, o) },
	}
	cmd.Flags().BoolVar(&o.noBrowser, "no-browser", false, "only print the URL")
	return cmd
}

func runUI(ctx context.Context, f *Factory, o uiOptions) error {
	b, err := os.ReadFile(filepath.Join(f.DataDir, ui.URLFile))
	u := strings.TrimSpace(string(b))
	if err != nil || u == "" {
		return fmt.Errorf("no dashboard is being served from %s: start `lore serve --data %s` (its --ui address serves it)", f.DataDir, f.DataDir)
	}
	fmt.Fprintln(f.Out, u)
	if o.noBrowser {
		return nil
	}
	for _, opener := range []string{"xdg-open", "open"} {
		if path, err := exec.LookPath(opener); err == nil {
			c := exec.CommandContext(ctx, path, u)
			if err := c.Start(); err == nil {
				go func() { _ = c.Wait() }()
				return nil
			}
		}
	}
	fmt.Fprintln(f.Err, "no browser found (xdg-open, open): open the URL above")
	return nil
}

// dashboardAuth is the credential the dashboard requires: the API's user
// and password, or its token.
func dashboardAuth(sec node.Security) ui.Auth {
	return ui.Auth{User: sec.User, Password: sec.Password, Token: sec.Token}
}

// startDashboard serves the dashboard on addr ("" disables) and writes its
// URL to DATA/ui.url; stop ends it and removes the file. Like metrics, an
// address that cannot be bound is a warning, not a failure.
func startDashboard(ctx context.Context, f *Factory, n *node.Node, logger *slog.Logger, addr string, sec node.Security) (stop func()) {
	if addr == "" {
		return func() {}
	}
	auth := dashboardAuth(sec)
	if sec.Authenticates() && !auth.Enabled() {
		fmt.Fprintln(f.Err, "lore: dashboard disabled: it authenticates with --user/--password or --token, which this server does not use")
		return func() {}
	}
	s, err := ui.New(ui.Config{Backend: n, JS: n.JS, Project: f.Project, Auth: auth, Logger: logger,
		TLSCert: sec.TLSCert, TLSKey: sec.TLSKey})
	if err != nil {
		fmt.Fprintf(f.Err, "lore: dashboard disabled: %v\n", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	bound, done, err := s.Serve(ctx, addr)
	if err != nil {
		cancel()
		if errors.Is(err, node.ErrInvalidConfig) {
			fmt.Fprintf(f.Err, "lore: %v\n", err)
		} else {
			fmt.Fprintf(f.Err, "lore: dashboard disabled: %v\n", err)
		}
		return func() {}
	}
	u := s.Scheme() + "://" + bound.String() + "/"
	if h, _, _ := net.SplitHostPort(addr); !node.IsLoopback(h) && sec.TLSCert == "" {
		fmt.Fprintf(f.Err, "lore: dashboard on %s without TLS: the password or token crosses the network in clear (add --tls-cert and --tls-key)\n", addr)
	}
	path := filepath.Join(f.DataDir, ui.URLFile)
	writeURLFile(path, u)
	fmt.Fprintf(f.Err, "dashboard on %s (lore ui opens it)\n", u)
	return func() {
		cancel()
		<-done
		_ = os.Remove(path)
	}
}
