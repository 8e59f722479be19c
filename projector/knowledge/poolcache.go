package knowledge

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/loredev/lore/projector"
)

// Pool versions and the pool cache.
//
// Every pool (a project's swarm store, or the hive) has a version under
//
//	x/<pool>/a    (x/h/a, x/s/<project token>/a)
//
// the pool's active-summary prefix without its slash, so one scan of
// x/<pool>/a reads the version first and then the pool's active summaries,
// from one consistent view of the store. NB: must not change: it is stored.
//
// The version is a digest chained over every write of a summary of the
// pool since the pool was empty (bumpPoolVersion):
//
//	v' = SHA-256(v ‖ key and value set ‖ key deleted)[:16]
//
// INVARIANT: a pool's version changes with every write of one of its
// summaries (saveEntry is their only writer), and two equal versions name
// equal summaries, in whatever store they were read: the digest is a pure
// function of the history of writes, which determines the summaries (a
// collision of a 128-bit SHA-256 prefix aside). A cache keyed by version
// can therefore be shared by every store the Model folds or serves (the
// live store, audit replays, rebuilds) and never serves a stale pool.
const poolVersionLen = 16

// poolVersionKey is the key of the version of the pool with summary scope
// scope (sumScope).
func poolVersionKey(scope string) string { return pfxSum + scope + "a" }

// poolOfSummaryKey is the summary scope of a summary key.
func poolOfSummaryKey(k string) string {
	rest := strings.TrimPrefix(k, pfxSum)
	if strings.HasPrefix(rest, "h/") {
		return "h/"
	}
	if strings.HasPrefix(rest, "s/") {
		// s/<token>/...: a token never contains '/'.
		if i := strings.IndexByte(rest[2:], '/'); i >= 0 {
			return rest[:2+i+1]
		}
	}
	return rest
}

// bumpPoolVersion chains one change of the pool's summaries into its
// version: the summary set (setKey, setValue; none when setKey is "") and
// the one deleted (none when "").
//
// The change is also recorded in the journal j (nil: not recorded), under
// the new version, so a reader holding the pool at an earlier version can
// apply the changes instead of reading the pool again (poolCache.active).
func bumpPoolVersion(tx projector.Tx, j *poolJournal, scope, setKey string, setValue []byte, deleted string) error {
	vk := []byte(poolVersionKey(scope))
	prev, _, err := tx.Get(vk)
	if err != nil {
		return err
	}
	h := sha256.New()
	h.Write(prev)
	var n [binary.MaxVarintLen64]byte
	field := func(tag byte, s []byte) {
		h.Write([]byte{tag})
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write(s)
	}
	if setKey != "" {
		field('k', []byte(setKey))
		field('v', setValue)
	}
	if deleted != "" {
		field('d', []byte(deleted))
	}
	next := h.Sum(nil)[:poolVersionLen]
	if err := tx.Set(vk, next); err != nil {
		return err
	}
	j.record(string(next), poolStep{prev: string(prev), setKey: setKey, setValue: setValue, deleted: deleted})
	return nil
}

// poolCache holds the decoded active summaries of the pools read most
// recently, each with the version it was read at: up to
// maxCachedVersions versions of a pool, so that injections from an
// audit's view (a pool at an earlier version) and from the live store do
// not take each other's place. Safe for concurrent use.
type poolCache struct {
	mu sync.Mutex
	// pools are the versions of each pool held, by summary scope, the
	// most recently used last; guarded by mu.
	pools map[string][]*cachedPool
	held  int    // estimated bytes of pools (cachedPool.bytes); guarded by mu
	clock uint64 // guarded by mu
	// budget bounds held (bytes; 0: DefaultQueryBudget); guarded by mu.
	budget int64
	// journal is the recent changes of every pool (pooljournal.go).
	journal poolJournal
	views   map[viewKey]*mergedView // guarded by mu
}

func (c *poolCache) setBudget(b int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = b
}

// cachedPool is one pool's active summaries at one version.
//
// INVARIANT: version and sums never change once the pool is in a cache:
// readers share them without locking; sums are in (CreatedSeq, id) order
// and equal what activeSummaries reads at that version.
type cachedPool struct {
	version string
	sums    []*summary
	vocab   *relVocab // of every summary of sums
	used    uint64    // last use; guarded by poolCache.mu
	bytes   int       // estimated memory of sums (memCost), set before it is stored

	mu    sync.Mutex
	dedup map[dedupKey]*dedupIndex // derived indexes; guarded by mu
	// from is the pool this one was replayed from (replay), until this
	// one's dedup index is built: its index may carry over
	// (deriveIndex). Guarded by mu.
	from *cachedPool
	// merged holds keptMerged of this pool (as the swarm) after a hive
	// version, by that version ("" for no hive) and dedup key; guarded by
	// mu. Read-only once stored.
	merged map[mergedKey]*keptSet
}

