package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/node/gcfloor"
)

// memoryFlags are lore serve's memory budgets, in MiB.
type memoryFlags struct {
	storeCache, patternCache, knowledgeCache, limit int
	limitSet                                        func() bool
	// gc is the collector's mode (gcBudget, gcProportional).
	gc    string
	gcSet func() bool
	// floor is the collector's tuner once apply started one.
	floor *gcfloor.Tuner
	// changed gives the flags the user set, as lore serve's arguments
	// (lore bench --soak passes them to the serving process).
	changed func() []string
}

func (m *memoryFlags) bind(fl *pflag.FlagSet) {
	fl.IntVar(&m.storeCache, "store-cache", node.DefaultStoreCacheMiB, "MiB of Pebble block cache (memtables included) for the read models")
	fl.IntVar(&m.patternCache, "pattern-cache", node.DefaultPatternCacheMiB, "MiB the pattern registry's posting cache may hold (least recently used terms dropped past it)")
	fl.IntVar(&m.knowledgeCache, "knowledge-cache", node.DefaultKnowledgeCacheMiB, "MiB the knowledge pools decoded in memory may hold (3/4 fold, 1/4 injections; least recently used pools dropped past it)")
	fl.IntVar(&m.limit, "memory-limit", -1, "Go soft memory limit in MiB (-1: twice the caches in the Go heap plus 512, 960 with the defaults (1216 in a build without cgo, where the store cache is Go memory), unless GOMEMLIMIT is set; 0: none)")
	fl.StringVar(&m.gc, "gc", gcBudget, "the Go collector: budget (under a memory limit, no collection until the heap reaches two thirds of it plus what of the store cache Pebble does not hold yet, then at twice the live heap: the process keeps one size under a steady load) or proportional (Go's default: the heap grows to GOGC % over the live heap, capped by the limit); GOGC, when set, stands unless --gc is given")
	m.limitSet = func() bool { return fl.Changed("memory-limit") }
	m.gcSet = func() bool { return fl.Changed("gc") }
	m.changed = func() []string {
		var out []string
		for _, name := range memoryFlagNames {
			if f := fl.Lookup(name); f.Changed {
				out = append(out, "--"+name+"="+f.Value.String())
			}
		}
		return out
	}
	declare(fl, rules{"store-cache": above(0), "pattern-cache": above(0), "knowledge-cache": above(0), "memory-limit": atLeast(-1),
		"gc": oneOf(gcBudget, gcProportional)})
}

// memoryFlagNames are the flags of memoryFlags, as lore serve takes them.
var memoryFlagNames = []string{"store-cache", "pattern-cache", "knowledge-cache", "memory-limit", "gc"}

// apply sets the process's soft memory limit and collector and returns
// the budgets for the node, and a func that ends the collector's tuning
// (lore serve and bench call it on their way out). The limit given wins;
// without it, GOMEMLIMIT when set, else the budgets' default.
func (m *memoryFlags) apply(w io.Writer) (node.MemoryBudgets, func()) {
	b := node.MemoryBudgets{StoreCache: int64(m.storeCache) << 20, PatternCache: int64(m.patternCache) << 20,
		KnowledgeCache: int64(m.knowledgeCache) << 20}
	switch {
	case m.limitSet() && m.limit == 0:
		debug.SetMemoryLimit(noMemoryLimit)
	case m.limitSet() && m.limit > 0:
		debug.SetMemoryLimit(int64(m.limit) << 20)
	case os.Getenv("GOMEMLIMIT") != "":
		// the runtime read it at start
	default:
		debug.SetMemoryLimit(b.DefaultLimit())
	}
	l := debug.SetMemoryLimit(-1)
	if caches := 2 * (b.PatternCache + b.KnowledgeCache); l != noMemoryLimit && l < caches {
		fmt.Fprintf(w, "lore: the memory limit (%d MiB) is below twice the pattern and knowledge caches (%d MiB): the collector will run often\n", l>>20, caches>>20)
	}
	limit := int64(0)
	if l != noMemoryLimit {
		limit = l
	}
	b.MemoryLimit = limit
	switch c := collectorFor(m.gc, m.gcSet(), os.Getenv("GOGC") != "", limit); {
	case c.floor > 0:
		m.floor = gcfloor.Start(c.floor)
		b.GCFloor = int64(c.floor)
		return b, m.floor.Stop
	case c.set:
		was := debug.SetGCPercent(c.percent)
		return b, func() { debug.SetGCPercent(was) }
	}
	return b, func() {}
}

// shareStore lets the store's cache and memtables share the collector's
// floor, when they lie outside the Go heap: the floor is raised by their
// budget and lowered by what of it they hold, so the Go heap gives way as
// the cache fills and the process keeps one size.
// The returned func ends the sharing: call it before the node closes
// (an adjustment in progress finishes first).
func (m *memoryFlags) shareStore(b node.MemoryBudgets, n *node.Node) (unshare func()) {
	if m.floor == nil || b.StoreOutsideGoHeap() == 0 {
		return func() {}
	}
	m.floor.Share(uint64(b.StoreOutsideGoHeap()), func() uint64 {
		sm := n.Store.Memory()
		return uint64(max(0, sm.BlockCacheBytes)) + sm.MemTableBytes
	})
	return func() { m.floor.Share(0, nil) }
}

// noMemoryLimit is the runtime's value for no limit (math.MaxInt64).
const noMemoryLimit = int64(^uint64(0) >> 1)

// The collector's modes (--gc).
const (
	gcBudget       = "budget"
	gcProportional = "proportional"
)

// collector is how lore sets Go's collector: set GOGC to percent, or
// with a floor keep the heap goal at floor bytes or more (gcfloor: GOGC
// off, the goal set through the memory limit).
type collector struct {
	set     bool
	percent int
	floor   uint64
}

// collectorFor decides the collector for mode under a memory limit of
// limit bytes (0: none). A GOGC from the environment stands when the mode
// was not given. Budget is a floor of two thirds of the limit (lore serve
// raises it by the store cache not yet held: shareStore), twice the live
// heap above it (Go's default proportion): under a steady load the live
// heap drifts up within the floor and the heap keeps the floor's size
// instead of following the live heap's highest marks; a larger live heap
// is collected as Go does, the limit capping its goal. Without a limit
// budget is proportional.
func collectorFor(mode string, given, envSet bool, limit int64) collector {
	switch {
	case !given && envSet:
		return collector{}
	case mode == gcBudget && limit > 0:
		return collector{floor: uint64(limit) / 3 * 2}
	case envSet: // proportional, at the environment's GOGC
		return collector{}
	default:
		return collector{set: true, percent: 100}
	}
}
