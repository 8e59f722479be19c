package projector_test

import (
	"fmt"
	"testing"

	"github.com/loredev/lore/projector"
)

// TestStoreMemtablesLeaveTheBlockCache: Pebble carves its memtables out of
// the block cache, so a store whose memtables are written, flushed and
// read back still caches blocks (with memtables as large as the cache,
// every read went to disk and the cache held nothing).
func TestStoreMemtablesLeaveTheBlockCache(t *testing.T) {
	const cache = 32 << 20
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{CacheBytes: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 40_000 // ≈ 20 MiB: several memtables
	fillAndFlush(t, st, n, 512)
	for pass := range 2 {
		for i := 0; i < n; i += 97 {
			_, closer, err := st.DB().Get(key(i))
			if err != nil {
				t.Fatalf("pass %d: get %d: %v", pass, i, err)
			}
			closer.Close()
		}
	}
	m := st.Memory()
	if m.BlockCacheBudget != cache {
		t.Errorf("block cache budget %d, want %d", m.BlockCacheBudget, cache)
	}
	if m.BlockCacheBytes <= 0 || m.BlockCacheHits <= m.BlockCacheMisses {
		t.Errorf("block cache: %d bytes, %d hits, %d misses: reads of flushed data are not cached", m.BlockCacheBytes, m.BlockCacheHits, m.BlockCacheMisses)
	}
	if m.MemTables <= 0 || m.MemTableBytes == 0 || m.MemTableBytes > cache/4 {
		t.Errorf("%d memtables of %d bytes: want one, at most a quarter of the %d-byte cache", m.MemTables, m.MemTableBytes, cache)
	}
}

// TestStoresShareOneCache: a store opened with ShareCache reads through
// the other store's block cache (one budget for both: blocks it reads
// show in the other's cache), and keeps it after the other closes.
func TestStoresShareOneCache(t *testing.T) {
	const cache = 16 << 20
	live, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{CacheBytes: cache})
	if err != nil {
		t.Fatal(err)
	}
	other, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{CacheBytes: 1 << 30, ShareCache: live})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if m := other.Memory(); m.BlockCacheBudget != cache {
		t.Errorf("the sharing store's budget is %d, want the shared cache's %d", m.BlockCacheBudget, cache)
	}
	fillAndFlush(t, other, 5000, 256)
	read := func() {
		t.Helper()
		for i := 0; i < 5000; i += 7 {
			_, closer, err := other.DB().Get(key(i))
			if err != nil {
				t.Fatalf("get %d: %v", i, err)
			}
			closer.Close()
		}
	}
	read()
	if m := live.Memory(); m.BlockCacheBytes == 0 {
		t.Fatal("blocks the sharing store read are not in the live store's cache: the caches are separate")
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	read() // the cache outlives the store that made it
}

// key is the i-th key fillAndFlush writes.
func key(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }

// fillAndFlush writes n keys with values of size bytes, 1 000 a batch,
// and flushes them to tables.
func fillAndFlush(t *testing.T, st *projector.Store, n, size int) {
	t.Helper()
	val := make([]byte, size)
	for i := 0; i < n; i += 1000 {
		b := st.DB().NewBatch()
		for j := i; j < min(i+1000, n); j++ {
			if err := b.Set(key(j), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DB().Flush(); err != nil {
		t.Fatal(err)
	}
}
