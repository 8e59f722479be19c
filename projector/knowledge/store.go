package knowledge

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Key layout of the read model. NB: must not change: it is stored.
//
//	cfg                         the folded Config (knowledge.configured/v1)
//	s/<project token>/<id>      swarm entry (JSON Entry)
//	h/<id>                      hive entry
//	i/<id>                      index: id → entry key and summary key (indexValue)
//	x/...                       entry summaries (summary.go) and pool
//	                            versions (poolcache.go)
//	r/<id>                      rejected record (JSON Rejected)
//	d/<event id>                the decision on a submission (decision.go)
//	m/<id>                      where the id of a merged submission went
//	phase/<project token>/<n>   completed phases (one sweep per phase)
const (
	keyConfig = "cfg"
	pfxSwarm  = "s/"
	pfxHive   = "h/"
	pfxIndex  = "i/"
	pfxReject = "r/"
	pfxPhase  = "phase/"
)

func swarmPrefix(project string) string { return pfxSwarm + events.EncodeToken(project) + "/" }

func entryKey(e *Entry) string {
	if e.Tier == TierHive {
		return pfxHive + e.ID
	}
	return swarmPrefix(e.Project) + e.ID
}

// LoadConfig returns the folded configuration, or base when none was set.
func LoadConfig(r projector.Reader, base Config) (Config, error) {
	raw, ok, err := r.Get([]byte(keyConfig))
	if err != nil || !ok {
		return base, err
	}
	// The decoder fills a slice in place when it has room: decode into a
	// copy of base's own (a shared base, such as a Model's, is read by
	// concurrent folds and must come out unchanged).
	cfg := base
	cfg.ScopeFilter = slices.Clone(base.ScopeFilter)
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return base, fmt.Errorf("knowledge: stored config: %w", err)
	}
	return cfg, nil
}

// GetEntry loads an entry by exact id.
func GetEntry(r projector.Reader, id string) (*Entry, bool, error) {
	iv, ok, err := r.Get([]byte(pfxIndex + id))
	if err != nil || !ok {
		return nil, false, err
	}
	k, _, err := parseIndex(iv)
	if err != nil {
		return nil, false, fmt.Errorf("knowledge: index of %s: %w", id, err)
	}
	raw, ok, err := r.Get([]byte(k))
	if err != nil || !ok {
		return nil, false, err
	}
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, false, fmt.Errorf("knowledge: entry %s: %w", id, err)
	}
	if err := materialize(r, &e, nil); err != nil {
		return nil, false, err
	}
	return &e, true, nil
}

// ResolveID finds the ids starting with prefix (at most limit of them).
func ResolveID(r projector.Reader, prefix string, limit int) ([]string, error) {
	var out []string
	err := r.Scan([]byte(pfxIndex+prefix), func(k, _ []byte) error {
		out = append(out, string(k[len(pfxIndex):]))
		if len(out) >= limit {
			return projector.ErrStopScan
		}
		return nil
	})
	return out, err
}

// scanEntries decodes the entries under prefix, phases_alive as of their
// pools' clocks (aging.go).
func scanEntries(r projector.Reader, prefix string) ([]*Entry, error) {
	var out []*Entry
	err := r.Scan([]byte(prefix), func(_, v []byte) error {
		var e Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("knowledge: entry: %w", err)
		}
		out = append(out, &e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	clocks := map[string]uint64{}
	for _, e := range out {
		if err := materialize(r, e, clocks); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedSeq < out[j].CreatedSeq })
	return out, err
}

// SwarmEntries returns every swarm entry of a project (all statuses) in
// creation order.
func SwarmEntries(r projector.Reader, project string) ([]*Entry, error) {
	return scanEntries(r, swarmPrefix(project))
}

// AllSwarmEntries returns the swarm entries of every project.
func AllSwarmEntries(r projector.Reader) ([]*Entry, error) { return scanEntries(r, pfxSwarm) }

// HiveEntries returns every hive entry in creation order.
func HiveEntries(r projector.Reader) ([]*Entry, error) { return scanEntries(r, pfxHive) }

// RejectedRecords returns the rejected read model, oldest first.
func RejectedRecords(r projector.Reader) ([]*Rejected, error) {
	var out []*Rejected
	err := r.Scan([]byte(pfxReject), func(_, v []byte) error {
		var x Rejected
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("knowledge: rejected: %w", err)
		}
		out = append(out, &x)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].ID < out[j].ID
	})
	return out, err
}

func has(r projector.Reader, key string) (bool, error) {
	_, ok, err := r.Get([]byte(key))
	return ok, err
}

