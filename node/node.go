package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// Config configures a lore process.
type Config struct {
	// DataDir holds the Pebble read models (DataDir/pebble) and, when
	// embedded, JetStream's files (DataDir/nats).
	DataDir string
	// NatsURL, when set, connects to an existing NATS with JetStream instead
	// of embedding one.
	NatsURL string
	// NatsOptions are passed to nats.Connect with NatsURL (auth:
	// Security.ClientOptions). The embedded server is dialled with its own
	// credentials instead (see Embedded.Security).
	NatsOptions []nats.Option
	// Embedded configures the embedded server (ignored with NatsURL).
	Embedded EmbeddedOptions
	// Streams configure lore's streams (replicas: 3 on a cluster).
	Streams events.StreamOptions
	// Replica names this process's projector consumer: each replica of a
	// group has its own (default: "lore-projector").
	Replica string
	// TickInterval appends a clock tick this often so decay-driven
	// transitions are announced (0: every minute; negative: never).
	TickInterval time.Duration
	// NoSyncCommits skips Pebble's fsync on projector commits. Faster, but a
	// process crash then loses every commit since the last memtable flush
	// (the read model stays consistent and the lost tail is re-folded).
	NoSyncCommits bool
	// AuditCheckpointEvery takes a local checkpoint of the read model
	// every this many events for audits (0: DefaultAuditCheckpointEvery;
	// negative: none, every audit folds from the start of the log).
	AuditCheckpointEvery int
	// AuditCheckpointKeep bounds the number of audit checkpoints kept (0:
	// no bound but the disk's); older ones are thinned out evenly.
	AuditCheckpointKeep int
	// AuditCheckpointDisk bounds the disk the audit checkpoints hold
	// beyond the live store, in bytes (0: DefaultAuditCheckpointDiskMiB;
	// negative: no bound); older ones are thinned out evenly.
	AuditCheckpointDisk int64
	Logger              *slog.Logger
	// Models to fold (default: app.Models()).
	Models []projector.Model
	// Memory bounds the caches of the store and the models (memory.go).
	Memory MemoryBudgets
}

// Node is one running lore process.
type Node struct {
	cfg      Config
	Server   *server.Server // nil when connected to an external NATS
	NC       *nats.Conn
	JS       jetstream.JetStream
	Store    *projector.Store
	Runtime  *projector.Runtime
	Appender *events.Appender
	// Sealer seals what Appender appends and verifies what the projector,
	// the rebuilds and the audits read (nil when the executable cannot be
	// read: every message is then checked in full).
	Sealer *events.Sealer
	models []projector.Model
	log    *slog.Logger
	// formatWas is the read-model format found at Start ("" for a new store).
	formatWas string
	// audits are the audit checkpoints (nil: none are taken).
	audits *auditCheckpoints

	closeOnce sync.Once
}

// Start brings up NATS (embedded or remote), the streams and the store. Run
// then projects and serves until its context ends.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: data folder is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Models == nil {
		cfg.Models = app.Models()
	}
	if cfg.NatsURL == "" {
		// Refused before anything starts or is written.
		host := cfg.Embedded.Host
		if host == "" {
			host = "127.0.0.1"
		}
		if err := cfg.Embedded.Security.validateServer(host); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	n := &Node{cfg: cfg, models: cfg.Models, log: cfg.Logger}
	url := cfg.NatsURL
	auth := cfg.NatsOptions
	if url == "" {
		eo := cfg.Embedded
		if eo.StoreDir == "" {
			eo.StoreDir = filepath.Join(cfg.DataDir, "nats")
		}
		s, self, err := startEmbedded(eo)
		if err != nil {
			return nil, err
		}
		n.Server = s
		url = selfURL(s)
		auth = self // its own credentials, none of the clients'
	}
	opts := append([]nats.Option{nats.Name("lore-serve"), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond)}, auth...)
	// TCP loopback even when embedded: the in-process pipe stalled under
	// per-message acks and drains half as fast.
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	n.NC = nc
	n.JS, err = events.NewJetStream(nc)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := events.EnsureStreams(sctx, n.JS, cfg.Streams); err != nil {
		n.Close()
		return nil, err
	}
	applyBudgets(cfg.Memory, n.models)
	n.Store, err = projector.OpenStore(filepath.Join(cfg.DataDir, "pebble"), projector.StoreOptions{Sync: !cfg.NoSyncCommits, CacheBytes: cfg.Memory.WithDefaults().StoreCache})
	if err != nil {
		n.Close()
		return nil, err
	}
	// A read model from a newer lore stops the start here, untouched; an
	// older one is rebuilt by the runtime (Prepare).
	if n.formatWas, err = projector.CheckFormat(n.Store, n.models); err != nil {
		n.Close()
		return nil, err
	}
	if cfg.AuditCheckpointEvery >= 0 {
		every, keep, disk := cfg.AuditCheckpointEvery, max(cfg.AuditCheckpointKeep, 0), cfg.AuditCheckpointDisk
		if every == 0 {
			every = DefaultAuditCheckpointEvery
		}
		if disk == 0 {
			disk = DefaultAuditCheckpointDiskMiB << 20
		}
		if n.audits, err = newAuditCheckpoints(filepath.Join(cfg.DataDir, AuditDir), n.Store.Dir(), projector.FormatVersion(n.models), uint64(every), keep, max(disk, 0)); err != nil {
			n.Close()
			return nil, err
		}
	}
	key, err := events.LoadSealKey(cfg.DataDir, true)
	if err != nil {
		n.Close()
		return nil, err
	}
	if n.Sealer, err = events.NewSealer(key); err != nil {
		n.log.Warn("events are not sealed: each rebuild and audit checks every event again", "err", err)
	}
	durable := cfg.Replica
	if durable == "" {
		durable = "lore-projector"
	}
	ro := projector.RuntimeOptions{Durable: durable, Logger: cfg.Logger, Sealer: n.Sealer}
	if n.audits != nil {
		ro.CommitEvery = n.audits.every // where the audit deltas end
	}
	n.Runtime = projector.NewRuntime(n.JS, n.Store, n.models, ro)
	n.Appender = events.NewAppender(n.JS)
	n.Appender.Sealer = n.Sealer
	return n, nil
}

