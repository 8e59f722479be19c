package knowledge

import (
	"cmp"
	"fmt"
	"math"
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

// poolState is every summary of one pool, active and inactive, at
// version, with the indexes a submission's comparison reads, so that it
// costs what the lesson shares with the pool, not the pool's size.
//
// An active entry is held as its decoded summary: the contradiction check
// and the cap read its text features and counts. An inactive one (archived
// or quarantined: most of a long-lived pool) is held in a compact form,
// holding only what a comparison reads of it — its id, whether it is
// removed from view and its bigram hashes — so that a pool's state grows
// with its history by a few bytes per bigram, not by whole summaries
// (archived.go). Its bigram strings are read from the store only when its
// hashes make it a near-duplicate, to confirm it.
//
// INVARIANT: while a fold holds a poolState (poolTx.held), it equals what
// a scan of the fold's Tx under x/<pool>/ reads: poolTx applies every
// summary and version write of the Tx to it. Out of a fold it is only
// reached through foldPools, by version, and then equals the pool at that
// version in any store (poolcache.go).
type poolState struct {
	version string

	// Every held summary has a slot; a slot is used when slotKey[i] != "".
	// INVARIANT: byKey[slotKey[i]] == i for every used slot i; slotHash[i]
	// are the bigram hashes of its summary; an active slot (slotActive)
	// holds its summary in slots[i] (slotID[i] "", slotRemoved[i] false),
	// an inactive one holds slots[i] nil, its id in slotID[i] and whether
	// it is removed from view (summary.removed) in slotRemoved[i]. byHash
	// lists slot i under each distinct hash of slotHash[i], empties holds
	// it when it has none; capOrder lists the active slots in the cap's
	// order (capCmp); a free slot is in none of them.
	slots       []*summary
	slotHash    [][]uint64
	slotKey     []string
	slotID      []string
	slotActive  []bool
	slotRemoved []bool
	free        []int32
	byKey       map[string]int32
	byHash      hashIndex
	// byTerm lists an active slot under each negation term
	// (negationTerms) its cnorm holds as a substring.
	byTerm   map[string][]int32
	empties  map[int32]struct{}
	capOrder []int32
	counts   []int32 // scratch of scan: shared hashes by slot, zero between scans
	// bytes is the estimated memory of the held slots (slotCost,
	// archivedCost).
	bytes int
}

func newPoolState() *poolState {
	return &poolState{byKey: map[string]int32{}, byHash: newHashIndex(),
		byTerm: map[string][]int32{}, empties: map[int32]struct{}{}}
}

// size is the state's estimated memory in bytes.
func (p *poolState) size() int { return p.bytes }

// loadPoolState reads the pool of summary scope scope from r in one scan
// (its version, its active summaries, then its inactive ones, of which it
// decodes the compact form only).
func loadPoolState(r projector.Reader, scope string) (*poolState, error) {
	p := newPoolState()
	vk := poolVersionKey(scope)
	activePfx := vk + "/"
	err := r.Scan([]byte(pfxSum+scope), func(k, v []byte) error {
		if string(k) == vk {
			p.version = string(v)
			return nil
		}
		key := string(k)
		if !strings.HasPrefix(key, activePfx) {
			a, err := decodeArchived(key, v)
			if err != nil {
				return fmt.Errorf("%w: %s", err, k)
			}
			p.byKey[key] = p.placeArchived(key, a)
			return nil
		}
		s, err := decodeSummary(v)
		if err != nil {
			return fmt.Errorf("%w: %s", err, k)
		}
		p.byKey[key] = p.place(key, s, true)
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
	if slot, ok := p.byKey[key]; ok {
		p.unplace(slot)
		delete(p.byKey, key)
	}
	if del {
		return nil
	}
	if !strings.HasPrefix(key, poolVersionKey(scope)+"/") {
		a, err := decodeArchived(key, value)
		if err != nil {
			return fmt.Errorf("%w: %s", err, key)
		}
		p.byKey[key] = p.placeArchived(key, a)
		return nil
	}
	s, err := decodeSummary(value)
	if err != nil {
		return fmt.Errorf("%w: %s", err, key)
	}
	p.byKey[key] = p.place(key, s, true)
	return nil
}

// replace puts s under key in place of the summary held under old (""
// or key itself: none other; the caller deletes old from the Tx). When
// the two summaries have the same bigram hashes (an entry saved again: a
// status, an outcome, a confirmation, an archive), the slot keeps its
// place in the bigram index, the largest: a save costs the same whatever
// the pool's size.
func (p *poolState) replace(old, key string, s *summary, active bool) {
	// At most two held summaries (under old and under key) become one.
	slot, ok := p.byKey[old]
	if other, has := p.byKey[key]; has {
		if ok {
			delete(p.byKey, key)
			p.unplace(other)
		} else {
			slot, ok = other, true
		}
	}
	if ok {
		delete(p.byKey, p.slotKey[slot])
		if !slices.Equal(p.slotHash[slot], s.bghash) {
			p.unplace(slot)
			ok = false
		}
	}
	if !ok {
		p.byKey[key] = p.place(key, s, active)
		return
	}
	p.reslot(slot, key, s, active)
	p.byKey[key] = slot
}

// reslot puts s under key in the used slot slot, whose hashes equal
// s.bghash: the bigram index stays; the term index and the cap order
// follow the slot's activity and text.
func (p *poolState) reslot(slot int32, key string, s *summary, active bool) {
	p.bytes -= p.cost(slot)
	old := p.slots[slot] // nil: inactive
	if old != nil {
		if i, found := slices.BinarySearchFunc(p.capOrder, slot, p.capCmp); found {
			p.capOrder = slices.Delete(p.capOrder, i, i+1)
		}
	}
	sameText := old != nil && active && old.cnorm == s.cnorm
	if old != nil && !sameText {
		p.unindexText(slot, old)
	}
	p.slotKey[slot], p.slotActive[slot] = key, active
	if active {
		p.slots[slot], p.slotID[slot], p.slotRemoved[slot] = s, "", false
		if !sameText {
			p.indexText(slot, s)
		}
		i, _ := slices.BinarySearchFunc(p.capOrder, slot, p.capCmp)
		p.capOrder = slices.Insert(p.capOrder, i, slot)
	} else {
		p.slots[slot], p.slotID[slot], p.slotRemoved[slot] = nil, idOfKey(key, s.ID), s.removed()
	}
	p.bytes += p.cost(slot)
}

// capKeyOf is what the cap order reads of an active summary.
func capKeyOf(s *summary) capKey {
	return capKey{active: true, promoted: s.Status == StatusPromoted,
		signal: ValueSignal(Outcomes{Helpful: s.Outcomes.Helpful, Harmful: s.Outcomes.Harmful}), seq: s.CreatedSeq}
}

// capCmp orders active slots as a stable sort by capLess of the pool in
// key order does: capLess, then key.
func (p *poolState) capCmp(a, b int32) int {
	ka, kb := capKeyOf(p.slots[a]), capKeyOf(p.slots[b])
	switch {
	case capLess(ka, kb):
		return -1
	case capLess(kb, ka):
		return 1
	}
	return strings.Compare(p.slotKey[a], p.slotKey[b])
}

// newSlot gives key a slot with hashes hs, indexed by them.
func (p *poolState) newSlot(key string, hs []uint64) int32 {
	var slot int32
	if n := len(p.free); n > 0 {
		slot, p.free = p.free[n-1], p.free[:n-1]
		p.slotKey[slot], p.slotHash[slot] = key, hs
	} else {
		slot = int32(len(p.slotKey))
		p.slots, p.counts, p.slotHash = append(p.slots, nil), append(p.counts, 0), append(p.slotHash, hs)
		p.slotKey, p.slotID = append(p.slotKey, key), append(p.slotID, "")
		p.slotActive, p.slotRemoved = append(p.slotActive, false), append(p.slotRemoved, false)
	}
	for i, h := range hs {
		if i == 0 || h != hs[i-1] { // sorted: equal hashes are adjacent
			p.byHash.add(h, slot)
		}
	}
	if len(hs) == 0 {
		p.empties[slot] = struct{}{}
	}
	return slot
}

// place gives s a slot and indexes it: held whole when active, else in
// its compact form.
func (p *poolState) place(key string, s *summary, active bool) int32 {
	if !active {
		return p.placeArchived(key, archivedOf(key, s))
	}
	slot := p.newSlot(key, s.bghash)
	p.slots[slot], p.slotActive[slot] = s, true
	p.indexText(slot, s)
	i, _ := slices.BinarySearchFunc(p.capOrder, slot, p.capCmp)
	p.capOrder = slices.Insert(p.capOrder, i, slot)
	p.bytes += p.cost(slot)
	return slot
}

// placeArchived gives an inactive entry a slot and indexes it.
func (p *poolState) placeArchived(key string, a archived) int32 {
	slot := p.newSlot(key, a.bghash)
	p.slotID[slot], p.slotRemoved[slot] = a.id, a.removed
	p.bytes += p.cost(slot)
	return slot
}

// indexText lists an active slot under its negation terms (byTerm).
func (p *poolState) indexText(slot int32, s *summary) {
	for _, t := range negationTerms {
		if strings.Contains(s.cnorm, t) {
			p.byTerm[t] = append(p.byTerm[t], slot)
		}
	}
}

// unindexText undoes indexText(slot, s).
func (p *poolState) unindexText(slot int32, s *summary) {
	for _, t := range negationTerms {
		if strings.Contains(s.cnorm, t) {
			dropSlot(p.byTerm, t, slot)
		}
	}
}

// cost is the estimated memory of a used slot.
func (p *poolState) cost(slot int32) int {
	if s := p.slots[slot]; s != nil {
		return slotCost(p.slotKey[slot], s)
	}
	return archivedCost(p.slotKey[slot], p.slotID[slot], len(p.slotHash[slot]))
}

func dropSlot[K comparable](m map[K][]int32, k K, slot int32) {
	list := m[k]
	if j := slices.Index(list, slot); j >= 0 {
		list = slices.Delete(list, j, j+1)
	}
	if len(list) == 0 {
		delete(m, k)
	} else {
		m[k] = list
	}
}

// unplace frees a slot and unindexes it.
func (p *poolState) unplace(slot int32) {
	p.bytes -= p.cost(slot)
	hs := p.slotHash[slot]
	for i, h := range hs {
		if i == 0 || h != hs[i-1] {
			p.byHash.drop(h, slot)
		}
	}
	delete(p.empties, slot)
	if s := p.slots[slot]; s != nil {
		p.unindexText(slot, s)
		if i, ok := slices.BinarySearchFunc(p.capOrder, slot, p.capCmp); ok {
			p.capOrder = slices.Delete(p.capOrder, i, i+1)
		}
	}
	p.slots[slot], p.slotHash[slot], p.slotKey[slot], p.slotID[slot] = nil, nil, "", ""
	p.slotActive[slot], p.slotRemoved[slot] = false, false
	p.free = append(p.free, slot)
}

// byKeyOrder sorts slots by their keys: creation order.
func (p *poolState) byKeyOrder(slots []int32) {
	slices.SortFunc(slots, func(a, b int32) int { return strings.Compare(p.slotKey[a], p.slotKey[b]) })
}

// scan is scanPool on the held summaries: the same poolScan, but for
// activeIDs and capKeys (the cap reads capOrder instead, capVictims). r is
// the store the state equals (poolState's invariant): an inactive entry
// whose hashes make it a near-duplicate is confirmed from its stored
// summary (nearArchived).
//
// Only entries that can be near-duplicates are compared: with threshold
// > 0, an entry sharing no bigram with a lesson that has some is at
// similarity 0, and sharing a bigram means sharing its hash, so the
// entries under the lesson's hashes (byHash) are all the candidates (the
// entries without bigrams when the lesson has none), and of those hashes
// the rarest few suffice (prefix filtering, below). Each candidate gets
// the exact check (nearFeatures, nearArchived).
func (p *poolState) scan(r projector.Reader, lf features, threshold float64, withInactive bool) (*poolScan, error) {
	ps := &poolScan{}
	if len(lf.ctags) > 0 {
		// Active entries sharing a contradiction tag and holding a term
		// that can make them contradict the lesson (candidateContexts);
		// byTerm lists active slots only.
		var shared []int32
		_, needed := candidateContexts(lf.cnorm)
		for _, t := range needed {
			for _, slot := range p.byTerm[t] {
				if sharesSorted(lf.ctags, p.slots[slot].ctags) {
					shared = append(shared, slot)
				}
			}
		}
		p.byKeyOrder(shared)
		shared = slices.Compact(shared)
		for _, slot := range shared {
			s := p.slots[slot]
			ps.shared = append(ps.shared, Existing{feat: &features{ctags: s.ctags, cnorm: s.cnorm}})
			ps.sharedIDs = append(ps.sharedIDs, s.ID)
		}
	}
	var cand []int32
	switch {
	case threshold <= 0: // every similarity passes
		for slot, k := range p.slotKey {
			if k != "" {
				cand = append(cand, int32(slot))
			}
		}
	case len(lf.bghash) == 0:
		for slot := range p.empties {
			cand = append(cand, slot)
		}
	default:
		// Prefix filtering: J(a, b) >= t needs |a ∩ b| >= t·|a|, so a
		// near entry holds one of any |a| − ⌈t·|a|⌉ + 1 bigrams of the
		// lesson, and so the hash of one of them: probing the rarest
		// hashes of the pool finds every near entry (+1 for rounding).
		//
		// Counting makes the filter stronger at the same cost: a near
		// entry misses at most miss of the lesson's bigrams (rounding
		// allowed for), so of any r distinct hashes of the lesson it holds
		// at least r − miss (each hash it lacks is at least one bigram it
		// lacks). Probing the rarest miss+3 hashes, only entries holding
		// three of them are compared: an entry sharing a common bigram or
		// two with the lesson is no longer a candidate, so the comparisons
		// (a random memory access each) no longer grow with the pool; the
		// lists walked cost an increment per entry.
		hs := make([][]int32, 0, len(lf.bghash)) // the lists of the lesson's distinct hashes
		singles := make([]int32, len(lf.bghash)) // backs the lists of one slot
		for i, h := range lf.bghash {
			if i == 0 || h != lf.bghash[i-1] {
				hs = append(hs, p.byHash.slots(h, singles[i:i+1:i+1]))
			}
		}
		miss := len(lf.bigrams) - int(math.Ceil(threshold*float64(len(lf.bigrams)))) + 1
		if r := miss + 3; r < len(hs) {
			slices.SortStableFunc(hs, func(a, b []int32) int { return cmp.Compare(len(a), len(b)) })
			hs = hs[:max(1, r)]
		}
		need := int32(max(1, len(hs)-miss))
		var seen []int32
		for _, list := range hs {
			for _, slot := range list {
				if p.counts[slot] == 0 {
					seen = append(seen, slot)
				}
				p.counts[slot]++
			}
		}
		for _, slot := range seen {
			if p.counts[slot] >= need {
				cand = append(cand, slot)
			}
			p.counts[slot] = 0
		}
	}
	var near []int32
	for _, slot := range cand {
		switch s := p.slots[slot]; {
		case s != nil:
			if nearFeatures(lf, s.features, threshold) {
				near = append(near, slot)
			}
		case withInactive:
			ok, err := p.nearArchived(r, lf, slot, threshold)
			if err != nil {
				return nil, err
			}
			if ok {
				near = append(near, slot)
			}
		}
	}
	p.byKeyOrder(near)
	for _, slot := range near {
		ps.nearAny = true
		if s := p.slots[slot]; s != nil {
			ps.nearActive = append(ps.nearActive, s.ID)
		} else if !p.slotRemoved[slot] && ps.nearInactive == "" {
			ps.nearInactive = p.slotID[slot]
		}
	}
	return ps, nil
}

// victims are the ids of the active entries to archive so that at most
// max remain, in the order capVictims gives them, when the pool is the
// held one without the summary under skip ("": none) plus fresh (nil:
// none) after it, fresh having id freshID.
func (p *poolState) victims(skip string, fresh *capKey, freshID string, max int) []string {
	n := len(p.capOrder)
	if slot, ok := p.byKey[skip]; ok && skip != "" && p.slotActive[slot] {
		n--
	}
	if fresh != nil {
		n++
	}
	over := n - max
	var out []string
	for _, slot := range p.capOrder {
		if len(out) >= over {
			return out
		}
		if p.slotKey[slot] == skip {
			continue
		}
		if fresh != nil && capLess(*fresh, capKeyOf(p.slots[slot])) {
			out, fresh = append(out, freshID), nil
			if len(out) >= over {
				return out
			}
		}
		out = append(out, p.slots[slot].ID)
	}
	if fresh != nil && len(out) < over {
		out = append(out, freshID)
	}
	return out
}

// nearFeatures is jaccardFeatures(a, b) >= t.
func nearFeatures(a, b features, t float64) bool {
	if len(a.bghash) == 0 || len(b.bghash) == 0 {
		return jaccardFeatures(a, b) >= t
	}
	return nearDuplicate(a, b, t)
}

// foldPools holds the pool states of folds between events, by summary
// scope and version. Safe for concurrent use: a fold takes a state out
// (take) and puts it back when its event is folded (put), so no two folds
// share one.
//
// Keyed by version as well as scope: the folds of other stores (an
// audit's replay from a checkpoint, a rebuild) read the same pools at
// other versions, and keyed by scope alone their states took the place of
// the live store's, whose next submission to each pool they had read then
// decoded the whole pool again (the hive, read by every submission, most
// of all). Their states sit beside the live store's.
//
// Nor do they push the live store's out by being put more recently: a
// rebuild, or a run of audits, puts states far more often than a steady
// live load, and at a million events the live store's first submission to
// each pool then decoded it again (15-28 ms a pool). The budget is shared
// by two classes, the live store's states and the others': past it, the
// least recently put state of a class holding more than half of it
// leaves first. Either class alone may fill the budget; side by side, a
// class gives way to the other's folds only while it holds more than half.
// A fold of another store neither takes a state of the live store's
// class nor replaces one: states are kept by version, and a rebuild of
// the same log reaches the live store's versions.
type foldPools struct {
	mu    sync.Mutex
	pools map[foldKey]*poolState // guarded by mu
	used  map[foldKey]uint64     // last put; guarded by mu
	live  map[foldKey]bool       // put by the live store's fold; guarded by mu
	held  int                    // estimated bytes of pools (poolState.size); guarded by mu
	// liveHeld is the part of held the live store's states take; guarded
	// by mu.
	liveHeld int
	clock    uint64 // guarded by mu
	// budget bounds held (bytes; 0: DefaultFoldBudget); guarded by mu.
	budget int64
}

// foldKey names a pool state: its summary scope and version.
type foldKey struct{ scope, version string }

func (c *foldPools) setBudget(b int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = b
}

// take removes and returns the state of the pool at version, if held
// and the taker may have it: a fold of another store (live false) does
// not take the live store's (it reads the pool from its store instead),
// as the live store's pool is at that version.
func (c *foldPools) take(scope, version string, live bool) *poolState {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := foldKey{scope, version}
	p := c.pools[k]
	if p == nil || c.live[k] && !live {
		return nil
	}
	c.drop(k)
	return p
}

// drop removes the state under k. REQUIRES: c.mu held, k held.
func (c *foldPools) drop(k foldKey) {
	n := c.pools[k].size()
	c.held -= n
	if c.live[k] {
		c.liveHeld -= n
	}
	delete(c.pools, k)
	delete(c.used, k)
	delete(c.live, k)
}

// put keeps states for later folds, each under its version, evicting the
// least recently put of a class over half the budget (see foldPools);
// live says they are the live store's.
func (c *foldPools) put(states map[string]*poolState, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools, c.used, c.live = map[foldKey]*poolState{}, map[foldKey]uint64{}, map[foldKey]bool{}
	}
	kept := make(map[foldKey]bool, len(states))
	for scope, p := range states {
		k := foldKey{scope, p.version}
		if c.live[k] && !live {
			// The live store's state of the same pool at the same
			// version (another store's fold reached it too: a rebuild
			// of the same log): it stays the live store's.
			continue
		}
		if c.pools[k] != nil {
			c.drop(k)
		}
		c.clock++
		c.pools[k], c.used[k] = p, c.clock
		c.held += p.size()
		if live {
			c.live[k] = true
			c.liveHeld += p.size()
		}
		kept[k] = true
	}
	// The states just put stay, even one larger than the bound: their
	// pools are the ones the next events read.
	budget := c.budget
	if budget <= 0 {
		budget = DefaultFoldBudget
	}
	for int64(c.held) > budget {
		liveOver := 2*int64(c.liveHeld) > budget
		otherOver := 2*int64(c.held-c.liveHeld) > budget
		victim, found := c.leastRecent(kept, func(k foldKey) bool { return c.live[k] && liveOver || !c.live[k] && otherOver })
		if !found {
			victim, found = c.leastRecent(kept, func(foldKey) bool { return true })
		}
		if !found {
			break
		}
		c.drop(victim)
	}
}

// leastRecent is the least recently put state among those of which
// among is true, kept ones aside. REQUIRES: c.mu held.
func (c *foldPools) leastRecent(kept map[foldKey]bool, among func(foldKey) bool) (victim foldKey, found bool) {
	for k := range c.pools {
		if !kept[k] && among(k) && (!found || c.used[k] < c.used[victim]) {
			victim, found = k, true
		}
	}
	return victim, found
}