// IDTaken reports whether id is the id of a stored entry or of a rejected
// submission, exactly (never as a prefix): a submission that would create
// an entry of that id decides nothing new (the fold reports it existing),
// so a door need not send it.
func IDTaken(r projector.Reader, id string) (bool, error) {
	for _, k := range []string{pfxIndex + id, pfxReject + id} {
		if ok, err := has(r, k); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func putJSON(tx projector.Tx, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("knowledge: encode %s: %w", key, err)
	}
	return tx.Set([]byte(key), b)
}

// indexValue is the value of i/<id>: uvarint length of the entry key, the
// entry key, then the summary key.
func indexValue(entryKey, sumKey string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(entryKey)))
	return append(append(b, entryKey...), sumKey...)
}

func parseIndex(v []byte) (entryKey, sumKey string, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return "", "", errSummary
	}
	return string(v[w : w+int(n)]), string(v[w+int(n):]), nil
}

// saveEntry stores e (phases_alive as of its pool's clock), its summary,
// its index and its aging record, and advances the version of the
// summary's pool (poolVersion).
//
// INVARIANT: after saveEntry the summary under summaryKey(e) describes e
// and no other summary of e exists (a status change moves it between
// a/ and i/); every summary write is chained into its pool's version.
func saveEntry(tx *poolTx, e *Entry) error {
	k := entryKey(e)
	if err := putJSON(tx, k, e); err != nil {
		return err
	}
	if err := saveAging(tx, e); err != nil {
		return err
	}
	sk := summaryKey(e)
	s := summaryOf(e)
	enc := s.encode()
	cur, ok, err := tx.Get([]byte(pfxIndex + e.ID))
	if err != nil {
		return err
	}
	var ck, csk string
	if ok {
		if ck, csk, err = parseIndex(cur); err != nil {
			return fmt.Errorf("knowledge: index of %s: %w", e.ID, err)
		}
	}
	for _, k := range []string{sk, csk} {
		if k != "" {
			if err := tx.follow(poolOfSummaryKey(k)); err != nil {
				return err
			}
		}
	}
	deleted := ""
	if ok && csk != sk && csk != "" {
		deleted = csk
	}
	pool := sumScope(e.Tier, e.Project)
	if deleted != "" && poolOfSummaryKey(deleted) != pool {
		if err := tx.setSummary(sk, "", enc, s.asDecoded()); err != nil {
			return err
		}
		if err := tx.Delete([]byte(deleted)); err != nil {
			return err
		}
	} else if err := tx.setSummary(sk, deleted, enc, s.asDecoded()); err != nil {
		return err
	}
	if deleted != "" && poolOfSummaryKey(deleted) != pool {
		// Not reached while an entry keeps its tier and project; chained
		// all the same so that no write escapes a version.
		if err := bumpPoolVersion(tx, tx.journal, poolOfSummaryKey(deleted), "", nil, deleted); err != nil {
			return err
		}
		deleted = ""
	}
	if err := bumpPoolVersion(tx, tx.journal, pool, sk, enc, deleted); err != nil {
		return err
	}
	if ok && ck == k && csk == sk {
		return nil
	}
	return tx.Set([]byte(pfxIndex+e.ID), indexValue(k, sk))
}

func existingOf(es []*Entry, skip string) ([]Existing, []*Entry) {
	var ex []Existing
	var ref []*Entry
	for _, e := range es {
		if e.Active() && e.ID != skip {
			ex = append(ex, Existing{Text: e.Lesson, Tags: e.Tags})
			ref = append(ref, e)
		}
	}
	return ex, ref
}

// follow has the fold keep the state of the pool of summary scope scope
// (foldpool.go) equal to the Tx from now on, when foldPools holds it at
// the Tx's version, before the fold writes one of its summaries.
//
// An event that writes a pool without reading it (an injection record, an
// outcome, a quarantine) otherwise moved the pool to a version no state is
// kept at, and the pool's next submission decoded the whole pool again: a
// cost that grows with the pool on every knowledge.add after an injection.
func (t *poolTx) follow(scope string) error {
	if t.held[scope] != nil || t.pools == nil {
		return nil
	}
	v, _, err := t.Get([]byte(poolVersionKey(scope)))
	if err != nil || len(v) == 0 {
		return err
	}
	p := t.pools.take(scope, string(v), t.live)
	if p == nil {
		return nil
	}
	if t.held == nil {
		t.held = map[string]*poolState{}
	}
	t.held[scope] = p
	return nil
}
