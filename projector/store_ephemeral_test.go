package projector

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestEphemeralStoreNeverStallsOnLevelZero: an audit store (no automatic
// compactions) whose level 0 is deeper than Pebble's stop-writes threshold
// (as a copy of a checkpoint taken while the live store's level 0 was deep)
// still takes writes that rotate its memtable; with the default threshold
// such a write waits forever for a compaction that never comes.
func TestEphemeralStoreNeverStallsOnLevelZero(t *testing.T) {
	st, err := OpenStore(t.TempDir(), StoreOptions{CacheBytes: 1 << 20, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db := st.DB()
	const depth = 16 // above Pebble's default L0StopWritesThreshold (12)
	for i := range depth {
		// Overlapping tables: each flush stacks one more sublevel.
		for _, k := range []string{"a", "z"} {
			if err := db.Set([]byte(k), fmt.Appendf(nil, "%d", i), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatalf("flush %d: %v", i, err)
		}
	}
	if got := db.Metrics().Levels[0].Sublevels; got < depth {
		t.Fatalf("level 0 has %d sublevels, want at least %d (the premise)", got, depth)
	}
	// A batch larger than the memtable makes the store rotate it.
	b := db.NewBatch()
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := range 8 {
		if err := b.Set(fmt.Appendf(nil, "big/%d", i), big, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get([]byte("big/7"))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if !bytes.Equal(v, big) {
		t.Fatalf("big/7 reads back %d bytes, want %d", len(v), len(big))
	}
}
