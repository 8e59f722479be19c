package snapshots

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/cockroachdb/pebble/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/projector"
)

// ErrEmpty is returned by Create for a store that has folded nothing.
var ErrEmpty = errors.New("lore: nothing to snapshot: the read model is empty")

// Create takes a checkpoint of the live store st (safe while the projector
// commits), archives it and puts it into the bucket (created on first use),
// then applies retention (o.Keep). The snapshot's last_seq and format are
// read from the checkpoint itself, so they match its content exactly.
func Create(ctx context.Context, js jetstream.JetStream, st *projector.Store, o Options) (Info, error) {
	o.setDefaults()
	if o.TempDir != "" {
		if err := os.MkdirAll(o.TempDir, 0o755); err != nil {
			return Info{}, fmt.Errorf("snapshot temp folder: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(o.TempDir, ".lore-snapshot-")
	if err != nil {
		return Info{}, fmt.Errorf("snapshot temp folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "pebble")
	if err := st.DB().Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return Info{}, fmt.Errorf("pebble checkpoint: %w", err)
	}
	seq, format, err := readCheckpoint(dir)
	if err != nil {
		return Info{}, err
	}
	if seq == 0 || format == "" {
		return Info{}, ErrEmpty
	}
	s := Info{LastSeq: seq, Format: format, Created: o.Now().UTC().Truncate(time.Microsecond), Replica: o.Replica}
	s.Name = ObjectName(s.LastSeq, s.Created, s.Replica)

	obs, err := bucket(ctx, js, o, true)
	if err != nil {
		return Info{}, err
	}
	oi, err := put(ctx, obs, s, dir)
	if err != nil {
		return Info{}, err
	}
	s.Size = oi.Size
	o.Logger.Info("snapshot stored", "name", s.Name, "last_seq", s.LastSeq, "bytes", s.Size)
	if o.Keep > 0 {
		deleted, err := prune(ctx, obs, o.Keep)
		if err != nil {
			return s, fmt.Errorf("snapshot retention: %w", err)
		}
		for _, d := range deleted {
			o.Logger.Info("snapshot deleted by retention", "name", d.Name, "keep", o.Keep)
		}
	}
	return s, nil
}

// put uploads the archive of dir, retrying transient failures (a bucket
// whose stream leader is still being elected, a failover) with a fresh
// archive under the same name: a Put replaces an object of that name.
func put(ctx context.Context, obs jetstream.ObjectStore, s Info, dir string) (*jetstream.ObjectInfo, error) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 200 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = time.Minute
	var oi *jetstream.ObjectInfo
	attempt := 0
	err := backoff.Retry(func() error {
		attempt++
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, dir)) }()
		var err error
		oi, err = obs.Put(ctx, jetstream.ObjectMeta{
			Name:        s.Name,
			Description: fmt.Sprintf("lore read model at seq %d (%s)", s.LastSeq, s.Format),
			Metadata:    metadata(s),
			Opts:        &jetstream.ObjectMetaOptions{ChunkSize: chunkSize},
		}, pr)
		pr.CloseWithError(errors.New("snapshot upload ended")) // stops the writer if Put failed early
		if err != nil && ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return err
	}, backoff.WithContext(b, ctx))
	if err != nil {
		return nil, fmt.Errorf("put snapshot %s (%d attempts): %w", s.Name, attempt, err)
	}
	return oi, nil
}

// readCheckpoint opens a checkpoint copy and returns the sequence and the
// format it holds. Opening it replays its flushed WAL, which only makes the
// archive smaller to restore; the copy is private to this snapshot.
func readCheckpoint(dir string) (uint64, string, error) {
	st, err := projector.OpenStore(dir, projector.StoreOptions{CacheBytes: 8 << 20})
	if err != nil {
		return 0, "", fmt.Errorf("open checkpoint: %w", err)
	}
	defer st.Close()
	seq, err := st.Checkpoint()
	if err != nil {
		return 0, "", err
	}
	format, err := st.StoredVersion()
	if err != nil {
		return 0, "", err
	}
	return seq, format, nil
}

// writeTar archives the regular files of dir (flat, as Pebble writes it).
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue // Pebble's LOCK and files are regular; skip anything else
		}
		if err := addFile(tw, dir, e.Name()); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	return nil
}
