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
	val := make([]byte, 512)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
	const n = 40_000 // ≈ 20 MiB: several memtables
	for i := 0; i < n; i += 1000 {
		b := st.DB().NewBatch()
		for j := i; j < i+1000; j++ {
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
