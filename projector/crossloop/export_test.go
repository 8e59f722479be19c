package crossloop

// SetPrunePool turns prunedPool on or off (benchmarks compare it with the
// full scan); it returns the previous setting.
func SetPrunePool(on bool) bool {
	old := prunePool
	prunePool = on
	return old
}

// Uncached returns c without the model's posting cache: Rank then reads
// every posting of the query's terms from the store.
func Uncached(c Config) Config {
	c.postings = nil
	return c
}

// FreshCache returns c with an empty posting cache of its own (the fold
// does not log deltas to it: for a store that no longer changes).
func FreshCache(c Config) Config {
	c.postings = newPostingCache(DefaultCacheBudget)
	return c
}

// CacheBytes is the estimated size of c's posting cache (its budget's
// measure).
func CacheBytes(c Config) int {
	c.postings.mu.RLock()
	defer c.postings.mu.RUnlock()
	return c.postings.gen.bytes
}

// SetBoundScoring turns the bounds of rankLexical on or off (off: every
// candidate's scoring record is read and scored); it returns the previous
// setting.
func SetBoundScoring(on bool) bool {
	old := boundScoring
	boundScoring = on
	return old
}
