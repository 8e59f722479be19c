package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream names. NB: must not change: they hold the log.
const (
	// LogStream is the event log, the only source of truth.
	LogStream = "LORE"
	// DerivedStream holds announcements of state transitions.
	DerivedStream = "LORE_DERIVED"
	// DLQStream holds events a projector could not fold, with the reason.
	DLQStream = "LORE_DLQ"
	// DLQPrefix is the dead-letter subject prefix: lore.dlq.<stream seq>.
	DLQPrefix = "lore.dlq"
)

// StreamOptions configure the streams lore creates.
type StreamOptions struct {
	// Replicas is 1 on an embedded server and 3 on a cluster.
	Replicas int
	// Duplicates is the dedup window of Nats-Msg-Id (default 2 minutes).
	Duplicates time.Duration
	// DerivedDuplicates is the dedup window of announcements (default 2
	// minutes): replicas announce with deterministic ids and the server
	// keeps one. The server holds every id of the window in memory (at
	// hundreds of announcements a second, a 24 h window held millions), so
	// it is short: a replica announcing a batch stored longer ago than half
	// the window looks its announcements up in the stream instead
	// (projector/announce.go).
	DerivedDuplicates time.Duration
	// MaxBytes caps the log (0 = unlimited). With a cap, appends are refused
	// when it is full (discard new), never dropping old events.
	MaxBytes int64
}

func (o *StreamOptions) setDefaults() {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Duplicates <= 0 {
		o.Duplicates = 2 * time.Minute
	}
	if o.DerivedDuplicates <= 0 {
		o.DerivedDuplicates = 2 * time.Minute
	}
}

// StreamConfigs returns the configurations of lore's three streams: file
// storage, limits retention (never interest or work-queue, which delete
// acknowledged messages), deletes and purges denied, discard new.
func StreamConfigs(o StreamOptions) []jetstream.StreamConfig {
	o.setDefaults()
	maxBytes := o.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1
	}
	base := func(name, subj, desc string, dup time.Duration) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name: name, Description: desc, Subjects: []string{subj},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
			Discard: jetstream.DiscardNew, MaxMsgs: -1, MaxBytes: maxBytes, MaxAge: 0,
			MaxMsgsPerSubject: -1, Replicas: o.Replicas, Duplicates: dup,
			DenyDelete: true, DenyPurge: true, AllowDirect: true,
		}
	}
	// Reads of the derived stream decide what a restored or rebuilt replica
	// may announce, so they go through the stream leader: a direct get may
	// be answered by a follower still catching up after a restart.
	derived := base(DerivedStream, DerivedFilter, "lore announcements: promotions, inversions, deprecations, archives", o.DerivedDuplicates)
	derived.AllowDirect = false
	return []jetstream.StreamConfig{
		base(LogStream, EventsFilter, "lore event log: the only source of truth", o.Duplicates),
		derived,
		base(DLQStream, DLQPrefix+".>", "lore dead letters: events a projector could not fold, with the reason", o.Duplicates),
	}
}

// EnsureStreams creates lore's streams or updates them to the current
// configuration. It is idempotent and safe from several processes. A
// stream already configured so is only read: a start against existing
// streams proposes nothing to the cluster's meta layer (which a loaded or
// recovering cluster may be slow to accept).
func EnsureStreams(ctx context.Context, js jetstream.JetStream, o StreamOptions) error {
	for _, cfg := range StreamConfigs(o) {
		if st, err := js.Stream(ctx, cfg.Name); err == nil && StreamConfigMatches(st.CachedInfo().Config, cfg) {
			continue
		}
		_, err := js.CreateOrUpdateStream(ctx, cfg)
		if err != nil {
			// A stream created with other replicas cannot change them here;
			// keep the existing one if it exists.
			if _, ierr := js.Stream(ctx, cfg.Name); ierr == nil && !errors.Is(err, context.Canceled) {
				continue
			}
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
	}
	return nil
}

// StreamConfigMatches reports whether a stream's configuration as the
// server gives it (have) holds every setting lore configures (want).
func StreamConfigMatches(have, want jetstream.StreamConfig) bool {
	return have.Name == want.Name && have.Description == want.Description &&
		slices.Equal(have.Subjects, want.Subjects) && have.Retention == want.Retention &&
		have.Storage == want.Storage && have.Discard == want.Discard &&
		have.MaxMsgs == want.MaxMsgs && have.MaxBytes == want.MaxBytes && have.MaxAge == want.MaxAge &&
		have.MaxMsgsPerSubject == want.MaxMsgsPerSubject && have.Replicas == want.Replicas &&
		have.Duplicates == want.Duplicates && have.DenyDelete == want.DenyDelete &&
		have.DenyPurge == want.DenyPurge && have.AllowDirect == want.AllowDirect
}

// PublishAckTimeout bounds the wait for one async publish's ack: an ack
// lost with a server is then released instead of holding a slot of the
// connection's pending-ack limit forever (the appender re-sends with the
// same id, so nothing is stored twice).
const PublishAckTimeout = 30 * time.Second

// NewJetStream returns the JetStream context lore's clients use.
func NewJetStream(nc *nats.Conn) (jetstream.JetStream, error) {
	return jetstream.New(nc, jetstream.WithPublishAsyncTimeout(PublishAckTimeout))
}
