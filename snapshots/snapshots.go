// Package snapshots stores Pebble checkpoints of lore's read models in a
// JetStream object store, so that a new or rebuilt replica starts from the
// newest one and replays only the tail of the log.
//
// A snapshot is a consistent Pebble checkpoint (hard links, flushed WAL) of
// a live store, archived with tar, put into the bucket with metadata
// {last_seq, format, created, replica}. It seeds a replica only when its
// format equals the current models' and its last_seq meets the log (see
// Check); otherwise the replica rebuilds from the log.
package snapshots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// Names and metadata keys. NB: must not change: they address stored
// snapshots.
const (
	// DefaultBucket is the object store bucket (stream OBJ_LORE_SNAPSHOTS).
	DefaultBucket = "LORE_SNAPSHOTS"
	// DefaultKeep is how many snapshots retention keeps.
	DefaultKeep = 5

	metaLastSeq = "last_seq"
	metaFormat  = "format"
	metaCreated = "created"
	metaReplica = "replica"
)

// chunkSize is the object store's chunk size: below NATS's default 1 MiB
// max payload, larger than the library's 128 KiB default for fewer acks.
const chunkSize = 512 << 10

// Options configure snapshot operations.
type Options struct {
	// Bucket is the object store bucket (default DefaultBucket).
	Bucket string
	// Replicas of the bucket when Create creates it (0: the log stream's).
	Replicas int
	// Replica names the projector replica snapshots are taken from.
	Replica string
	// Keep is how many snapshots Create keeps, deleting older ones
	// (0: DefaultKeep; negative: keep all).
	Keep int
	// TempDir holds the checkpoint while it is archived; on the store's
	// filesystem the checkpoint is hard links (default: the OS temp folder,
	// where it is a copy).
	TempDir string
	// Name, for Restore, picks one snapshot instead of the newest usable.
	Name string
	// Now is the clock of Create (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	if o.Replica == "" {
		o.Replica = "lore-projector"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// bucket opens the snapshot bucket, creating it when create is set. It
// returns (nil, nil) when the bucket does not exist and create is not set.
func bucket(ctx context.Context, js jetstream.JetStream, o Options, create bool) (jetstream.ObjectStore, error) {
	obs, err := js.ObjectStore(ctx, o.Bucket)
	if err == nil {
		return obs, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("snapshot bucket %s: %w", o.Bucket, err)
	}
	if !create {
		return nil, nil
	}
	replicas := o.Replicas
	if replicas <= 0 {
		replicas = logReplicas(ctx, js)
	}
	obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      o.Bucket,
		Description: "lore read-model snapshots: Pebble checkpoints with the log sequence they hold",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Compression: true, // S2 in the server: cheap, and tar of Pebble files still compresses a little
	})
	if err != nil {
		return nil, fmt.Errorf("create snapshot bucket %s (R%d): %w", o.Bucket, replicas, err)
	}
	return obs, nil
}

// logReplicas is the replica count of the log stream (1 if unknown): the
// snapshots are as durable as the log they index.
func logReplicas(ctx context.Context, js jetstream.JetStream) int {
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return 1
	}
	info, err := st.Info(ctx)
	if err != nil || info.Config.Replicas <= 0 {
		return 1
	}
	return info.Config.Replicas
}

// logBounds returns the first and last sequence of the log stream.
func logBounds(ctx context.Context, js jetstream.JetStream) (first, last uint64, err error) {
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return 0, 0, fmt.Errorf("log stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("log stream info: %w", err)
	}
	return info.State.FirstSeq, info.State.LastSeq, nil
}

// LogBounds returns the first and last sequence of the log, for Check.
func LogBounds(ctx context.Context, js jetstream.JetStream) (first, last uint64, err error) {
	return logBounds(ctx, js)
}

func metadata(s Info) map[string]string {
	return map[string]string{
		metaLastSeq: strconv.FormatUint(s.LastSeq, 10),
		metaFormat:  s.Format,
		metaCreated: s.Created.UTC().Format(time.RFC3339Nano),
		metaReplica: s.Replica,
	}
}

// infoOf reads a snapshot's Info from its object metadata; ok is false for
// objects that are not lore snapshots.
func infoOf(oi *jetstream.ObjectInfo) (Info, bool) {
	m := oi.Metadata
	seq, err := strconv.ParseUint(m[metaLastSeq], 10, 64)
	if err != nil || m[metaFormat] == "" {
		return Info{}, false
	}
	created, err := time.Parse(time.RFC3339Nano, m[metaCreated])
	if err != nil {
		created = oi.ModTime
	}
	return Info{Name: oi.Name, LastSeq: seq, Format: m[metaFormat], Created: created.UTC(),
		Replica: m[metaReplica], Size: oi.Size}, true
}

// List returns the stored snapshots, newest first (none when the bucket
// does not exist yet).
func List(ctx context.Context, js jetstream.JetStream, o Options) ([]Info, error) {
	o.setDefaults()
	obs, err := bucket(ctx, js, o, false)
	if err != nil || obs == nil {
		return nil, err
	}
	return list(ctx, obs)
}

func list(ctx context.Context, obs jetstream.ObjectStore) ([]Info, error) {
	ois, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var out []Info
	for _, oi := range ois {
		if oi.Deleted {
			continue
		}
		if s, ok := infoOf(oi); ok {
			out = append(out, s)
		}
	}
	SortNewestFirst(out)
	return out, nil
}

// Prune deletes all but the keep newest snapshots and returns the deleted.
func Prune(ctx context.Context, js jetstream.JetStream, keep int, o Options) ([]Info, error) {
	o.setDefaults()
	obs, err := bucket(ctx, js, o, false)
	if err != nil || obs == nil {
		return nil, err
	}
	return prune(ctx, obs, keep)
}

func prune(ctx context.Context, obs jetstream.ObjectStore, keep int) ([]Info, error) {
	ss, err := list(ctx, obs)
	if err != nil {
		return nil, err
	}
	var deleted []Info
	for _, s := range Expired(ss, keep) {
		// Another replica may prune the same object at the same time.
		if err := obs.Delete(ctx, s.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return deleted, fmt.Errorf("delete snapshot %s: %w", s.Name, err)
		}
		deleted = append(deleted, s)
	}
	return deleted, nil
}
