package node_test

import (
	"context"
	"testing"

	"github.com/loredev/lore/node"
)

// TestMemoryBudgetsReachTheStore: the store cache given is Pebble's
// budget, the default one without; the default memory limit is twice the
// caches plus a base, and grows with them.
func TestMemoryBudgetsReachTheStore(t *testing.T) {
	for _, c := range []struct {
		budgets node.MemoryBudgets
		want    int64
	}{
		{node.MemoryBudgets{StoreCache: 24 << 20}, 24 << 20},
		{node.MemoryBudgets{}, node.DefaultStoreCacheMiB << 20},
	} {
		n, err := node.Start(context.Background(), node.Config{DataDir: t.TempDir(), TickInterval: -1,
			Embedded: node.EmbeddedOptions{Port: -1}, Memory: c.budgets})
		if err != nil {
			t.Fatal(err)
		}
		got := n.Store.Memory().BlockCacheBudget
		n.Close()
		if got != c.want {
			t.Fatalf("budgets %+v: store cache budget %d, want %d", c.budgets, got, c.want)
		}
	}
	def := node.MemoryBudgets{}.DefaultLimit()
	if want := int64(2*(node.DefaultPatternCacheMiB+node.DefaultKnowledgeCacheMiB)+512) << 20; def != want && def != want+2*node.DefaultStoreCacheMiB<<20 {
		t.Fatalf("default memory limit %d MiB, want %d MiB (plus twice the store cache without cgo)", def>>20, want>>20)
	}
	if more := (node.MemoryBudgets{KnowledgeCache: 1 << 30}).DefaultLimit(); more <= def {
		t.Fatalf("a larger knowledge cache keeps the memory limit at %d MiB (default %d MiB)", more>>20, def>>20)
	}
}
