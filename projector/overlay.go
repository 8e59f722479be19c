package projector

import (
	"sort"
	"strings"

	"github.com/RaduBerinde/btreemap"
)

// overlay holds uncommitted writes in memory, keyed by full key.
// A nil value with del=true is a deletion.
type overlay map[string]overlayVal

type overlayVal struct {
	v   []byte
	del bool
}

// sortedKeys returns the overlay's keys with the prefix, sorted. It visits
// every key: use it only on small overlays (one event's writes).
func (o overlay) sortedKeys(prefix []byte) []string {
	var ks []string
	for k := range o {
		if strings.HasPrefix(k, string(prefix)) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// batchOverlay holds the writes of every folded, uncommitted event: a map
// for point reads and an ordered set of the same keys for prefix scans, so
// a scan costs the keys it returns, not the size of the batch.
//
// INVARIANT: keys holds exactly the keys of vals.
type batchOverlay struct {
	vals map[string]overlayVal
	keys *btreemap.BTreeMap[string, struct{}]
}

func newBatchOverlay() *batchOverlay {
	return &batchOverlay{vals: map[string]overlayVal{}, keys: btreemap.New[string, struct{}](32, strings.Compare)}
}

func (b *batchOverlay) get(k string) (overlayVal, bool) {
	v, ok := b.vals[k]
	return v, ok
}

func (b *batchOverlay) set(k string, v overlayVal) {
	if _, ok := b.vals[k]; !ok {
		b.keys.ReplaceOrInsert(k, struct{}{})
	}
	b.vals[k] = v
}

func (b *batchOverlay) len() int { return len(b.vals) }

func (b *batchOverlay) clear() {
	clear(b.vals)
	b.keys.Clear(true)
}

// ascend calls fn for each key with prefix, in key order, until fn
// returns false.
func (b *batchOverlay) ascend(prefix []byte, fn func(k string, v overlayVal) bool) {
	lo := btreemap.GE(string(prefix))
	hi := btreemap.Max[string]()
	if end := prefixEnd(prefix); end != nil {
		hi = btreemap.LT(string(end))
	}
	for k := range b.keys.Ascend(lo, hi) {
		if !fn(k, b.vals[k]) {
			return
		}
	}
}

// mergedKeys returns the keys with prefix of the batch and of cur (cur's
// writes shadow the batch's), sorted, and a lookup of their values.
func mergedKeys(batch *batchOverlay, cur overlay, prefix []byte) ([]string, func(string) overlayVal) {
	var ks []string
	batch.ascend(prefix, func(k string, _ overlayVal) bool {
		ks = append(ks, k)
		return true
	})
	if extra := cur.sortedKeys(prefix); len(extra) > 0 {
		for _, k := range extra {
			if _, ok := batch.get(k); !ok {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
	}
	return ks, func(k string) overlayVal {
		if v, ok := cur[k]; ok {
			return v
		}
		v, _ := batch.get(k)
		return v
	}
}
