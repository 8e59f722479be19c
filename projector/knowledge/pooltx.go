package knowledge

import (
	"strings"

	"github.com/loredev/lore/projector"
)

// poolTx is the Tx a fold works on: it passes every call to the
// projector's Tx and applies each write under x/ to the pool states it
// holds, so they keep equal to the Tx (poolState's invariant).
type poolTx struct {
	projector.Tx
	cfg   Config // the configuration the event folds under
	pools *foldPools
	live  bool                  // the fold is the live store's (projector.LiveFold)
	held  map[string]*poolState // by summary scope
	// journal records every pool version change (bumpPoolVersion).
	journal *poolJournal
	// reads holds what this event read or wrote, by key: a fold reads
	// some keys many times (a pool's clock and version, an entry's index
	// and aging record, once per save). INVARIANT: reads[k] is what the
	// Tx holds under k: every write of the event goes through the poolTx.
	reads map[string]txValue
}

// txValue is a key's value in the Tx (ok false: absent).
type txValue struct {
	v  []byte
	ok bool
}

func (t *poolTx) Get(key []byte) ([]byte, bool, error) {
	if r, hit := t.reads[string(key)]; hit {
		return r.v, r.ok, nil
	}
	v, ok, err := t.Tx.Get(key)
	if err != nil {
		return nil, false, err
	}
	t.remember(key, v, ok)
	return v, ok, nil
}

func (t *poolTx) remember(key, v []byte, ok bool) {
	if t.reads == nil {
		t.reads = map[string]txValue{}
	}
	t.reads[string(key)] = txValue{v: v, ok: ok}
}

func (t *poolTx) Set(key, value []byte) error {
	if err := t.Tx.Set(key, value); err != nil {
		return err
	}
	t.remember(key, append([]byte(nil), value...), true)
	return t.observe(key, value, false)
}

func (t *poolTx) Delete(key []byte) error {
	if err := t.Tx.Delete(key); err != nil {
		return err
	}
	t.remember(key, nil, false)
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

// setSummary writes the summary s of an entry (enc: s encoded) under key
// and deletes old, the entry's previous summary key ("": none, or key),
// in the same pool; the held pool state takes s as it is instead of
// decoding enc again.
//
// REQUIRES: s equals decodeSummary(enc) in every field the pool state
// reads (summaryOf then heldSummary).
func (t *poolTx) setSummary(key, old string, enc []byte, s *summary) error {
	if err := t.Tx.Set([]byte(key), enc); err != nil {
		return err
	}
	t.remember([]byte(key), enc, true)
	if old != "" && old != key {
		if err := t.Tx.Delete([]byte(old)); err != nil {
			return err
		}
		t.remember([]byte(old), nil, false)
	}
	p := t.held[poolOfSummaryKey(key)]
	if p == nil {
		return nil
	}
	if old == key {
		old = ""
	}
	p.replace(old, key, s, strings.HasPrefix(key, poolVersionKey(poolOfSummaryKey(key))+"/"))
	return nil
}

// pool returns the state of the pool of summary scope scope, as the Tx
// sees it: held already, else taken from foldPools at the Tx's version,
// else read from the Tx.
func (t *poolTx) pool(scope string) (*poolState, error) {
	if p := t.held[scope]; p != nil {
		return p, nil
	}
	v, _, err := t.Get([]byte(poolVersionKey(scope)))
	if err != nil {
		return nil, err
	}
	var p *poolState
	if len(v) == 0 {
		// No version: no summary was ever written in the pool (each write
		// of one bumps its pool's version, bumpPoolVersion), so it is
		// empty: nothing to read.
		p = newPoolState()
	} else if p = t.pools.take(scope, string(v), t.live); p == nil {
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
		t.pools.put(t.held, t.live)
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
	return p.scan(t.Tx, lf, threshold, withInactive)
}

// capVictims are the ids of the entries of the pool of (tier, project) to
// archive so that at most max active ones remain once fresh (saved
// already) joins it: capVictims of the pool as it was before fresh, with
// fresh last (the order enforceCap has always used).
func (t *poolTx) capVictims(tier, project string, fresh *Entry, max int) ([]string, error) {
	p, err := t.pool(sumScope(tier, project))
	if err != nil {
		return nil, err
	}
	var fk *capKey
	if fresh.Active() {
		fk = &capKey{active: true, promoted: fresh.Status == StatusPromoted, signal: ValueSignal(fresh.Outcomes), seq: fresh.CreatedSeq}
	}
	return p.victims(summaryKey(fresh), fk, fresh.ID, max), nil
}
