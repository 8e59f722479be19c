package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestStoreActivityCountsFlushesAndCompactions: a store counts the
// memtable flushes and compactions Pebble begins in it, a forced flush and
// a manual compaction included, and nothing while it is idle.
func TestStoreActivityCountsFlushesAndCompactions(t *testing.T) {
	st, err := OpenStore(t.TempDir(), StoreOptions{CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if a := st.Activity(); a != (Activity{}) {
		t.Fatalf("a new store's activity = %+v, want none", a)
	}
	for round := range 2 { // two tables of the same keys: something to compact
		for i := range 100 {
			if err := st.db.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", round), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if a := st.Activity(); a.Flushes != 2 {
		t.Fatalf("after two forced flushes activity = %+v, want 2 flushes", a)
	}
	before := st.Activity().Compactions
	if err := st.db.Compact(context.Background(), []byte("k"), []byte("l"), true); err != nil {
		t.Fatal(err)
	}
	if a := st.Activity(); a.Compactions <= before {
		t.Fatalf("after a manual compaction activity = %+v, want more than %d compactions", a, before)
	}
	// Every flush and compaction begun has ended (Compact and Flush wait
	// for theirs; an automatic compaction may still be finishing).
	for deadline := time.Now().Add(time.Minute); st.Activity().Running != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d flushes or compactions still running on an idle store", st.Activity().Running)
		}
	}
}
