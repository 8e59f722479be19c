package snapshots_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/snapshots"
	"github.com/loredev/lore/test/natstest"
)

// otherVersion is the event log model under another version: a format the
// stored snapshots were not written with.
type otherVersion struct{ eventlog.Model }

func (otherVersion) Version() int { return 99 }

var models = []projector.Model{eventlog.Model{}}

// setup starts a server with lore's streams and n appended events, and a
// store that folded them.
func setup(t *testing.T, n int) (jetstream.JetStream, *projector.Store) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx := context.Background()
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, js, 0, n)
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := projector.Replay(ctx, js, st, models, projector.ReplayOptions{}); err != nil {
		t.Fatal(err)
	}
	return js, st
}

func appendEvents(t *testing.T, js jetstream.JetStream, from, n int) {
	t.Helper()
	var evs []*events.Event
	for i := from; i < from+n; i++ {
		ev, err := events.New("outcome.recorded/v1", "default", "test", t0.Add(time.Duration(i)*time.Minute),
			&events.OutcomeRecorded{BeadID: fmt.Sprintf("bd-%d", i%5), DurationMs: int64(i), Success: i%3 != 0})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if _, err := events.NewAppender(js).AppendBatch(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func digest(t *testing.T, st *projector.Store) string {
	t.Helper()
	d, err := st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCreateAndRestore(t *testing.T) {
	js, st := setup(t, 50)
	ctx := context.Background()
	s, err := snapshots.Create(ctx, js, st, snapshots.Options{Replica: "lore-a", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != 50 || s.Format != projector.FormatVersion(models) || s.Replica != "lore-a" || s.Size == 0 {
		t.Fatalf("snapshot info %+v", s)
	}
	ss, err := snapshots.List(ctx, js, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Name != s.Name || ss[0].LastSeq != 50 || !ss[0].Created.Equal(s.Created) {
		t.Fatalf("list = %+v, want the one stored %+v", ss, s)
	}

	dir := filepath.Join(t.TempDir(), "pebble")
	got, err := snapshots.Restore(ctx, js, dir, models, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != s.Name {
		t.Fatalf("restored %s, want %s", got.Name, s.Name)
	}
	rst, err := projector.OpenStore(dir, projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	if cp, _ := rst.Checkpoint(); cp != 50 {
		t.Fatalf("restored checkpoint %d, want 50", cp)
	}
	if digest(t, rst) != digest(t, st) {
		t.Fatal("restored read model differs from the source")
	}
	// The restored store folds the tail like the source does.
	appendEvents(t, js, 50, 20)
	for _, x := range []*projector.Store{st, rst} {
		if _, err := projector.Replay(ctx, js, x, models, projector.ReplayOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if cp, _ := rst.Checkpoint(); cp != 70 {
		t.Fatalf("restored store caught up to %d, want 70", cp)
	}
	if digest(t, rst) != digest(t, st) {
		t.Fatal("restored read model differs from the source after the tail")
	}
}

func TestRestoreRefusals(t *testing.T) {
	js, st := setup(t, 10)
	ctx := context.Background()
	if _, err := snapshots.Create(ctx, js, st, snapshots.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Run("a folder with files is never overwritten", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := snapshots.Restore(ctx, js, dir, models, snapshots.Options{})
		if !errors.Is(err, snapshots.ErrNotEmpty) {
			t.Fatalf("err = %v, want ErrNotEmpty", err)
		}
	})
	t.Run("another format is ignored", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pebble")
		_, err := snapshots.Restore(ctx, js, dir, []projector.Model{otherVersion{}}, snapshots.Options{})
		if !errors.Is(err, snapshots.ErrNoSnapshot) {
			t.Fatalf("err = %v, want ErrNoSnapshot", err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a refused restore left %s behind (%v)", dir, err)
		}
	})
	t.Run("a named snapshot of another format is refused with the reason", func(t *testing.T) {
		ss, _ := snapshots.List(ctx, js, snapshots.Options{})
		_, err := snapshots.Restore(ctx, js, filepath.Join(t.TempDir(), "p"), []projector.Model{otherVersion{}}, snapshots.Options{Name: ss[0].Name})
		if !errors.Is(err, snapshots.ErrIncompatible) {
			t.Fatalf("err = %v, want ErrIncompatible", err)
		}
	})
	t.Run("an unknown name", func(t *testing.T) {
		_, err := snapshots.Restore(ctx, js, filepath.Join(t.TempDir(), "p"), models, snapshots.Options{Name: "nope"})
		if !errors.Is(err, snapshots.ErrNoSnapshot) {
			t.Fatalf("err = %v, want ErrNoSnapshot", err)
		}
	})
	t.Run("no bucket yet", func(t *testing.T) {
		_, err := snapshots.Restore(ctx, js, filepath.Join(t.TempDir(), "p"), models, snapshots.Options{Bucket: "NONE"})
		if !errors.Is(err, snapshots.ErrNoSnapshot) {
			t.Fatalf("err = %v, want ErrNoSnapshot", err)
		}
	})
}

func TestCreateRefusesAnEmptyStore(t *testing.T) {
	js, _ := setup(t, 1)
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := snapshots.Create(context.Background(), js, st, snapshots.Options{}); !errors.Is(err, snapshots.ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
}

func TestRetentionKeepsTheNewest(t *testing.T) {
	js, st := setup(t, 5)
	ctx := context.Background()
	var names []string
	for i := range 7 {
		now := t0.Add(time.Duration(i) * time.Hour)
		s, err := snapshots.Create(ctx, js, st, snapshots.Options{Keep: 3, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, s.Name)
	}
	ss, err := snapshots.List(ctx, js, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 {
		t.Fatalf("%d snapshots kept, want 3", len(ss))
	}
	for i, s := range ss {
		if want := names[6-i]; s.Name != want {
			t.Fatalf("kept[%d] = %s, want %s", i, s.Name, want)
		}
	}
	deleted, err := snapshots.Prune(ctx, js, 1, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 2 {
		t.Fatalf("prune to 1 deleted %d", len(deleted))
	}
}
