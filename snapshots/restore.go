package snapshots

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/projector"
)

// ErrNotEmpty is returned by Restore when the target folder holds files: a
// restore never overwrites a read model.
var ErrNotEmpty = errors.New("lore: restore target is not empty")

// Restore downloads a snapshot into dir (the Pebble folder of a replica,
// absent or empty): the one named o.Name, or else the newest usable for
// models on the current log (see Newest). It returns ErrNoSnapshot (wrapped)
// when none is usable, so the caller rebuilds from the log.
//
// The restored store announces nothing the group already announced: its
// live-from mark is raised to the newest announcement's cause, and pending
// announcements at or below it are dropped. The replica then consumes from
// the snapshot's last_seq+1.
//
// INVARIANT: dir appears only complete: the archive is unpacked and checked
// in a sibling folder, then renamed into place.
func Restore(ctx context.Context, js jetstream.JetStream, dir string, models []projector.Model, o Options) (Info, error) {
	o.setDefaults()
	if err := checkEmpty(dir); err != nil {
		return Info{}, err
	}
	obs, err := bucket(ctx, js, o, false)
	if err != nil {
		return Info{}, err
	}
	if obs == nil {
		return Info{}, fmt.Errorf("%w: bucket %s does not exist", ErrNoSnapshot, o.Bucket)
	}
	ss, err := list(ctx, obs)
	if err != nil {
		return Info{}, err
	}
	first, last, err := logBounds(ctx, js)
	if err != nil {
		return Info{}, err
	}
	format := projector.FormatVersion(models)
	s, err := choose(ss, o.Name, format, first, last)
	if err != nil {
		return Info{}, err
	}

	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Info{}, fmt.Errorf("restore folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".restore-")
	if err != nil {
		return Info{}, fmt.Errorf("restore folder: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	r, err := obs.Get(ctx, s.Name)
	if err != nil {
		return Info{}, fmt.Errorf("get snapshot %s: %w", s.Name, err)
	}
	err = readTar(r, tmp)
	if err == nil {
		_, err = io.Copy(io.Discard, r) // the digest is checked at the end of the object
	}
	r.Close()
	if err != nil {
		return Info{}, fmt.Errorf("download snapshot %s: %w", s.Name, err)
	}
	if err := prepare(ctx, js, tmp, models, s); err != nil {
		return Info{}, err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Info{}, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Info{}, fmt.Errorf("restore: %w", err)
	}
	o.Logger.Info("snapshot restored", "name", s.Name, "last_seq", s.LastSeq, "dir", dir)
	return s, nil
}

// choose picks the named snapshot (which must pass Check) or the newest
// usable one.
func choose(ss []Info, name, format string, first, last uint64) (Info, error) {
	if name == "" {
		s, ok := Newest(ss, format, first, last)
		if !ok {
			return Info{}, fmt.Errorf("%w: %d stored, none of format %q meeting the log (seq %d..%d)", ErrNoSnapshot, len(ss), format, first, last)
		}
		return s, nil
	}
	for _, s := range ss {
		if s.Name == name {
			if err := Check(s, format, first, last); err != nil {
				return Info{}, err
			}
			return s, nil
		}
	}
	return Info{}, fmt.Errorf("%w: no snapshot named %q", ErrNoSnapshot, name)
}

// checkEmpty accepts an absent folder or an empty one.
func checkEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore target: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s holds %d entries", ErrNotEmpty, dir, len(ents))
	}
	return nil
}

// readTar unpacks a flat archive of regular files into dir.
func readTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := hdr.Name
		if hdr.Typeflag != tar.TypeReg || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("unexpected archive entry %q", name)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
}

// prepare opens the unpacked store, checks it holds what the metadata says,
// and makes it announce only what the group has not announced yet.
func prepare(ctx context.Context, js jetstream.JetStream, dir string, models []projector.Model, s Info) error {
	st, err := projector.OpenStore(dir, projector.StoreOptions{CacheBytes: 8 << 20, Sync: true})
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", s.Name, err)
	}
	defer st.Close()
	seq, err := st.Checkpoint()
	if err != nil {
		return err
	}
	format, err := st.StoredVersion()
	if err != nil {
		return err
	}
	if seq != s.LastSeq || format != s.Format {
		return fmt.Errorf("snapshot %s holds seq %d format %q, its metadata says seq %d format %q", s.Name, seq, format, s.LastSeq, s.Format)
	}
	announced, err := projector.LastAnnouncedCause(ctx, js)
	if err != nil {
		return err
	}
	// The group announced every transition caused up to the newest
	// announcement: never again from this store.
	liveFrom, err := st.LiveFrom()
	if err != nil {
		return err
	}
	return st.MarkAnnounced(max(announced, liveFrom))
}
