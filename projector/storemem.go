package projector

// StoreMemory is the memory Pebble holds for a Store, outside the Go heap
// when built with cgo (block cache and memtables are manually allocated).
type StoreMemory struct {
	// BlockCacheBytes is the block cache in use; it fills up to
	// BlockCacheBudget (StoreOptions.CacheBytes) and stays there.
	BlockCacheBytes  int64 `json:"block_cache_bytes"`
	BlockCacheBudget int64 `json:"block_cache_budget_bytes"`
	BlockCacheHits   int64 `json:"block_cache_hits"`
	BlockCacheMisses int64 `json:"block_cache_misses"`
	// MemTableBytes are the memtables (and large batches) allocated, of
	// MemTables memtables; ZombieMemTableBytes are memtables flushed but
	// still read by an open iterator or snapshot.
	MemTableBytes       uint64 `json:"memtable_bytes"`
	MemTables           int64  `json:"memtables"`
	ZombieMemTableBytes uint64 `json:"zombie_memtable_bytes"`
	// FileCacheBytes is the cache of open sstable readers.
	FileCacheBytes int64 `json:"file_cache_bytes"`
}

// Memory reports the memory Pebble holds (db.Metrics()).
func (s *Store) Memory() StoreMemory {
	m := s.db.Metrics()
	// Pebble's zombie accounting can go below zero (seen as a uint64 near
	// 2^64 under load): report 0 rather than exabytes.
	if m.MemTable.ZombieSize > 1<<62 {
		m.MemTable.ZombieSize = 0
	}
	return StoreMemory{
		BlockCacheBytes: m.BlockCache.Size, BlockCacheBudget: s.cacheBytes,
		BlockCacheHits: m.BlockCache.Hits, BlockCacheMisses: m.BlockCache.Misses,
		MemTableBytes: m.MemTable.Size, MemTables: m.MemTable.Count, ZombieMemTableBytes: m.MemTable.ZombieSize,
		FileCacheBytes: m.FileCache.Size,
	}
}
