package knowledge

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// TestPoolCacheKeepsAQuerysPools: the pools one injection reads (its
// project's swarm and the hive) stay cached together even when they hold
// more summaries together than the cache's bound; other pools are evicted
// first.
func TestPoolCacheKeepsAQuerysPools(t *testing.T) {
	const budget = 3000 // bytes
	c := &poolCache{budget: budget}
	pool := func(v string, n int) *cachedPool { return &cachedPool{version: v, bytes: n} }
	swarm, hive, other := sumScope(TierSwarm, "big"), sumScope(TierHive, ""), sumScope(TierSwarm, "small")
	c.store(other, pool("o1", 10))
	big := budget*2/3 + 1 // two of them exceed the budget
	for i := range 4 {
		// As InjectFrom stores them: the swarm (the hive read next), then
		// the hive (the swarm read before).
		c.store(swarm, pool(fmt.Sprint("s", i), big), hive)
		c.store(hive, pool(fmt.Sprint("h", i), big), swarm)
		for _, s := range []struct{ scope, version string }{{swarm, fmt.Sprint("s", i)}, {hive, fmt.Sprint("h", i)}} {
			if _, hit := c.lookup(s.scope, s.version); !hit {
				t.Fatalf("round %d: pool %s at %s is not cached after the injection that read it", i, s.scope, s.version)
			}
		}
		if _, hit := c.lookup(other, "o1"); hit {
			t.Fatalf("round %d: the other pool is still cached with %d bytes held (budget %d)", i, c.held, budget)
		}
	}
	if c.held != 2*big {
		t.Fatalf("held %d bytes, want %d (the two pools)", c.held, 2*big)
	}
	// Another query's pool evicts them again, the least recently used
	// first.
	c.store(other, pool("o2", 10))
	if _, hit := c.lookup(swarm, "s3"); hit {
		t.Fatalf("the swarm of another query stays cached above the bound (%d held)", c.held)
	}
	if _, hit := c.lookup(hive, "h3"); !hit {
		t.Fatal("the hive was evicted though the bound held once the swarm was")
	}
}

