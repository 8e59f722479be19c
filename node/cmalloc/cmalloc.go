// Package cmalloc shapes and reads the process's C allocator. In a cgo
// build Pebble's block cache and memtables are C memory (calloc/free): the
// Go runtime's memory limit does not reach them, and glibc's defaults keep
// much of what Pebble frees. Without glibc or cgo Tune and Trim do nothing
// and Read reports no allocator.
package cmalloc

import (
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Stats is the C allocator's state (glibc mallinfo2).
type Stats struct {
	// InUse is allocated and not freed: small chunks and mmapped ones.
	InUse int64
	// Free is held by the allocator's heaps, free: memory freed by the
	// program and not (yet) returned to the system.
	Free int64
	// Trims counts the trims of this process (Trim), TrimTime their
	// total duration.
	Trims    int64
	TrimTime time.Duration
}

// trims and trimNanos count Trim's calls and their time.
var trims, trimNanos atomic.Int64

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

// Trimmer decides when freed memory is worth returning: when the
// allocator's free bytes rose by Step since their lowest point after the
// last trim. A trim leaves the chunks free (the allocator still counts
// them), so the free bytes alone would call for a trim at every look.
type Trimmer struct {
	Step int64
	low  int64 // lowest free bytes seen since the last trim
	init bool
}

// Due reports whether, with free bytes now free, a trim is due; the caller
// trims when it is and then calls Trimmed with the free bytes after.
func (t *Trimmer) Due(free int64) bool {
	if !t.init || free < t.low {
		t.low, t.init = free, true
	}
	return free-t.low >= t.Step
}

// Trimmed records the free bytes after a trim.
func (t *Trimmer) Trimmed(free int64) { t.low, t.init = free, true }
