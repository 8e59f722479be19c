package projector

import (
	"strings"
	"sync/atomic"

	"github.com/RaduBerinde/btreemap"
)

// overlayVal is an uncommitted write; del=true is a deletion.
type overlayVal struct {
	v   []byte
	del bool
}

// batchOverlay holds the writes of every folded, uncommitted event: a map
// for point reads and an ordered set of the same keys for prefix scans, so
// a scan costs the keys it returns, not the size of the batch.
//
// INVARIANT: keys holds exactly the keys of vals; size is the bytes of
// vals' keys and values plus overlayEntryBytes an entry.
type batchOverlay struct {
	vals map[string]overlayVal
	keys *btreemap.BTreeMap[string, struct{}]
	// size is written by the lane folding into the overlay and read by
	// the loop deciding when to commit (Folder.Full).
	size atomic.Int64
}

// overlayEntryBytes is what an overlay entry costs beyond its key and
// value (the map's and the tree's slots, the value's header).
const overlayEntryBytes = 64

func newBatchOverlay() *batchOverlay {
	return &batchOverlay{vals: map[string]overlayVal{}, keys: btreemap.New[string, struct{}](32, strings.Compare)}
}

func (b *batchOverlay) get(k string) (overlayVal, bool) {
	v, ok := b.vals[k]
	return v, ok
}

func (b *batchOverlay) set(k string, v overlayVal) {
	if old, ok := b.vals[k]; ok {
		b.size.Add(int64(len(v.v) - len(old.v)))
	} else {
		b.keys.ReplaceOrInsert(k, struct{}{})
		b.size.Add(int64(len(k) + len(v.v) + overlayEntryBytes))
	}
	b.vals[k] = v
}

func (b *batchOverlay) remove(k string) {
	if old, ok := b.vals[k]; ok {
		delete(b.vals, k)
		b.keys.Delete(k)
		b.size.Add(-int64(len(k) + len(old.v) + overlayEntryBytes))
	}
}

func (b *batchOverlay) len() int { return len(b.vals) }

// clear empties the overlay for the next batch.
func (b *batchOverlay) clear() {
	b.vals = emptied(b.vals)
	b.keys.Clear(true)
	b.size.Store(0)
}

// keepMapOf is the most entries a map emptied for reuse may have held.
const keepMapOf = 1024

// emptied returns m empty, for reuse: cleared when it was small, else a
// new map. A cleared map keeps the buckets it grew to, and ranging over
// it (writeBatch ranges over every overlay and the ids) costs those, not
// its entries: after one large batch (a replay's, a backlog's) every
// later one-event commit paid for a scan of thousands of empty buckets,
// about 160 µs each at 10 000 entries.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > keepMapOf {
		return make(map[K]V)
	}
	clear(m)
	return m
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

// keysWithPrefix returns the batch's keys with prefix, in key order.
func (b *batchOverlay) keysWithPrefix(prefix []byte) []string {
	var ks []string
	b.ascend(prefix, func(k string, _ overlayVal) bool {
		ks = append(ks, k)
		return true
	})
	return ks
}
