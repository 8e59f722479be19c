package knowledge

import (
	"strings"
	"unsafe"
)

// Memory budgets of the model's two pool caches, in bytes of estimated
// memory (memCost). Both are least recently used caches of decoded pools:
// past its budget a cache drops whole pools, which only costs the next
// reader of such a pool one scan of the store (answers never depend on
// what is cached: poolcache.go, foldpool.go).
const (
	// DefaultFoldBudget bounds the pool states folds keep between events
	// (foldPools): every summary of a pool, active ones decoded, inactive
	// ones in their compact form (archived.go), with the indexes a
	// submission's comparison reads.
	DefaultFoldBudget = 96 << 20
	// DefaultQueryBudget bounds the decoded active pools injections and
	// queries read (poolCache).
	DefaultQueryBudget = 32 << 20
)

// Budgets are the byte budgets of a Model's caches (0: the default).
type Budgets struct {
	Fold, Query int64
}

// SetBudgets sets the byte budgets of m's caches. Call it before the
// model folds or serves; a smaller budget takes effect at the next store
// into the cache.
func (m *Model) SetBudgets(b Budgets) {
	m.folds.setBudget(b.Fold)
	m.cache.setBudget(b.Query)
}

// summaryBase is the fixed memory of a decoded summary: the struct, the
// headers of its slices and a map entry or slot that refers to it.
const summaryBase = int(unsafe.Sizeof(summary{})) + 64

// memCost estimates the memory of s, decoded, with its features: its own
// strings, the normalised text its bigrams are substrings of, the bigram
// headers and hashes, the tags and the relevance words' ids.
func (s *summary) memCost() int {
	n := summaryBase + len(s.ID) + len(s.Tier) + len(s.Project) + 2*len(s.Lesson) + len(s.Category) +
		len(s.Scope) + len(s.Status) + len(s.ArchiveReason) + len(s.SourceProject) +
		len(s.cnorm) + len(s.rel) + 16*len(s.bigrams) + 8*len(s.bghash) + 4*len(s.relw)
	for _, t := range s.ctags {
		n += 16 + len(t)
	}
	return n
}

// slotHeaders is the fixed memory of a poolState slot: its entries in
// slots, slotHash, slotKey, slotID, slotActive, slotRemoved and counts.
const slotHeaders = int(unsafe.Sizeof((*summary)(nil))+unsafe.Sizeof([]uint64(nil))+2*unsafe.Sizeof("")) + 2 + 4

// slotCost estimates the memory a poolState spends on the active summary
// s held under key: the summary, the slot, the key (in slotKey and byKey)
// and s's entries in the indexes (a slot number and a share of the map
// entry per bigram hash and tag).
func slotCost(key string, s *summary) int {
	return s.memCost() + slotHeaders + 2*len(key) + 64 + 16*len(s.bghash) + 16*len(s.ctags)
}

// archivedCost estimates the memory a poolState spends on an inactive
// entry held under key in its compact form (archived) with id and n bigram
// hashes: the slot, the key, the id when it is not the key's end, the
// hashes and their entries in the bigram index.
func archivedCost(key, id string, n int) int {
	c := slotHeaders + 2*len(key) + 64 + 8*n + 16*n
	if !strings.HasSuffix(key, id) {
		c += len(id)
	}
	return c
}
