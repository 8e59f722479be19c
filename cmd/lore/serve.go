package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/ui"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type serveOptions struct {
	host, fsync, replica, uiAddr      string
	port, replicas, maxPayload        int
	auditEvery, auditKeep, auditDisk  int
	memory                            memoryFlags
	tick, foldWait                    time.Duration
	noSyncCommits, verbose, tlsVerify bool
	snap                              snapshotServeOptions
	ifc                               serveInterfaces
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
embedding one: each process is then a projector replica with its own read model.

A --host or --metrics address beyond loopback is refused (exit code 2) unless
authentication is configured: --user/--password, --token, --nkey, or
--tls-verify with --tls-ca; --tls-cert/--tls-key serve TLS. Clients present
the same flags (or LORE_NATS_* variables). See docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.host, "host", "127.0.0.1", "embedded NATS listen address (beyond loopback: authentication required)")
	fl.IntVar(&o.port, "port", 4222, "embedded NATS client port (-1: any free port)")
	fl.StringVar(&o.fsync, "fsync", "interval", "embedded JetStream durability: interval (fsync every 2 min; a process crash loses nothing) or always (fsync per event; survives power loss, ~10x slower appends)")
	fl.StringVar(&o.replica, "replica", envOr("LORE_REPLICA", ""), "replica name: the projector's durable consumer (each replica of a cluster needs its own)")
	fl.IntVar(&o.maxPayload, "max-payload", node.DefaultMaxPayload>>20, "embedded NATS: MiB one message may carry, a request or an API reply (a larger reply is refused with code 413; NATS allows up to 64)")
	fl.IntVar(&o.replicas, "stream-replicas", 0, "replicas of lore's streams (default 1 embedded, 3 with --nats)")
	fl.DurationVar(&o.tick, "tick", time.Minute, "append a clock tick this often so decay-driven transitions are announced (0 disables)")
	fl.DurationVar(&o.foldWait, "fold-wait", 10*time.Second, "how long a command waits for its events to be folded before it replies with projected false (they are in the log and folded later)")
	fl.BoolVar(&o.noSyncCommits, "no-sync-commits", false, "skip Pebble's fsync on projector commits (faster; a crash re-folds the lost tail)")
	fl.BoolVar(&o.verbose, "verbose", false, "log to stderr")
	fl.BoolVar(&o.tlsVerify, "tls-verify", false, "embedded NATS: require client certificates signed by --tls-ca (mutual TLS)")
	fl.IntVar(&o.auditEvery, "audit-checkpoint-every", node.DefaultAuditCheckpointEvery, "keep a point an --as-of/--at-seq audit starts from every N events, so it folds at most about N events: a local checkpoint of the read model every 16 intervals, the writes between as delta tables (0: none, audits fold the whole log)")
	fl.IntVar(&o.auditKeep, "audit-checkpoint-keep", node.DefaultAuditCheckpointKeep, "at most this many audit checkpoints (0: no bound but --audit-checkpoint-disk; older ones are thinned out evenly over the log, and new ones taken as far apart as the kept ones)")
	fl.IntVar(&o.auditDisk, "audit-checkpoint-disk", node.DefaultAuditCheckpointDiskMiB, "MiB of disk the audit checkpoints and deltas may hold beyond the live read model (0: no bound; older checkpoints are thinned out evenly over the log, and new ones taken as far apart as the kept ones)")
	fl.StringVar(&o.uiAddr, "ui", envOr("LORE_UI", ui.DefaultAddr), "serve the web dashboard on this address (\"\" disables; beyond loopback: authentication required; `lore ui` opens it)")
	o.memory.bind(fl)
	declare(fl, rules{"ui": hostPort, "host": host, "port": port, "fsync": oneOf("interval", "always"), "replica": domain("consumer-name"),
		"stream-replicas": between(0, 5), "max-payload": between(1, 64), "tick": atLeast(0), "fold-wait": above(0), "audit-checkpoint-every": atLeast(0), "audit-checkpoint-keep": atLeast(0), "audit-checkpoint-disk": atLeast(0)})
	o.snap.bind(fl)
	o.ifc.addFlags(fl)
	return cmd
}

