// Package gcfloor keeps Go's collector from running until the heap
// reaches a floor: the heap goal is the larger of the floor and twice the
// live heap (Go's default proportion, GOGC 100), never above the process's
// soft memory limit. A process whose live heap drifts up within half the
// floor keeps the same heap size instead of following the live heap's
// highest marks; a larger live heap is collected as Go does.
//
// Memory the process holds outside the Go heap under a budget of its own
// (Pebble's block cache and memtables in a cgo build) may share the floor
// (Share): the floor is then raised by that budget and lowered by what of
// it is in use, so the Go heap gives way as the cache fills and the two
// together keep one size.
//
// The goal is set through the soft memory limit with GOGC off: after each
// collection (a finalizer re-armed every cycle, the way Go's collector
// tells a program a cycle ended) the limit becomes the goal for the live
// heap that cycle marked, plus the runtime's memory outside the heap.
// Between a collection and its adjustment the goal stays the previous
// one: at most twice the previous live heap or the floor, never more
// than the cap (a GOGC set from the previous live heap would instead let
// a heap that grew fast reach the cap). bytedance/gopkg's gctuner tunes
// GOGC the same way within a module of many unrelated packages; this is
// the part lore needs, with the limit as the knob.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Goal is the heap goal for a live heap of live bytes: twice it, or the
// floor when that is more, within the cap (0: none).
func Goal(live, floor, limit uint64) uint64 {
	g := max(floor, 2*live)
	if limit > 0 {
		g = min(g, limit)
	}
	return g
}

// Tuner sets the soft memory limit after every collection; Stop ends it
// and puts back the limit and GOGC it found.
type Tuner struct {
	floor, limit uint64 // limit: the process's cap, found at Start
	wasGC        int
	// room is the budget of the memory outside the heap that shares the
	// floor, inUse what of it is in use now (nil: nothing shares it).
	room  uint64
	inUse func() uint64

	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
}

// The runtime/metrics read after each collection.
var sampleNames = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// Start keeps the heap goal at floor bytes or more, under the soft memory
// limit in effect now (its cap). The first adjustment is made now, from
// the last collection's live heap.
func Start(floor uint64) *Tuner {
	t := &Tuner{floor: floor}
	for _, n := range sampleNames {
		t.sample = append(t.sample, metrics.Sample{Name: n})
	}
	if l := debug.SetMemoryLimit(-1); l > 0 && l != int64(^uint64(0)>>1) {
		t.limit = uint64(l)
	}
	t.wasGC = debug.SetGCPercent(-1)
	t.adjust()
	t.arm()
	return t
}

// arm sets a finalizer on a new unreachable object: it runs after the
// next collection, adjusts and arms again.
func (t *Tuner) arm() {
	s := new(sentinel)
	runtime.SetFinalizer(s, func(*sentinel) {
		if t.adjust() {
			t.arm()
		}
	})
}

// sentinel is the object whose finalizer marks a collection's end (not
// zero-sized: the runtime may not track those).
type sentinel struct{ _ byte }

// Share makes the floor room bytes higher, lowered by what inUse reports
// in use of them at each adjustment (a budget outside the Go heap that
// fills over time, such as Pebble's cache).
func (t *Tuner) Share(room uint64, inUse func() uint64) {
	t.mu.Lock()
	t.room, t.inUse = room, inUse
	t.mu.Unlock()
}

// Floor is the floor for a base floor, a shared budget of room bytes and
// used bytes of it in use: base + room − used (base at least).
func Floor(base, room, used uint64) uint64 { return base + room - min(room, used) }

// adjust sets the limit for the live heap of the last collection; false
// once stopped.
func (t *Tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	v := make([]uint64, len(t.sample))
	for i, s := range t.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	live, total, released, objects, unused, free := v[0], v[1], v[2], v[3], v[4], v[5]
	// The limit counts the runtime's memory outside the heap too.
	var outside uint64
	if held := total - min(total, released); held > objects+unused+free {
		outside = held - objects - unused - free
	}
	floor := t.floor
	if t.inUse != nil {
		floor = Floor(t.floor, t.room, t.inUse())
	}
	l := Goal(live, floor, 0) + outside
	if t.limit > 0 {
		l = min(l, t.limit)
	}
	debug.SetMemoryLimit(int64(l))
	return true
}

// Stop ends the adjustments and puts back the limit and GOGC found at
// Start.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		if t.limit > 0 {
			debug.SetMemoryLimit(int64(t.limit))
		} else {
			debug.SetMemoryLimit(int64(^uint64(0) >> 1))
		}
		debug.SetGCPercent(t.wasGC)
	}
}

// Cap is the process's soft memory limit found at Start (0: none): the
// limit the tuner stays under and puts back.
func (t *Tuner) Cap() uint64 { return t.limit }