// TestFoldKeepsPoolStateThroughWritesWithoutReads: an event that writes a
// pool's summaries without comparing anything with the pool (an injection
// record, an outcome, a quarantine) keeps the fold's state of that pool at
// the pool's new version, so the pool's next submission does not read the
// whole pool again.
func TestFoldKeepsPoolStateThroughWritesWithoutReads(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := New()
	fold := folderOf(t, st, m)
	for i, l := range []string{"retry the flaky network call with backoff", "pin the compiler version in the build image",
		"close the file handle before renaming the output"} {
		conf := 0.8
		tier := ""
		if i == 2 {
			tier = TierHive
		}
		fold("knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: l, Category: "tooling", Confidence: &conf, Tier: tier})
	}
	r := st.Model(ModelName)
	es, err := List(r, ListOptions{Project: "p"})
	if err != nil || len(es) != 3 {
		t.Fatalf("entries: %v, %v", es, err)
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	kept := func(what string) {
		t.Helper()
		for _, scope := range []string{sumScope(TierSwarm, "p"), sumScope(TierHive, "")} {
			v, _, err := r.Get([]byte(poolVersionKey(scope)))
			if err != nil {
				t.Fatal(err)
			}
			if m.folds.at(scope, string(v)) == nil {
				t.Fatalf("after %s: the fold's state of pool %s is not at the pool's version", what, scope)
			}
		}
	}
	kept("the submissions")
	fold("knowledge.injected/v1", &events.KnowledgeInjected{Task: "t", Headroom: 1, Regime: RegimeFull, EntryIDs: ids})
	kept("an injection record")
	fold("knowledge.outcome/v1", &events.KnowledgeOutcome{EntryID: ids[0], Outcome: OutcomeHelpful})
	kept("an outcome")
}

// BenchmarkInjectChangedSet scores a kept set for the first time, as every
// injection does after a change of its pool (an injection record, an
// outcome, an addition) when its view has no ranking index to move yet
// (keptSet.index): each candidate read through its summary.
func BenchmarkInjectChangedSet(b *testing.B) {
	for _, n := range []int{150, 15000} {
		b.Run(fmt.Sprint("N=", n), func(b *testing.B) {
			sums := benchSummaries(n)
			rng := rand.New(rand.NewPCG(uint64(n), 4))
			w := func() string { return benchWords[rng.IntN(len(benchWords))] }
			cfg := DefaultConfig()
			o := InjectOptions{Headroom: 0.9}
			for b.Loop() {
				o.Task = fmt.Sprintf("fix the %s %s when the %s fails", w(), w(), w())
				if inj := injectSet(&keptSet{sums: sums}, o, cfg); len(inj.Entries) == 0 {
					b.Fatal("the injection showed nothing")
				}
			}
		})
	}
}

// TestDerivedIndexMatchesSummaries moves a merged view through random
// changes of a swarm pool (additions, removals, entries saved again with
// other outcomes, confidence or status) and of the hive, and checks that
// every kept set after the first has its ranking index on first use (the
// one before, moved), equal to one built from its summaries, and that its
// injections equal those ranked from the summaries.
func TestDerivedIndexMatchesSummaries(t *testing.T) {
	words := strings.Fields("cache lock retry queue parser timeout token index build deploy config network disk memory thread socket")
	rng := rand.New(rand.NewPCG(5, 11))
	w := func() string { return words[rng.IntN(len(words))] }
	seq := uint64(0)
	vocab := &relVocab{}
	entry := func(tier string) *Entry {
		seq++
		return &Entry{ID: fmt.Sprintf("%s%05d", tier, seq), Tier: tier, Status: StatusCandidate, Scope: "global",
			Category: "debugging", CreatedSeq: seq, Confidence: 0.5 + float64(rng.IntN(5))/10,
			Lesson: fmt.Sprintf("use %s %s with %s when %s fails in %s", w(), w(), w(), w(), w())}
	}
	sum := func(e *Entry) *summary {
		s := summaryOf(e)
		vocab.index([]*summary{s})
		return s
	}
	var hiveEs, swarmEs []*Entry
	for range 40 {
		hiveEs = append(hiveEs, entry(TierHive))
	}
	for range 200 {
		swarmEs = append(swarmEs, entry(TierSwarm))
	}
	hive := make([]*summary, len(hiveEs))
	for i, e := range hiveEs {
		hive[i] = sum(e)
	}
	swarm := make([]*summary, len(swarmEs))
	for i, e := range swarmEs {
		swarm[i] = sum(e)
	}
	c := &poolCache{}
	cfg := DefaultConfig()
	scopes := setOf(cfg.ScopeFilter...)
	version := 0
	pool := func(sums []*summary) *cachedPool {
		version++
		return &cachedPool{version: fmt.Sprint(version), sums: sums, vocab: vocab}
	}
	hp := pool(hive)
	patched := 0 // sets given as the one before with summaries replaced
	for step := range 300 {
		next := slices.Clone(swarm)
		switch r := rng.IntN(10); {
		case r < 3:
			e := entry(TierSwarm)
			swarmEs = append(swarmEs, e)
			next = append(next, sum(e))
		case r < 4:
			i := rng.IntN(len(next))
			next = slices.Delete(next, i, i+1)
		case r < 9:
			// Saved again: shown and helpful counts, confidence, status.
			for range 1 + rng.IntN(5) {
				i := rng.IntN(len(next))
				e := *next[i]
				e.Outcomes.Shown++
				if rng.IntN(3) == 0 {
					e.Outcomes.Helpful++
				}
				if rng.IntN(4) == 0 {
					e.Confidence = 0.3 + float64(rng.IntN(7))/10
				}
				if rng.IntN(8) == 0 {
					e.Status = StatusEstablished
				}
				next[i] = &e
			}
		default:
			hive = slices.Clone(hive)
			i := rng.IntN(len(hive))
			e := *hive[i]
			e.Outcomes.Shown++
			hive[i] = &e
			prev := hp
			hp = pool(hive)
			hp.from = prev
		}
		swarm = next
		ks := c.keptMerged("s/p/", hp, pool(swarm), scopes, cfg.DedupThreshold)
		o := InjectOptions{Task: fmt.Sprintf("fix the %s %s when the %s fails", w(), w(), w()), Headroom: 0.9}
		want := injectSet(&keptSet{sums: ks.list()}, o, cfg)
		if step%20 == 0 {
			// Injections sharing a set use it at once.
			var wg sync.WaitGroup
			got := make([]Injection, 4)
			for g := range got {
				wg.Go(func() { got[g] = injectSet(ks, o, cfg) })
			}
			wg.Wait()
			for _, g := range got {
				if !reflect.DeepEqual(g, want) {
					t.Fatalf("step %d: a concurrent injection through the index differs from the one from summaries:\n%+v\n%+v", step, g, want)
				}
			}
		}
		if ks.patched {
			patched++
			// Read before its flat list is built, then after.
			var at []*summary
			for i := range ks.size() {
				at = append(at, ks.at(i))
			}
			if !slices.Equal(at, ks.list()) || !slices.Equal(ks.list(), buildMerged(hp, pool(swarm), scopes, cfg.DedupThreshold)) {
				t.Fatalf("step %d: a patched kept set reads otherwise than its list, or than a full dedup", step)
			}
		}
		ix := ks.index(cfg.MinRetrievalsForUtility)
		if step > 0 && ix == nil {
			t.Fatalf("step %d: a set following another has no ranking index on first use", step)
		}
		if ix != nil {
			if err := ix.check(ks); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if got := injectSet(ks, o, cfg); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: the injection through the index differs from the one from summaries:\n%+v\n%+v", step, got, want)
		}
	}
	if patched == 0 {
		t.Fatal("no kept set was the one before with summaries replaced")
	}
}

// folderOf folds each event it is given into m on st, alone, in project
// "p", one second and one sequence after the previous one.
func folderOf(t *testing.T, st *projector.Store, m *Model) func(typ string, data events.Payload) {
	seq := uint64(0)
	return func(typ string, data events.Payload) {
		t.Helper()
		seq++
		ev, err := events.New(typ, "p", "test", time.Date(2026, 1, 1, 0, 0, int(seq), 0, time.UTC), data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = seq
		if poison, err := projector.FoldEvents(st, []projector.Model{m}, []*events.Event{ev}); err != nil || len(poison) > 0 {
			t.Fatal(err, poison)
		}
	}
}

// benchWords is the vocabulary of benchSummaries' lessons.
var benchWords = strings.Fields("cache lock retry queue parser timeout token index build deploy config network disk memory thread socket schema query batch shard")

// benchSummaries is n indexed candidate summaries of one swarm pool, their
// lessons drawn from a small shared vocabulary.
func benchSummaries(n int) []*summary {
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	w := func() string { return benchWords[rng.IntN(len(benchWords))] }
	sums := make([]*summary, n)
	for i := range sums {
		sums[i] = summaryOf(&Entry{ID: fmt.Sprintf("e%06d", i), Tier: TierSwarm, Status: StatusCandidate, Scope: "global",
			Category: "debugging", CreatedSeq: uint64(i + 1), Confidence: 0.5 + float64(rng.IntN(5))/10,
			Lesson: fmt.Sprintf("use %s %s with %s when %s fails in %s tests", w(), w(), w(), w(), w())})
	}
	(&relVocab{}).index(sums)
	return sums
}

// TestFoldStatesOfAnotherStoreLeaveTheLiveOnes: one model folds into two
// stores (the live one, and an audit's or a rebuild's) whose pools are at
// other versions; the states the second store's folds put back sit beside
// the first store's, which its next submissions then take instead of
// decoding the pools again, and its answers do not change.
func TestFoldStatesOfAnotherStoreLeaveTheLiveOnes(t *testing.T) {
	open := func() *projector.Store {
		st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	m := New()
	live, other := open(), open()
	foldLive, foldOther := folderOf(t, live, m), folderOf(t, other, m)
	conf := 0.8
	submit := func(fold func(string, events.Payload), lesson, tier string) {
		fold("knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: lesson, Category: "tooling", Confidence: &conf, Tier: tier})
	}
	scopes := []string{sumScope(TierSwarm, "p"), sumScope(TierHive, "")}
	held := func(st *projector.Store, what string) {
		t.Helper()
		r := st.Model(ModelName)
		for _, scope := range scopes {
			v, _, err := r.Get([]byte(poolVersionKey(scope)))
			if err != nil {
				t.Fatal(err)
			}
			if m.folds.at(scope, string(v)) == nil {
				t.Fatalf("%s: no fold state of pool %s at the store's version", what, scope)
			}
		}
	}
	submit(foldLive, "retry the flaky network call with backoff", "")
	submit(foldLive, "pin the compiler version in the build image", TierHive)
	held(live, "after the live store's submissions")
	// The other store folds other lessons into the same pools: other
	// versions of them.
	submit(foldOther, "close the file handle before renaming the output", "")
	submit(foldOther, "vendor the generated protobuf code with its generator version", TierHive)
	held(other, "after the other store's submissions")
	held(live, "after the other store's submissions")
	submit(foldLive, "rotate the log files before the disk fills up", "")
	held(live, "after the live store's next submission")
	// The states the live store folded with answer as its pools do.
	for _, st := range []*projector.Store{live, other} {
		if err := CheckPools(m, st.Model(ModelName), []string{"p"}, []string{"retry the network call with backoff",
			"rotate the log files before the disk fills", "close the file handle"}, 0.6); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoolCacheKeepsTwoVersionsOfAPool: injections from the live store
// and from an audit's view read one pool at two versions; both stay
// cached, the least recently used of three leaves, and the budget evicts
// other versions before the one a query reads.
func TestPoolCacheKeepsTwoVersionsOfAPool(t *testing.T) {
	c := &poolCache{budget: 100}
	pool := func(v string, n int) *cachedPool { return &cachedPool{version: v, bytes: n} }
	swarm, hive := sumScope(TierSwarm, "p"), sumScope(TierHive, "")
	hit := func(scope, v string) bool { _, ok := c.lookup(scope, v); return ok }
	c.store(swarm, pool("live1", 10))
	c.store(swarm, pool("audit", 10))
	if !hit(swarm, "live1") || !hit(swarm, "audit") {
		t.Fatal("two versions of a pool are not both cached")
	}
	// live1 was used last: the next version takes audit's place.
	if !hit(swarm, "live1") {
		t.Fatal("live1 left")
	}
	c.store(swarm, pool("live2", 10))
	if hit(swarm, "audit") || !hit(swarm, "live1") || !hit(swarm, "live2") {
		t.Fatal("the least recently used of three versions did not leave alone")
	}
	if vs := c.versions(swarm); len(vs) != 2 || vs[0].version != "live2" || vs[1].version != "live1" {
		t.Fatalf("versions %v, want live2 then live1", vs)
	}
	if c.held != 20 {
		t.Fatalf("held %d bytes, want 20", c.held)
	}
	// Over the budget: the older version of the swarm goes before the
	// newest one, which the query storing the hive reads with it.
	c.store(hive, pool("h1", 85), swarm)
	if hit(swarm, "live1") || !hit(swarm, "live2") || !hit(hive, "h1") {
		t.Fatalf("over the budget: held %d; live1 %v, live2 %v, h1 %v", c.held, hit(swarm, "live1"), hit(swarm, "live2"), hit(hive, "h1"))
	}
	if c.held != 95 {
		t.Fatalf("held %d bytes, want 95", c.held)
	}
}

// TestFoldStatesOfTheLiveStoreKeepHalfTheBudget: the states the live
// store's folds put are not pushed out by the states of other stores put
// more recently (a rebuild, a run of audits) while they hold at most half
// the budget; either class alone fills the budget, and side by side a
// class over half of it gives way first. Other stores' folds neither take
// nor replace the live store's states.
func TestFoldStatesOfTheLiveStoreKeepHalfTheBudget(t *testing.T) {
	c := &foldPools{budget: 100}
	state := func(v string) *poolState { p := newPoolState(); p.version, p.bytes = v, 20; return p }
	put := func(live bool, vs ...string) {
		for _, v := range vs {
			c.put(map[string]*poolState{"x/" + v: state(v)}, live)
		}
	}
	held := func(vs ...string) []string {
		var out []string
		for _, v := range vs {
			if c.pools[foldKey{"x/" + v, v}] != nil {
				out = append(out, v)
			}
		}
		return out
	}
	check := func(what string, live, others int) {
		t.Helper()
		if c.held > 100 {
			t.Fatalf("%s: %d bytes held, over the budget of 100", what, c.held)
		}
		if c.liveHeld != 20*live || c.held-c.liveHeld != 20*others {
			t.Fatalf("%s: live %d, others %d bytes; want %d and %d", what, c.liveHeld, c.held-c.liveHeld, 20*live, 20*others)
		}
	}
	put(true, "l1", "l2")
	put(false, "o1", "o2", "o3", "o4", "o5", "o6")
	check("two live states, then six others", 2, 3)
	if got := held("l1", "l2"); len(got) != 2 {
		t.Fatalf("the live states held after six others: %v, want l1 and l2", got)
	}
	if got := held("o1", "o2", "o3", "o4", "o5", "o6"); !slices.Equal(got, []string{"o4", "o5", "o6"}) {
		t.Fatalf("the other states held: %v, want the three put last", got)
	}

	// Alone, the live states fill the budget; the others then make them
	// give way only while they hold more than half of it.
	c = &foldPools{budget: 100}
	put(true, "l1", "l2", "l3", "l4", "l5", "l6")
	check("six live states alone", 5, 0)
	if got := held("l1"); len(got) != 0 {
		t.Fatal("the least recently put live state did not leave")
	}
	put(false, "o1", "o2", "o3", "o4", "o5")
	check("then five others", 2, 3)
	if got := held("l5", "l6"); len(got) != 2 {
		t.Fatalf("the live states put last: %v held, want l5 and l6", got)
	}
	// Another store's fold at the live store's version (a rebuild of the
	// same log reaches it) neither takes the live store's state nor
	// replaces it.
	if c.take("x/l6", "l6", false) != nil {
		t.Fatal("another store's fold took the live store's state")
	}
	put(false, "l6")
	check("l6 put by another store", 2, 3)
	if !c.live[foldKey{"x/l6", "l6"}] {
		t.Fatal("l6 is no longer the live store's")
	}
	// The live store takes its own, and another fold's at its version.
	if c.take("x/l6", "l6", true) == nil || c.take("x/o5", "o5", true) == nil {
		t.Fatal("the live store's fold could not take a state at its version")
	}
	check("l6 and o5 taken", 1, 2)
}