func runServe(ctx context.Context, f *Factory, o serveOptions) error {
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(f.Err, nil))
	}
	sec := f.Sec
	sec.TLSVerify = o.tlsVerify
	// Every listener of this process obeys one rule (node.CheckListen),
	// checked before anything starts. Metrics and health carry counters,
	// never stored text, and have no authentication of their own.
	if o.ifc.metricsAddr != "" {
		if err := node.CheckListen("--metrics", o.ifc.metricsAddr, sec.Authenticates()); err != nil {
			return err
		}
	}
	if o.uiAddr != "" {
		if err := node.CheckListen("--ui", o.uiAddr, dashboardAuth(sec).Enabled()); err != nil {
			return err
		}
	}
	warnExposure(f.Err, o, sec, f.NatsURL == "")
	var auth []nats.Option
	if f.NatsURL != "" {
		var err error
		if auth, err = sec.ClientOptions(); err != nil {
			return err
		}
	}
	cfg := node.Config{
		DataDir: f.DataDir, NatsURL: f.NatsURL, NatsOptions: auth, Replica: o.replica,
		TickInterval: o.tick, NoSyncCommits: o.noSyncCommits, Logger: logger,
		Embedded: node.EmbeddedOptions{Host: o.host, Port: o.port, SyncAlways: o.fsync == "always", Security: sec,
			MaxPayload: int32(o.maxPayload) << 20},
	}
	if o.tick == 0 {
		cfg.TickInterval = -1
	}
	var stopGC func()
	cfg.Memory, stopGC = o.memory.apply(f.Err)
	defer stopGC()
	cfg.AuditCheckpointEvery, cfg.AuditCheckpointKeep = o.auditEvery, o.auditKeep
	cfg.AuditCheckpointDisk = int64(o.auditDisk) << 20
	if o.auditDisk == 0 {
		cfg.AuditCheckpointDisk = -1
	}
	if o.auditEvery == 0 {
		cfg.AuditCheckpointEvery = -1
	}
	cfg.Streams.Replicas = o.replicas
	if cfg.Streams.Replicas == 0 && f.NatsURL != "" {
		cfg.Streams.Replicas = 3
	}
	n, err := node.Start(ctx, cfg)
	if err != nil && f.NatsURL != "" && cfg.Streams.Replicas == 3 && o.replicas == 0 && singleServer(err) {
		cfg.Streams.Replicas = 1 // a single-server NATS: R1
		n, err = node.Start(ctx, cfg)
	}
	if err != nil {
		return err
	}
	defer n.Close()
	defer o.memory.shareStore(cfg.Memory, n)() // ends before the node closes
	if was, now, rebuild := n.FormatChange(); rebuild {
		fmt.Fprintf(f.Err, "read-model format %s is older than this lore's %s: rebuilding from the log\n", was, now)
	}
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
	svc, err := n.Serve(api.Options{Version: version, Logger: logger, Observe: ifc.observe(), FoldWait: o.foldWait})
	if err != nil {
		return err
	}
	defer svc.Stop()
	stopUI := startDashboard(ctx, f, n, logger, o.uiAddr, sec)
	defer stopUI()
	url := n.ClientURL()
	if n.Server != nil {
		// Clients started in this working directory (or below) find it.
		// Recorded before DATA/nats.url is written: whoever waits for that
		// file to start a client finds the serve from this folder too.
		removeRecord, err := writeServeRecord(serveRecord{URL: url, ServerID: n.Server.ID(), Data: f.DataDir, PID: os.Getpid()})
		if err != nil {
			fmt.Fprintf(f.Err, "lore: clients of this folder will need --data or --nats: %v\n", err)
		}
		defer removeRecord()
		writeURLFile(filepath.Join(f.DataDir, urlFile), url)
		defer os.Remove(filepath.Join(f.DataDir, urlFile))
	}
	fmt.Fprintf(f.Err, "lore serving on %s (data %s, read model at seq %d); Ctrl-C to stop\n", url, f.DataDir, n.Runtime.Seq())
	ifc.running(true)
	err = n.Run(ctx)
	ifc.running(false)
	fmt.Fprintf(f.Err, "lore stopped at seq %d\n", n.Runtime.Seq())
	return err
}

// warnExposure says on stderr what an allowed listener beyond loopback
// still exposes: metrics have no authentication of their own; passwords and
// tokens cross the network in clear without TLS (nkeys and mutual TLS never
// send a secret).
func warnExposure(w io.Writer, o serveOptions, sec node.Security, embedded bool) {
	if h, _, err := net.SplitHostPort(o.ifc.metricsAddr); err == nil && !node.IsLoopback(h) {
		fmt.Fprintf(w, "lore: metrics on %s answer anyone who reaches them (counters and health, no stored text)\n", o.ifc.metricsAddr)
	}
	if embedded && o.host != "" && !node.IsLoopback(o.host) && (sec.User != "" || sec.Token != "") && sec.TLSCert == "" {
		fmt.Fprintf(w, "lore: NATS on %s without TLS: the password or token crosses the network in clear (add --tls-cert and --tls-key)\n", o.host)
	}
}

// singleServer reports whether creating R3 streams failed because the NATS
// lore dialled is one server: a server of a cluster with too few peers
// (insufficient resources, 10023) or a server without clustering (10074).
func singleServer(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == 10023 || api.ErrorCode == 10074) {
		return true
	}
	return strings.Contains(err.Error(), "insufficient resources")
}

// writeURLFile writes the client URL for other lore commands, atomically
// (a temp file renamed over it): a reader sees no file or the whole URL,
// never an empty or partial one.
func writeURLFile(path, url string) {
	tmp := path + ".tmp"
	if os.WriteFile(tmp, []byte(url+"\n"), 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}
