package knowledge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loredev/lore/projector"
)

// CheckPools checks the fold's pool states against the store r (whose
// last fold m made): for the hive and each project's pool, the state m
// keeps for the pool's current version (if any) holds exactly the stored
// summaries, and a comparison of each lesson with the pool reads the same
// from the state as from the store (scanPool).
func CheckPools(m *Model, r projector.Reader, projects, lessons []string, threshold float64) error {
	type pool struct{ tier, project string }
	pools := []pool{{TierHive, ""}}
	for _, p := range projects {
		pools = append(pools, pool{TierSwarm, p})
	}
	for _, p := range pools {
		scope := sumScope(p.tier, p.project)
		fresh, err := loadPoolState(r, scope)
		if err != nil {
			return err
		}
		if fresh.version == "" && fresh.size() > 0 {
			// poolTx.pool takes a pool without a version for empty.
			return fmt.Errorf("pool %s: %d summaries and no version", scope, fresh.size())
		}
		states := []*poolState{fresh}
		if held := m.folds.at(scope, fresh.version); held != nil {
			if a, b := dumpState(held), dumpState(fresh); a != b {
				return fmt.Errorf("pool %s: fold state\n%s\nstore\n%s", scope, a, b)
			}
			states = append(states, held)
		}
		// The injections' cached pool at the store's version (replayed
		// from the journal or read) holds exactly the stored summaries.
		if cp, hit := m.cache.lookup(scope, fresh.version); hit {
			stored, err := scanSummaries(r, poolVersionKey(scope)+"/")
			if err != nil {
				return err
			}
			if a, b := dumpSums(cp.sums), dumpSums(stored); a != b {
				return fmt.Errorf("pool %s: cached for injections\n%s\nstore\n%s", scope, a, b)
			}
		}
		for _, l := range lessons {
			lf := featuresOf(l, strings.Fields(l)[:1], "testing")
			for _, withInactive := range []bool{false, true} {
				want, err := scanPool(r, p.tier, p.project, lf, threshold, withInactive)
				if err != nil {
					return err
				}
				for _, st := range states {
					got, err := st.scan(r, lf, threshold, withInactive)
					if err != nil {
						return err
					}
					if a, b := dumpScan(got), dumpScan(want); a != b {
						return fmt.Errorf("pool %s, lesson %q: state scan\n%s\nstore scan\n%s", scope, l, a, b)
					}
				}
				// The cap order against the cap of the scanned pool, with
				// and without one more entry after it.
				for _, capMax := range []int{0, 1, len(want.capKeys) / 2, max(0, len(want.capKeys)-1)} {
					for _, fresh := range []*capKey{nil, {active: true, signal: -0.1, seq: 1 << 62}, {active: true, seq: 1}} {
						keys := want.capKeys
						if fresh != nil {
							keys = append(keys[:len(keys):len(keys)], *fresh)
						}
						var wantIDs []string
						for _, i := range capVictims(keys, capMax) {
							if i == len(want.activeIDs) {
								wantIDs = append(wantIDs, "fresh")
							} else {
								wantIDs = append(wantIDs, want.activeIDs[i])
							}
						}
						for _, st := range states {
							if got := st.victims("", fresh, "fresh", capMax); fmt.Sprint(got) != fmt.Sprint(wantIDs) {
								return fmt.Errorf("pool %s, cap %d: victims %v, want %v", scope, capMax, got, wantIDs)
							}
						}
					}
				}
			}
		}
	}
	return nil
}

func dumpState(p *poolState) string {
	var b strings.Builder
	keys := make([]string, 0, len(p.byKey))
	for k := range p.byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		slot := p.byKey[k]
		if s := p.slots[slot]; s != nil {
			fmt.Fprintf(&b, "%q=%x\n", k, s.encode())
		} else {
			fmt.Fprintf(&b, "%q=inactive %q %x removed=%v\n", k, p.slotID[slot], p.slotHash[slot], p.slotRemoved[slot])
		}
	}
	return b.String()
}

func dumpScan(ps *poolScan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %v %q %v\n", ps.sharedIDs, ps.nearActive, ps.nearInactive, ps.nearAny)
	for _, e := range ps.shared {
		fmt.Fprintf(&b, "%q %q|", e.feat.ctags, e.feat.cnorm)
	}
	return b.String()
}

func dumpSums(sums []*summary) string {
	var b strings.Builder
	for _, s := range sums {
		fmt.Fprintf(&b, "%x\n", s.encode())
	}
	return b.String()
}

// CachedPools is the number of pools and the estimated bytes each of m's
// caches holds: the fold's pool states, then the queries' pools.
func CachedPools(m *Model) (foldPools, foldBytes, queryPools, queryBytes int) {
	m.folds.mu.Lock()
	foldPools, foldBytes = len(m.folds.pools), m.folds.held
	m.folds.mu.Unlock()
	m.cache.mu.Lock()
	for _, vs := range m.cache.pools {
		queryPools += len(vs)
	}
	queryBytes = m.cache.held
	m.cache.mu.Unlock()
	return
}

// at is the pool state foldPools holds for scope at version (nil: none).
func (c *foldPools) at(scope, version string) *poolState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pools[foldKey{scope, version}]
}

// latest is the pool state of scope put most recently (nil: none).
func (c *foldPools) latest(scope string) *poolState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p *poolState
	var at uint64
	for k, s := range c.pools {
		if k.scope == scope && (p == nil || c.used[k] > at) {
			p, at = s, c.used[k]
		}
	}
	return p
}

// ClearTextMemos empties the memos of text features and safety verdicts.
func ClearTextMemos() {
	featureMemo.Lock()
	clear(featureMemo.m)
	featureMemo.Unlock()
	safetyMemo.Lock()
	clear(safetyMemo.m)
	safetyMemo.Unlock()
	recentFeatures.Lock()
	clear(recentFeatures.ring[:])
	recentFeatures.next = 0
	recentFeatures.Unlock()
}