// ClientURL is the URL clients use to reach this node's NATS.
func (n *Node) ClientURL() string { return n.NC.ConnectedUrl() }

// FormatChange reports, when the read model found at Start was written in
// an older format, both formats: Run then rebuilds it from the log.
func (n *Node) FormatChange() (was, now string, rebuild bool) {
	now = projector.FormatVersion(n.models)
	return n.formatWas, now, n.formatWas != "" && n.formatWas != now
}

// Models are the read models this node folds.
func (n *Node) Models() []projector.Model { return n.models }

// Run projects and ticks until ctx ends, then returns after the projector
// committed what it folded.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	if n.audits != nil {
		// The live store records its commits into audit deltas while the
		// runtime runs (from before its first commit); their tables are
		// written until it stopped.
		n.audits.recording.Store(true)
		if err := n.loadAuditCheckpoints(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("audit checkpoints: reload", "err", err)
		}
		stop, err := n.recordDeltas()
		if err != nil {
			n.audits.recording.Store(false)
			return fmt.Errorf("audit deltas: %w", err)
		}
		defer func() {
			stop()
			n.audits.recording.Store(false)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := n.Runtime.Run(ctx); err != nil {
			errc <- fmt.Errorf("projector: %w", err)
			cancel() // a stopped projector stops the node: Run returns its error
		}
	}()
	if n.audits != nil {
		wg.Add(1)
		go func() { defer wg.Done(); n.runAuditCheckpoints(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); n.warmPatterns() }()
	wg.Add(1)
	go func() { defer wg.Done(); trimLoop(ctx) }()
	tick := n.cfg.TickInterval
	if tick == 0 {
		tick = time.Minute
	}
	if tick > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); n.tickLoop(ctx, tick) }()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// crossloop is the node's cross-loop model (nil: none).
func (n *Node) crossloop() *crossloop.Model {
	for _, m := range n.models {
		if cm, ok := m.(*crossloop.Model); ok {
			return cm
		}
	}
	return nil
}

// warmPatterns preloads the pattern registry's posting cache from the
// read model as it is at the start (crossloop.Model.Warm), so the first
// patterns.inject does not pay for it; the fold keeps it current after.
// A failure only leaves the first query to load it.
func (n *Node) warmPatterns() {
	if cm := n.crossloop(); cm != nil {
		if err := cm.Warm(n.Store.Model(crossloop.ModelName)); err != nil {
			n.log.Warn("preload the pattern registry's postings", "err", err)
		}
	}
}

// tickLoop appends clock ticks; a tick id is deterministic per interval so
// replicas ticking together append one.
func (n *Node) tickLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			// Truncated to the interval: replicas ticking in the same
			// interval append the same id, which JetStream keeps once.
			if err := n.Tick(ctx, now.Truncate(every)); err != nil && ctx.Err() == nil {
				n.log.Warn("clock tick", "err", err)
			}
		}
	}
}

// Tick appends one clock tick at now (to the second); its id is the time,
// so ticks for the same instant are stored once.
func (n *Node) Tick(ctx context.Context, now time.Time) error {
	now = now.UTC().Truncate(time.Second)
	ev, err := events.New("clock.ticked/v1", events.DefaultProject, "lore", now, &events.ClockTicked{})
	if err != nil {
		return err
	}
	ev.ID = "tick-" + now.Format("20060102T150405Z")
	_, err = n.Appender.Append(ctx, ev)
	return err
}

// Close stops everything the node started. Safe to call twice.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		if n.NC != nil {
			_ = n.NC.Drain()
			n.NC.Close()
		}
		if n.Store != nil {
			_ = n.Store.Close()
		}
		if n.Server != nil {
			n.Server.Shutdown()
			n.Server.WaitForShutdown()
		}
	})
}
