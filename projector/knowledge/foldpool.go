package knowledge

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loredev/lore/projector"
)

// Fold-side pool states: a submission compares its lesson with its whole
// pool (validation, near-duplicates, cap), and every submission changes
// that pool, so a read cache would always miss. Instead the fold holds the
// decoded summaries of the pools it reads (poolState) and keeps them equal
// to the Tx by applying its own summary writes to them (poolTx); after a
// successful event they go back to the model's foldPools at their new
// version, where the pool's next event finds them. A pool's comparison is
// then done in memory (poolState.scan) instead of a scan of the store.

// poolState is every summary of one pool, active and inactive, each list
// in key order ((CreatedSeq, id) order), at version.
//
// INVARIANT: while a fold holds a poolState (poolTx.held), it equals what
// a scan of the fold's Tx under x/<pool>/ reads: poolTx applies every
// summary and version write of the Tx to it. Out of a fold it is only
// reached through foldPools, by version, and then equals the pool at that
// version in any store (poolcache.go).
type poolState struct {
	version          string
	active, inactive []heldSummary

	// An index of bigram hashes for the near-duplicate search: every held
	// summary has a slot; byHash lists, for each hash, the slots of the
	// summaries holding it, once each.
	// INVARIANT: slots[h.slot] == h.s for every held h; byHash lists slot
	// i under each distinct hash of slots[i] (nothing for a free slot).
	slots  []*summary
	free   []int32
	byHash map[uint64][]int32
	counts []int32 // scratch of scan: shared hashes by slot, zero between scans
}

type heldSummary struct {
	key  string // the summary key, within the model
	s    *summary
	slot int32
}

func (p *poolState) size() int { return len(p.active) + len(p.inactive) }

// loadPoolState reads the pool of summary scope scope from r in one scan
// (its version, its active summaries, then its inactive ones).
func loadPoolState(r projector.Reader, scope string) (*poolState, error) {
	p := &poolState{byHash: map[uint64][]int32{}}
	vk := poolVersionKey(scope)
	activePfx := vk + "/"
	err := r.Scan([]byte(pfxSum+scope), func(k, v []byte) error {
		if string(k) == vk {
			p.version = string(v)
			return nil
		}
		s, err := decodeSummary(v)
		if err != nil {
			return fmt.Errorf("%w: %s", err, k)
		}
		h := heldSummary{key: string(k), s: s, slot: p.place(s)}
		if strings.HasPrefix(h.key, activePfx) {
			p.active = append(p.active, h)
		} else {
			p.inactive = append(p.inactive, h)
		}
		return nil
	})
	return p, err
}

// apply records a write of the Tx under x/<pool>/ (value nil: a delete).
func (p *poolState) apply(scope, key string, value []byte, del bool) error {
	if key == poolVersionKey(scope) {
		p.version = string(value) // a version is never deleted
		return nil
	}
	list := &p.inactive
	if strings.HasPrefix(key, poolVersionKey(scope)+"/") {
		list = &p.active
	}
	i, found := slices.BinarySearchFunc(*list, key, func(h heldSummary, k string) int { return strings.Compare(h.key, k) })
	if del {
		if found {
			p.unplace((*list)[i].slot)
			*list = slices.Delete(*list, i, i+1)
		}
		return nil
	}
	s, err := decodeSummary(value)
	if err != nil {
		return fmt.Errorf("%w: %s", err, key)
	}
	if found {
		p.unplace((*list)[i].slot)
		(*list)[i].s, (*list)[i].slot = s, p.place(s)
	} else {
		*list = slices.Insert(*list, i, heldSummary{key: key, s: s, slot: p.place(s)})
	}
	return nil
}

