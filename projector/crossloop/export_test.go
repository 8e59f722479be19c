package crossloop

// SetPrunePool turns prunedPool on or off (benchmarks compare it with the
// full scan); it returns the previous setting.
func SetPrunePool(on bool) bool {
	old := prunePool
	prunePool = on
	return old
}
