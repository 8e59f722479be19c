//go:build linux && cgo

package cmalloc

/*
#include <stdlib.h>
#include <malloc.h>

// NB: __GLIBC__ comes with malloc.h's features.h; musl and others have no
// mallopt parameters to set and no mallinfo2.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
static int lore_glibc(void) { return 1; }
static int lore_tune(int arenas) { return mallopt(M_ARENA_MAX, arenas); }
static void lore_trim(void) { malloc_trim(0); }
static void lore_stats(long long *inuse, long long *free_) {
	struct mallinfo2 mi = mallinfo2();
	*inuse = (long long)(mi.uordblks + mi.hblkhd);
	*free_ = (long long)mi.fordblks;
}
#else
static int lore_glibc(void) { return 0; }
static int lore_tune(int arenas) { return 0; }
static void lore_trim(void) {}
static void lore_stats(long long *inuse, long long *free_) { *inuse = 0; *free_ = 0; }
#endif
*/
import "C"

import "time"

// Arenas is the most arenas Tune lets glibc make. By default glibc makes
// up to eight per core, each keeping its own free memory; Pebble
// allocates its cached blocks from every thread that reads, so the free
// memory of many arenas adds up. (A fixed mmap threshold was measured too:
// no less memory than two arenas alone, and an mmap and munmap for every
// large block.)
const Arenas = 2

// Tune sets glibc's malloc for Pebble's allocations (Arenas) unless the
// environment sets malloc parameters. It must run before the first C
// allocation that matters (the store's open). It reports whether it
// changed anything.
func Tune() bool {
	if C.lore_glibc() == 0 || userTuned() {
		return false
	}
	return C.lore_tune(C.int(Arenas)) != 0
}

// Trim returns the free pages inside the allocator's heaps to the system
// (malloc_trim): an arena gives back on its own only what is free at its
// top, and Pebble frees cached blocks (an evicted block, a compacted
// table's blocks) anywhere in it. It walks each arena's free chunks under
// the arena's lock.
func Trim() {
	t0 := time.Now()
	C.lore_trim()
	trims.Add(1)
	trimNanos.Add(int64(time.Since(t0)))
}

// Read returns the allocator's state, ok false without glibc.
func Read() (Stats, bool) {
	if C.lore_glibc() == 0 {
		return Stats{}, false
	}
	var inuse, free C.longlong
	C.lore_stats(&inuse, &free)
	return Stats{InUse: int64(inuse), Free: int64(free), Trims: trims.Load(), TrimTime: time.Duration(trimNanos.Load())}, true
}