// mergedKey names a merged dedup: the hive's version ("" when the hive is
// not shown) and the dedup key.
type mergedKey struct {
	hive string
	dedupKey
}

// active returns the active summaries of the pool with summary scope
// scope, as r sees it: from the cache when r's version of the pool is
// cached, else from one scan of r (then cached). with are the summary
// scopes of the other pools the same query reads: caching this one never
// evicts them (see store).
func (c *poolCache) active(r projector.Reader, scope string, with ...string) (*cachedPool, error) {
	vk := poolVersionKey(scope)
	v, ok, err := r.Get([]byte(vk))
	if err != nil {
		return nil, err
	}
	if ok {
		p, hit := c.lookup(scope, string(v))
		if hit {
			return p, nil
		}
		// Another version the journal leads from (the one used most
		// recently first) is brought to this one by its changes.
		for _, p := range c.versions(scope) {
			if p.version == "" {
				continue
			}
			if steps, ok := c.journal.path(p.version, string(v)); ok {
				next, err := replay(p, scope, string(v), steps)
				if err != nil {
					return nil, err
				}
				c.store(scope, next, with...)
				return next, nil
			}
		}
	}
	// One scan reads the version and the summaries from the same view,
	// whatever the projector commits meanwhile.
	p := &cachedPool{}
	err = r.Scan([]byte(vk), func(k, val []byte) error {
		if len(k) == len(vk) {
			p.version = string(val)
			return nil
		}
		s, err := decodeSummary(val)
		if err != nil {
			return fmt.Errorf("%w: %s", err, k)
		}
		p.sums = append(p.sums, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.vocab = &relVocab{}
	p.vocab.index(p.sums)
	if p.version != "" {
		c.store(scope, p, with...)
	}
	return p, nil
}

// relVocab is the distinct words of the relevance texts of the summaries
// of a pool's versions, shared by the cachedPools replayed from one read
// of the pool (replay). Append-only: a word's id never changes, so a
// summary's relw stays valid in every later snapshot. Safe for concurrent
// use.
type relVocab struct {
	mu    sync.Mutex
	ids   map[string]uint32 // guarded by mu
	words []string          // by id; guarded by mu (appends only)
}

// snapshot is the vocab's words so far: every id of a summary indexed
// before the call is below its length.
func (v *relVocab) snapshot() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.words[:len(v.words):len(v.words)]
}

// index sets the vocab and relw of sums (not yet shared): relw lists the
// words of rel as relevanceIn splits it (on single spaces).
func (v *relVocab) index(sums []*summary) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids == nil {
		v.ids = map[string]uint32{}
	}
	for _, s := range sums {
		rel := s.rel
		s.relw = make([]uint32, 0, strings.Count(rel, " ")+1)
		for {
			w, rest, more := strings.Cut(rel, " ")
			id, ok := v.ids[w]
			if !ok {
				id = uint32(len(v.words))
				v.ids[w] = id
				v.words = append(v.words, w)
			}
			s.relw = append(s.relw, id)
			if !more {
				break
			}
			rel = rest
		}
		s.vocab = v
	}
}

// relScorer is relevanceIn for one task over many summaries: a word of a
// vocab is matched against the task's terms once per query, a summary with
// word ids (relw) then costs one OR per word.
type relScorer struct {
	task   []string
	vocabs []*relVocab
	masks  [][]uint64 // masks[i][id]: the terms word id of vocabs[i] matches
}

// of is relevanceIn(task, e.rel).
func (r *relScorer) of(e *summary) float64 {
	if e.vocab == nil || len(r.task) == 0 || len(r.task) > 64 {
		return relevanceIn(r.task, e.rel)
	}
	m := r.masksOf(e.vocab)
	var hit uint64
	for _, id := range e.relw {
		hit |= m[id]
	}
	return float64(bits.OnesCount64(hit)) / float64(len(r.task))
}

func (r *relScorer) masksOf(v *relVocab) []uint64 {
	for i, x := range r.vocabs {
		if x == v {
			return r.masks[i]
		}
	}
	words := v.snapshot()
	m := make([]uint64, len(words))
	for id, w := range words {
		for i, t := range r.task {
			if w == t || (len(t) >= 4 && strings.HasPrefix(w, t)) || (len(w) >= 4 && strings.HasPrefix(t, w)) {
				m[id] |= 1 << i
			}
		}
	}
	r.vocabs, r.masks = append(r.vocabs, v), append(r.masks, m)
	return m
}

// maxCachedVersions bounds the versions of one pool a poolCache holds.
const maxCachedVersions = 2

// lookup returns the cached pool of scope and whether it is at version;
// when it is not, the pool returned (nil: none cached) is the version of
// the pool used most recently.
func (c *poolCache) lookup(scope, version string) (*cachedPool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := c.pools[scope]
	for i, p := range vs {
		if p.version == version {
			c.clock++
			p.used = c.clock
			c.pools[scope] = append(append(vs[:i:i], vs[i+1:]...), p)
			return p, true
		}
	}
	if len(vs) == 0 {
		return nil, false
	}
	return vs[len(vs)-1], false
}

// versions are the cached versions of the pool of scope, the most
// recently used first.
func (c *poolCache) versions(scope string) []*cachedPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := slices.Clone(c.pools[scope])
	slices.Reverse(vs)
	return vs
}

