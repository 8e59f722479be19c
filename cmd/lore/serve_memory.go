package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/loredev/lore/node"
)

// memoryFlags are lore serve's memory budgets, in MiB.
type memoryFlags struct {
	storeCache, patternCache, knowledgeCache, limit int
	limitSet                                        func() bool
	// gc is the collector's mode (gcBudget, gcProportional).
	gc    string
	gcSet func() bool
	// changed gives the flags the user set, as lore serve's arguments
	// (lore bench --soak passes them to the serving process).
	changed func() []string
}

func (m *memoryFlags) bind(fl *pflag.FlagSet) {
	fl.IntVar(&m.storeCache, "store-cache", node.DefaultStoreCacheMiB, "MiB of Pebble block cache (memtables included) for the read models")
	fl.IntVar(&m.patternCache, "pattern-cache", node.DefaultPatternCacheMiB, "MiB the pattern registry's posting cache may hold (least recently used terms dropped past it)")
	fl.IntVar(&m.knowledgeCache, "knowledge-cache", node.DefaultKnowledgeCacheMiB, "MiB the knowledge pools decoded in memory may hold (3/4 fold, 1/4 injections; least recently used pools dropped past it)")
	fl.IntVar(&m.limit, "memory-limit", -1, "Go soft memory limit in MiB (-1: twice the caches in the Go heap plus 512, 960 with the defaults (1472 in a build without cgo, where the store cache is Go memory), unless GOMEMLIMIT is set; 0: none)")
	fl.StringVar(&m.gc, "gc", gcBudget, "the Go collector: budget (under a memory limit, collect when the process reaches it: the heap fills its budget once and stays there) or proportional (Go's default: the heap grows to GOGC % over the live heap, capped by the limit); GOGC, when set, stands unless --gc is given")
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

// apply sets the process's soft memory limit and returns the budgets for
// the node. The limit given wins; without it, GOMEMLIMIT when set, else
// the budgets' default.
func (m *memoryFlags) apply(w io.Writer) node.MemoryBudgets {
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
	if p, ok := gcPercent(m.gc, m.gcSet(), os.Getenv("GOGC") != "", l != noMemoryLimit); ok {
		debug.SetGCPercent(p)
	}
	return b
}

// The collector's modes (--gc).
const (
	gcBudget       = "budget"
	gcProportional = "proportional"
)

// gcPercent is the collector's GOGC for mode: ok false leaves the
// runtime's (GOGC from the environment, read at start, when the mode was
// not given). Budget under a limit is -1 (off): the collector runs when
// the process reaches its memory limit, so the Go heap grows to its
// budget once and stays there, instead of following the live heap's
// highest marks (GOGC 100 doubles each); without a limit it is
// proportional, since nothing else would ever collect.
func gcPercent(mode string, given, envSet, limited bool) (int, bool) {
	switch {
	case !given && envSet:
		return 0, false
	case mode == gcBudget && limited:
		return -1, true
	case envSet: // proportional, at the environment's GOGC
		return 0, false
	default:
		return 100, true
	}
}

// noMemoryLimit is the runtime's value for no limit (math.MaxInt64).
const noMemoryLimit = int64(^uint64(0) >> 1)