// place gives s a slot and indexes its hashes.
func (p *poolState) place(s *summary) int32 {
	var slot int32
	if n := len(p.free); n > 0 {
		slot, p.free = p.free[n-1], p.free[:n-1]
		p.slots[slot] = s
	} else {
		slot = int32(len(p.slots))
		p.slots, p.counts = append(p.slots, s), append(p.counts, 0)
	}
	for i, h := range s.bghash {
		if i == 0 || h != s.bghash[i-1] { // sorted: equal hashes are adjacent
			p.byHash[h] = append(p.byHash[h], slot)
		}
	}
	return slot
}

// unplace frees a slot and unindexes its summary.
func (p *poolState) unplace(slot int32) {
	s := p.slots[slot]
	for i, h := range s.bghash {
		if i == 0 || h != s.bghash[i-1] {
			list := p.byHash[h]
			if j := slices.Index(list, slot); j >= 0 {
				list = slices.Delete(list, j, j+1)
			}
			if len(list) == 0 {
				delete(p.byHash, h)
			} else {
				p.byHash[h] = list
			}
		}
	}
	p.slots[slot] = nil
	p.free = append(p.free, slot)
}

// distinctHashes reports whether a bigram set's hashes are all distinct
// (no two of its bigrams collide).
func distinctHashes(f features) bool {
	for i := 1; i < len(f.bghash); i++ {
		if f.bghash[i] == f.bghash[i-1] {
			return false
		}
	}
	return true
}

// scan is scanPool on the held summaries: the same poolScan.
//
// The index bounds similarities first: when the lesson's and an entry's
// hashes are distinct (no collision inside either set) and non-empty,
// the hashes they share (counts) are at least the bigrams they share, so
// a hash Jaccard below the threshold rules the entry out exactly as
// nearDuplicate does; every other entry gets the exact check (near).
func (p *poolState) scan(lf features, threshold float64, withInactive bool) *poolScan {
	ps := &poolScan{activeIDs: make([]string, 0, len(p.active)), capKeys: make([]capKey, 0, len(p.active))}
	bounded := threshold > 0 && len(lf.bghash) > 0 && distinctHashes(lf)
	if bounded {
		for _, h := range lf.bghash {
			for _, slot := range p.byHash[h] {
				p.counts[slot]++
			}
		}
		defer clear(p.counts)
	}
	isNear := func(h heldSummary) bool {
		b := h.s.features
		if bounded && len(b.bghash) > 0 {
			c := int(p.counts[h.slot])
			if float64(c)/float64(len(lf.bghash)+len(b.bghash)-c) < threshold && distinctHashes(b) {
				return false
			}
		}
		return near(lf, b, threshold)
	}
	for _, h := range p.active {
		s := h.s
		if len(lf.ctags) > 0 && sharesSorted(lf.ctags, s.ctags) {
			ps.shared = append(ps.shared, Existing{feat: &features{ctags: s.ctags, cnorm: s.cnorm}})
			ps.sharedAt = append(ps.sharedAt, len(ps.activeIDs))
		}
		ps.activeIDs = append(ps.activeIDs, s.ID)
		ps.capKeys = append(ps.capKeys, capKey{active: true, promoted: s.Status == StatusPromoted,
			signal: ValueSignal(Outcomes{Helpful: s.Outcomes.Helpful, Harmful: s.Outcomes.Harmful}), seq: s.CreatedSeq})
		if isNear(h) {
			ps.nearAny = true
			ps.nearActive = append(ps.nearActive, s.ID)
		}
	}
	if !withInactive {
		return ps
	}
	for _, h := range p.inactive {
		if isNear(h) {
			ps.nearAny = true
			if !h.s.removed() && ps.nearInactive == "" {
				ps.nearInactive = h.s.ID
			}
		}
	}
	return ps
}

// near is jaccardFeatures(a, b) >= t.
func near(a, b features, t float64) bool {
	if len(a.bghash) == 0 || len(b.bghash) == 0 {
		return jaccardFeatures(a, b) >= t
	}
	return nearDuplicate(a, b, t)
}