// store caches p (the most recently used version of its pool, beside at
// most maxCachedVersions-1 others), then evicts the least recently used
// other versions while the cache holds more than its budget: never p, nor
// the most recently used version of the pools of scopes with.
//
// INVARIANT: the pools one query reads (a project's swarm, then the hive)
// stay cached together, whatever their sizes: the budget applies to the
// other pools. Evicting one of them to store the other made every query
// on two pools larger together than the budget read and decode both again
// and rebuild their dedups (a swarm and a hive at their caps, 10 000 and
// up to 100 000 entries, can exceed it).
func (c *poolCache) store(scope string, p *cachedPool, with ...string) {
	if p.bytes == 0 {
		for _, s := range p.sums {
			p.bytes += s.memCost()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools = map[string][]*cachedPool{}
	}
	vs := c.pools[scope]
	kept := vs[:0]
	for _, q := range vs {
		if q.version == p.version {
			c.held -= q.bytes
			continue
		}
		kept = append(kept, q)
	}
	for len(kept) >= maxCachedVersions {
		c.held -= kept[0].bytes
		kept = kept[1:]
	}
	c.clock++
	p.used = c.clock
	c.pools[scope] = append(kept, p)
	c.held += p.bytes
	budget := c.budget
	if budget <= 0 {
		budget = DefaultQueryBudget
	}
	for int64(c.held) > budget {
		victim, vs := (*cachedPool)(nil), ""
		for s, q := range c.pools {
			if len(q) == 0 {
				continue
			}
			protected := q[len(q)-1] // p, or a pool this query reads
			if s != scope && !slices.Contains(with, s) {
				protected = nil
			}
			for _, x := range q {
				if x != protected && (victim == nil || x.used < victim.used) {
					victim, vs = x, s
				}
			}
		}
		if victim == nil {
			break // only the pools of this query are left
		}
		left := slices.DeleteFunc(c.pools[vs], func(x *cachedPool) bool { return x == victim })
		if len(left) == 0 {
			delete(c.pools, vs)
		} else {
			c.pools[vs] = left
		}
		c.held -= victim.bytes
	}
}

// dedupKey names a dedup of a pool's candidates: the scopes shown (sorted,
// NUL-separated) and the threshold.
type dedupKey struct {
	scopes    string
	threshold float64
}

func dedupKeyOf(scopes map[string]bool, threshold float64) dedupKey {
	xs := make([]string, 0, len(scopes))
	for s := range scopes {
		xs = append(xs, s)
	}
	slices.Sort(xs)
	return dedupKey{strings.Join(xs, "\x00"), threshold}
}

// maxDedups bounds the dedup indexes a cachedPool keeps.
const maxDedups = 8

// dedupIndexFor returns the dedup of the pool's in-scope candidates, in
// the hash order of their own frequencies, built once per key.
//
// REQUIRES: k.threshold > 0; scopes is the set k names.
func (p *cachedPool) dedupIndexFor(scopes map[string]bool, k dedupKey) *dedupIndex {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x := p.dedup[k]; x != nil {
		return x
	}
	if src := p.from; src != nil {
		src.mu.Lock()
		sx := src.dedup[k]
		src.mu.Unlock()
		if sx != nil {
			if x := deriveIndex(sx, src.sums, p.sums, scopes); x != nil {
				p.keepIndex(k, x)
				return x
			}
		}
	}
	var cand []*summary
	for _, e := range p.sums {
		if e.active() && scopes[e.Scope] {
			cand = append(cand, e)
		}
	}
	d := newDedupper(nil, docFreq(cand), k.threshold, len(cand))
	for _, e := range cand {
		d.add(e)
	}
	x := d.index()
	x.lineage = &struct{ byte }{}
	p.keepIndex(k, x)
	return x
}

// keepIndex stores x under k. REQUIRES: p.mu held.
func (p *cachedPool) keepIndex(k dedupKey, x *dedupIndex) {
	if p.dedup == nil || len(p.dedup) >= maxDedups {
		p.dedup = map[dedupKey]*dedupIndex{}
	}
	p.dedup[k] = x
	p.from = nil
}

// deriveIndex is the dedup of the pool now (sums) from the dedup x of the
// pool before (old), when every change between them keeps each entry's
// candidacy and bigrams (an entry saved again: outcomes, encounters,
// confidence): the same entries are kept, with the summaries of now, and
// the index is x's. Nil when some change may decide otherwise.
func deriveIndex(x *dedupIndex, old, sums []*summary, scopes map[string]bool) *dedupIndex {
	cand := func(s *summary) bool { return s.active() && scopes[s.Scope] }
	kept := slices.Clone(x.kept)
	for o, s := range summaryChanges(old, sums) {
		switch {
		case o == nil && cand(s), s == nil && cand(o):
			return nil // a candidate added or removed
		case o == nil || s == nil || !cand(o) && !cand(s):
			continue // not a candidate either side
		case cand(o) != cand(s) || !slices.Equal(o.bghash, s.bghash):
			return nil
		}
		if k, ok := slices.BinarySearchFunc(kept, o, cmpSummary); ok && kept[k] == o {
			kept[k] = s
		}
	}
	return &dedupIndex{df: x.df, kept: kept, post: x.post, emptyKept: x.emptyKept, lineage: x.lineage}
}

// keptMerged is dedupKept of the pool hive (nil when the hive is not
// shown) followed by swarm.
//
// The hive comes first in the merged pool, so its kept entries are the
// dedup of its own candidates: that part is built once per hive version
// (dedupIndexFor) and the swarm's candidates continue it in the hive's
// hash order, which prefix filtering allows (dedupper).
//
// The result is a pure function of the two pools' versions, the scopes and
// the threshold, so it is kept on the swarm's cachedPool (by the hive's
// version) and shared, read-only, by the injections of those versions.
//
// A result not cached is the view of (scope, threshold) moved to the two
// versions (mergedview.go): its cost is the change since the view's last
// versions, not the pool's size.
func (c *poolCache) keptMerged(scope string, hive, swarm *cachedPool, scopes map[string]bool, threshold float64) *keptSet {
	mk := mergedKey{dedupKey: dedupKeyOf(scopes, threshold)}
	if hive != nil {
		mk.hive = hive.version
		if mk.hive == "" {
			return &keptSet{sums: buildMerged(hive, swarm, scopes, threshold)} // an empty, unversioned hive: not cached
		}
	}
	if swarm.version == "" {
		return &keptSet{sums: buildMerged(hive, swarm, scopes, threshold)}
	}
	swarm.mu.Lock()
	kept, ok := swarm.merged[mk]
	swarm.mu.Unlock()
	if ok {
		return kept
	}
	if threshold > 0 {
		kept = c.mergedKept(scope, hive, swarm, scopes, mk.dedupKey)
	} else {
		kept = &keptSet{sums: buildMerged(hive, swarm, scopes, threshold)}
	}
	swarm.mu.Lock()
	if swarm.merged == nil || len(swarm.merged) >= maxDedups {
		swarm.merged = map[mergedKey]*keptSet{}
	}
	swarm.merged[mk] = kept
	swarm.mu.Unlock()
	return kept
}

// buildMerged is keptMerged without its cache.
func buildMerged(hive, swarm *cachedPool, scopes map[string]bool, threshold float64) []*summary {
	if threshold <= 0 {
		for _, p := range []*cachedPool{hive, swarm} {
			if p == nil {
				continue
			}
			for _, e := range p.sums {
				if e.active() && scopes[e.Scope] {
					return []*summary{e} // every similarity passes: only the first is kept
				}
			}
		}
		return nil
	}
	base := &dedupIndex{}
	if hive != nil {
		base = hive.dedupIndexFor(scopes, dedupKeyOf(scopes, threshold))
	}
	d := newDedupper(base, base.df, threshold, len(swarm.sums))
	for _, e := range swarm.sums {
		if e.active() && scopes[e.Scope] {
			d.add(e)
		}
	}
	return d.kept[:len(d.kept):len(d.kept)]
}
