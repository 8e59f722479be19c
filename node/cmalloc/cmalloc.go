// Package cmalloc shapes and reads the process's C allocator. In a cgo
// build Pebble's block cache and memtables are C memory (calloc/free): the
// Go runtime's memory limit does not reach them, and glibc's defaults keep
// much of what Pebble frees. Without glibc or cgo every function here does
// nothing and Stats reports nothing.
package cmalloc

import (
	"os"
	"strings"
)

// Stats is the C allocator's state (glibc mallinfo2).
type Stats struct {
	// InUse is allocated and not freed: small chunks and mmapped ones.
	InUse int64
	// Free is held by the allocator's heaps, free: memory freed by the
	// program and not (yet) returned to the system.
	Free int64
}

// userTuned reports whether the user tunes glibc's malloc through the
// environment: then Tune leaves it as set.
func userTuned() bool {
	for _, v := range []string{"GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} {
		if s, ok := os.LookupEnv(v); ok && (v != "GLIBC_TUNABLES" || strings.Contains(s, "glibc.malloc.")) {
			return true
		}
	}
	return false
}
