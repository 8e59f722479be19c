package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type serveOptions struct {
	host, fsync, replica, user, password, nkeyFile, credsFile, tlsCA, tlsCert, tlsKey string
	port, replicas                                                                    int
	tick                                                                              time.Duration
	noSyncCommits, verbose                                                            bool
	snap                                                                              snapshotServeOptions
	ifc                                                                               serveInterfaces
}

func init() { addCommand(newCmdServe) }

func newCmdServe(f *Factory) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run lore: embedded NATS with JetStream, the projectors and the API in one process",
		Long: `Run lore on a local data folder: an embedded NATS server with JetStream
(listening on 127.0.0.1), the projectors folding the log into Pebble read models,
and the query API (NATS request–reply, service "lore").

With --nats URL, lore uses an existing NATS/JetStream (a cluster) instead of
embedding one: each process is then a projector replica with its own read model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.host, "host", "127.0.0.1", "embedded NATS listen address")
	fl.IntVar(&o.port, "port", 4222, "embedded NATS client port (-1: any free port)")
	fl.StringVar(&o.fsync, "fsync", "interval", "embedded JetStream durability: interval (fsync every 2 min; a process crash loses nothing) or always (fsync per event; survives power loss, ~10x slower appends)")
	fl.StringVar(&o.replica, "replica", envOr("LORE_REPLICA", ""), "replica name: the projector's durable consumer (each replica of a cluster needs its own)")
	fl.IntVar(&o.replicas, "stream-replicas", 0, "replicas of lore's streams (default 1 embedded, 3 with --nats)")
	fl.DurationVar(&o.tick, "tick", time.Minute, "append a clock tick this often so decay-driven transitions are announced (0 disables)")
	fl.BoolVar(&o.noSyncCommits, "no-sync-commits", false, "skip Pebble's fsync on projector commits (faster; a crash re-folds the lost tail)")
	fl.BoolVar(&o.verbose, "verbose", false, "log to stderr")
	fl.StringVar(&o.user, "user", os.Getenv("LORE_NATS_USER"), "NATS user (with --nats)")
	fl.StringVar(&o.password, "password", os.Getenv("LORE_NATS_PASSWORD"), "NATS password (with --nats)")
	fl.StringVar(&o.nkeyFile, "nkey", "", "NATS nkey seed file (with --nats)")
	fl.StringVar(&o.credsFile, "creds", "", "NATS credentials file (with --nats)")
	fl.StringVar(&o.tlsCA, "tls-ca", "", "CA certificate to verify the NATS server")
	fl.StringVar(&o.tlsCert, "tls-cert", "", "client certificate for NATS mutual TLS")
	fl.StringVar(&o.tlsKey, "tls-key", "", "client key for NATS mutual TLS")
	declare(fl, rules{"host": host, "port": port, "fsync": oneOf("interval", "always"), "replica": domain("consumer-name"),
		"stream-replicas": between(0, 5), "tick": atLeast(0)})
	freeText(fl, "user", "password", "nkey", "creds", "tls-ca", "tls-cert", "tls-key")
	o.snap.bind(fl)
	o.ifc.addFlags(fl)
	return cmd
}

// natsAuthOptions turns auth flags into nats options.
func natsAuthOptions(o serveOptions) ([]nats.Option, error) {
	var opts []nats.Option
	if o.user != "" {
		opts = append(opts, nats.UserInfo(o.user, o.password))
	}
	if o.nkeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.nkeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: --nkey: %v", errBadInput, err)
		}
		opts = append(opts, opt)
	}
	if o.credsFile != "" {
		opts = append(opts, nats.UserCredentials(o.credsFile))
	}
	if o.tlsCA != "" {
		opts = append(opts, nats.RootCAs(o.tlsCA))
	}
	if o.tlsCert != "" || o.tlsKey != "" {
		opts = append(opts, nats.ClientCert(o.tlsCert, o.tlsKey))
	}
	return opts, nil
}

func runServe(ctx context.Context, f *Factory, o serveOptions) error {
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(f.Err, nil))
	}
	auth, err := natsAuthOptions(o)
	if err != nil {
		return err
	}
	cfg := node.Config{
		DataDir: f.DataDir, NatsURL: f.NatsURL, NatsOptions: auth, Replica: o.replica,
		TickInterval: o.tick, NoSyncCommits: o.noSyncCommits, Logger: logger,
		Embedded: node.EmbeddedOptions{Host: o.host, Port: o.port, SyncAlways: o.fsync == "always"},
	}
	if o.tick == 0 {
		cfg.TickInterval = -1
	}
	cfg.Streams.Replicas = o.replicas
	if cfg.Streams.Replicas == 0 && f.NatsURL != "" {
		cfg.Streams.Replicas = 3
	}
	n, err := node.Start(ctx, cfg)
	if err != nil && f.NatsURL != "" && cfg.Streams.Replicas == 3 && o.replicas == 0 && strings.Contains(err.Error(), "insufficient resources") {
		cfg.Streams.Replicas = 1 // a single-server NATS: R1
		n, err = node.Start(ctx, cfg)
	}
	if err != nil {
		return err
	}
	defer n.Close()
	stopSnapshots, err := o.snap.start(ctx, f, n)
	if err != nil {
		return err
	}
	defer stopSnapshots()
	ifc, err := startInterfaces(ctx, f, n, logger, o.ifc)
	if err != nil {
		return err
	}
	defer ifc.stop()
	svc, err := n.Serve(api.Options{Version: version, Logger: logger, Observe: ifc.observe()})
	if err != nil {
		return err
	}
	defer svc.Stop()
	url := n.ClientURL()
	if n.Server != nil {
		_ = os.WriteFile(filepath.Join(f.DataDir, urlFile), []byte(url+"\n"), 0o644)
		defer os.Remove(filepath.Join(f.DataDir, urlFile))
	}
	fmt.Fprintf(f.Err, "lore serving on %s (data %s, read model at seq %d); Ctrl-C to stop\n", url, f.DataDir, n.Runtime.Seq())
	ifc.running(true)
	err = n.Run(ctx)
	ifc.running(false)
	fmt.Fprintf(f.Err, "lore stopped at seq %d\n", n.Runtime.Seq())
	return err
}