// foldPools holds the pool states of folds between events, by summary
// scope. Safe for concurrent use: a fold takes a state out (take) and
// puts it back when its event is folded (put), so no two folds share one.
type foldPools struct {
	mu    sync.Mutex
	pools map[string]*poolState // guarded by mu
	used  map[string]uint64     // last put, by scope; guarded by mu
	held  int                   // summaries in pools; guarded by mu
	clock uint64                // guarded by mu
}

// foldPoolsMax bounds the summaries foldPools holds (≈ 1 KiB each).
const foldPoolsMax = 16384

// take removes and returns the state of the pool at version, if held.
func (c *foldPools) take(scope, version string) *poolState {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pools[scope]
	if p == nil || p.version != version {
		return nil
	}
	delete(c.pools, scope)
	delete(c.used, scope)
	c.held -= p.size()
	return p
}

// put keeps states for later folds, evicting the least recently put.
func (c *foldPools) put(states map[string]*poolState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools, c.used = map[string]*poolState{}, map[string]uint64{}
	}
	for scope, p := range states {
		if old := c.pools[scope]; old != nil {
			c.held -= old.size()
		}
		c.clock++
		c.pools[scope], c.used[scope] = p, c.clock
		c.held += p.size()
	}
	for c.held > foldPoolsMax && len(c.pools) > 0 {
		victim := ""
		for s := range c.pools {
			if victim == "" || c.used[s] < c.used[victim] {
				victim = s
			}
		}
		c.held -= c.pools[victim].size()
		delete(c.pools, victim)
		delete(c.used, victim)
	}
}

// poolTx is the Tx a fold works on: it passes every call to the
// projector's Tx and applies each write under x/ to the pool states it
// holds, so they keep equal to the Tx (poolState's invariant).
type poolTx struct {
	projector.Tx
	cfg   Config // the configuration the event folds under
	pools *foldPools
	held  map[string]*poolState // by summary scope
}

func (t *poolTx) Set(key, value []byte) error {
	if err := t.Tx.Set(key, value); err != nil {
		return err
	}
	return t.observe(key, value, false)
}

func (t *poolTx) Delete(key []byte) error {
	if err := t.Tx.Delete(key); err != nil {
		return err
	}
	return t.observe(key, nil, true)
}

func (t *poolTx) observe(key, value []byte, del bool) error {
	if len(t.held) == 0 || !strings.HasPrefix(string(key), pfxSum) {
		return nil
	}
	k := string(key)
	scope := poolOfSummaryKey(k)
	p := t.held[scope]
	if p == nil {
		return nil
	}
	return p.apply(scope, k, value, del)
}

// pool returns the state of the pool of summary scope scope, as the Tx
// sees it: held already, else taken from foldPools at the Tx's version,
// else read from the Tx.
func (t *poolTx) pool(scope string) (*poolState, error) {
	if p := t.held[scope]; p != nil {
		return p, nil
	}
	v, _, err := t.Tx.Get([]byte(poolVersionKey(scope)))
	if err != nil {
		return nil, err
	}
	p := t.pools.take(scope, string(v))
	if p == nil || len(v) == 0 {
		if p, err = loadPoolState(t.Tx, scope); err != nil {
			return nil, err
		}
	}
	if t.held == nil {
		t.held = map[string]*poolState{}
	}
	t.held[scope] = p
	return p, nil
}

// release ends the event: the held states go back to foldPools when the
// event's writes stand (ok), else they are dropped.
func (t *poolTx) release(ok bool) {
	if ok && len(t.held) > 0 {
		t.pools.put(t.held)
	}
	t.held = nil
}

// scanPool reads the pool of (tier, project) for a lesson with the given
// features: what the package's scanPool reads from the Tx, from the held
// pool state.
func (t *poolTx) scanPool(tier, project string, lf features, threshold float64, withInactive bool) (*poolScan, error) {
	p, err := t.pool(sumScope(tier, project))
	if err != nil {
		return nil, err
	}
	return p.scan(lf, threshold, withInactive), nil
}
