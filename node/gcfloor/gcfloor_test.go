package gcfloor_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/loredev/lore/node/gcfloor"
)

func TestGoal(t *testing.T) {
	const M = 1 << 20
	for _, c := range []struct{ live, floor, limit, want uint64 }{
		{100 * M, 640 * M, 960 * M, 640 * M}, // the floor
		{320 * M, 640 * M, 960 * M, 640 * M}, // twice the live heap is the floor
		{400 * M, 640 * M, 960 * M, 800 * M}, // above it: Go's proportion
		{600 * M, 640 * M, 960 * M, 960 * M}, // never above the cap
		{0, 640 * M, 960 * M, 640 * M},       // nothing live yet
		{400 * M, 640 * M, 0, 800 * M},       // no cap
	} {
		if got := gcfloor.Goal(c.live, c.floor, c.limit); got != c.want {
			t.Errorf("Goal(%d, %d, %d MiB) = %d MiB, want %d", c.live/M, c.floor/M, c.limit/M, got/M, c.want/M)
		}
	}
}

func TestFloor(t *testing.T) {
	const M = 1 << 20
	for _, c := range []struct{ base, room, used, want uint64 }{
		{640 * M, 256 * M, 0, 896 * M},       // the cache empty: its budget is the heap's
		{640 * M, 256 * M, 100 * M, 796 * M}, // the heap gives way as it fills
		{640 * M, 256 * M, 256 * M, 640 * M}, // full
		{640 * M, 256 * M, 300 * M, 640 * M}, // past its budget: the base stands
		{640 * M, 0, 50 * M, 640 * M},        // nothing shares it
	} {
		if got := gcfloor.Floor(c.base, c.room, c.used); got != c.want {
			t.Errorf("Floor(%d, %d, %d MiB) = %d MiB, want %d", c.base/M, c.room/M, c.used/M, got/M, c.want/M)
		}
	}
}

// TestTunerFollowsCollections: with a small live heap the tuner turns
// GOGC off and sets the limit to about the floor after each collection,
// within the cap; Stop puts back the limit and GOGC it found.
func TestTunerFollowsCollections(t *testing.T) {
	const M = 1 << 20
	wasGC := debug.SetGCPercent(77)
	defer debug.SetGCPercent(wasGC)
	wasLimit := debug.SetMemoryLimit(2048 * M)
	defer debug.SetMemoryLimit(wasLimit)
	tu := gcfloor.Start(1024 * M)
	if tu.Cap() != 2048*M {
		t.Fatalf("cap %d MiB, want the 2048 found", tu.Cap()/M)
	}
	// Put the limit back to the cap behind the tuner's back: a
	// collection's end (the finalizer) sets it again. Each round collects
	// once more.
	debug.SetMemoryLimit(2048 * M)
	l := int64(2048 * M)
	for range 100 {
		runtime.GC()
		runtime.Gosched()
		if l = debug.SetMemoryLimit(-1); l != 2048*M {
			break
		}
	}
	if l < 1024*M || l >= 1200*M {
		t.Fatalf("limit %d MiB after collections with a small live heap, want the 1024 MiB floor plus the runtime's own memory", l/M)
	}
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC %d under the tuner, want off (-1)", p)
	}
	// A shared budget in use lowers the limit it sets by as much.
	tu.Share(512*M, func() uint64 { return 0 })
	l0 := int64(0)
	for range 100 {
		runtime.GC()
		runtime.Gosched()
		if l0 = debug.SetMemoryLimit(-1); l0 >= l+400*M {
			break
		}
	}
	if l0 < l+400*M {
		t.Fatalf("limit %d MiB with 512 MiB shared and unused, want about %d MiB + 512", l0/M, l/M)
	}
	tu.Stop()
	if l := debug.SetMemoryLimit(-1); l != 2048*M {
		t.Fatalf("after Stop the limit is %d MiB, want the 2048 found at Start", l/M)
	}
	if p := debug.SetGCPercent(77); p != 77 {
		t.Fatalf("after Stop GOGC %d, want the 77 found at Start", p)
	}
}
