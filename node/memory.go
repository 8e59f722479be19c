package node

import (
	"context"
	"time"

	"github.com/loredev/lore/node/cmalloc"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/knowledge"
)

// Default memory budgets of a node's caches (MemoryBudgets).
const (
	DefaultStoreCacheMiB     = 128 // Pebble: block cache and memtables (full within minutes of a steady load: see docs/performance.md, "The soak flat")
	DefaultPatternCacheMiB   = crossloop.DefaultCacheBudget >> 20
	DefaultKnowledgeCacheMiB = (knowledge.DefaultFoldBudget + knowledge.DefaultQueryBudget) >> 20
	// limitBaseMiB is what the memory limit allows beyond twice the
	// caches: the NATS server's state (message block buffers, the ids of
	// the duplicate windows, per-subject state), batches being folded and
	// requests being answered.
	limitBaseMiB = 512
)

// MemoryBudgets bound the memory of a node's caches, in bytes (0: the
// default). Each cache is reached by what the node reads and then stays
// within its budget: past it, what was used least recently is dropped,
// which only costs a later read of the store (answers never depend on
// what is cached).
type MemoryBudgets struct {
	// StoreCache is Pebble's block cache, memtables included
	// (projector.StoreOptions.CacheBytes).
	StoreCache int64
	// PatternCache bounds the pattern registry's posting cache
	// (crossloop).
	PatternCache int64
	// KnowledgeCache bounds the knowledge model's decoded pools: three
	// quarters for the pool states folds keep between events, a quarter
	// for the pools injections read.
	KnowledgeCache int64
	// MemoryLimit is the process's soft memory limit (0: none) and
	// GCFloor the heap Go's collector lets the process reach before it
	// collects (lore serve --gc budget; 0: Go's proportion alone). The
	// process sets them (gcfloor moves the runtime's limit under the
	// first); the node only reports them.
	MemoryLimit, GCFloor int64
}

// WithDefaults fills the budgets left at 0 with the defaults.
func (b MemoryBudgets) WithDefaults() MemoryBudgets {
	if b.StoreCache <= 0 {
		b.StoreCache = DefaultStoreCacheMiB << 20
	}
	if b.PatternCache <= 0 {
		b.PatternCache = DefaultPatternCacheMiB << 20
	}
	if b.KnowledgeCache <= 0 {
		b.KnowledgeCache = DefaultKnowledgeCacheMiB << 20
	}
	return b
}

// DefaultLimit is the Go soft memory limit (runtime/debug.SetMemoryLimit)
// the budgets call for: twice the caches held in the Go heap (the
// collector's headroom over a live heap they fill) plus a base for the
// rest of the process. The store cache counts only in a build without
// cgo: with cgo Pebble's memory is outside the Go heap and the limit.
// Under the limit the collector runs as the heap needs; near it, more
// often, so the heap does not drift up to twice its live size.
func (b MemoryBudgets) DefaultLimit() int64 {
	b = b.WithDefaults()
	heap := b.PatternCache + b.KnowledgeCache
	if storeInGoHeap {
		heap += b.StoreCache
	}
	return 2*heap + limitBaseMiB<<20
}

// StoreOutsideGoHeap is the store cache's budget when Pebble holds it
// outside the Go heap (a cgo build), else 0.
func (b MemoryBudgets) StoreOutsideGoHeap() int64 {
	if storeInGoHeap {
		return 0
	}
	return b.WithDefaults().StoreCache
}

// applyBudgets sets the budgets of the models' caches (models without a
// cache are left alone).
func applyBudgets(b MemoryBudgets, models []projector.Model) {
	b = b.WithDefaults()
	for _, m := range models {
		switch m := m.(type) {
		case *crossloop.Model:
			m.SetCacheBudget(int(b.PatternCache))
		case *knowledge.Model:
			query := b.KnowledgeCache / 4
			m.SetBudgets(knowledge.Budgets{Fold: b.KnowledgeCache - query, Query: query})
		}
	}
}

// trimLook is how often a running node looks at the C allocator's free
// bytes; trimStep is how much must have been freed since its lowest point
// for a trim (cmalloc.Trimmer).
const (
	trimLook = 5 * time.Second
	trimStep = 32 << 20
)

// trimLoop returns what Pebble freed inside the C allocator's heaps to the
// system, whenever trimStep more of it is free, until ctx ends.
func trimLoop(ctx context.Context) {
	if _, ok := cmalloc.Read(); !ok {
		return
	}
	t := time.NewTicker(trimLook)
	defer t.Stop()
	tr := cmalloc.Trimmer{Step: trimStep}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s, _ := cmalloc.Read(); tr.Due(s.Free) {
			cmalloc.Trim()
			s, _ = cmalloc.Read()
			tr.Trimmed(s.Free)
		}
	}
}
