package knowledge

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/projector"
)

// Aging by phase numbers. A sweep ages every entry of its pool that is
// neither archived, promoted nor evergreen; instead of rewriting each of
// them, each pool counts its sweeps (its clock) and an aging entry records
// the clock it was last saved at: its phases_alive is the stored value
// plus the sweeps since. Whether an entry ages depends only on the entry
// and the configuration, both unchanged between two saves of the entry
// (a configuration change re-bases every entry, rebase), so the sum is
// what rewriting it at every sweep gave.
//
// Keys (within the model). NB: must not change: they are stored.
//
//	xc/<pool scope>                         the pool's clock: uvarint sweeps so far
//	xg/<id>                                 the entry's aging record (agingRecord)
//	xd/<pool scope><due, 16 hex>/<id>       the entry is due at the sweep that
//	                                        takes the clock to due (ttl or ttl-todo)
//	xp/<pool scope><seq, 16 hex>/<id>       a swarm entry a lifecycle pass may move
//	xt/<pool scope><time, 16 hex>/<id>      a swarm entry a lifecycle pass may move
//	                                        once the pass's time is at least time
//	                                        (auto_promote_days after its creation)
//
// INVARIANT: every entry has an aging record exactly when it ages, is due,
// or is pending; its index keys are those the record names. A sweep
// changes only the entries due at its clock (the others only age, which
// the clock records) and a lifecycle pass moves only pending entries, so
// both cost what they change plus what is pending, not the pool's size.
const (
	pfxClock   = "xc/"
	pfxAging   = "xg/"
	pfxDue     = "xd/"
	pfxPending = "xp/"
	pfxAgeAt   = "xt/"
)

// agingRecord is what saveEntry derived of an entry for sweeps and passes.
type agingRecord struct {
	aging bool   // the entry ages at every sweep of its pool
	base  uint64 // the pool's clock the stored phases_alive counts to
	due   uint64 // the sweep (clock value) that may archive it; 0: none
	// pending: a lifecycle pass may move it now; ageAt (unix nanoseconds,
	// offset by 1<<63 so the key order is the time order; 0: never): from
	// when on a pass may move it by its age.
	pending bool
	ageAt   uint64
}

func (a agingRecord) empty() bool { return !a.aging && a.due == 0 && !a.pending && a.ageAt == 0 }

func (a agingRecord) encode() []byte {
	var flags byte
	if a.aging {
		flags |= 1
	}
	if a.pending {
		flags |= 2
	}
	b := []byte{flags}
	for _, x := range []uint64{a.base, a.due, a.ageAt} {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

func decodeAging(v []byte) (agingRecord, error) {
	d := sumDecoder[[]byte]{s: v}
	flags := d.byte()
	a := agingRecord{aging: flags&1 != 0, pending: flags&2 != 0, base: d.uvarint(), due: d.uvarint(), ageAt: d.uvarint()}
	if d.bad {
		return agingRecord{}, fmt.Errorf("knowledge: corrupt aging record")
	}
	return a, nil
}

func hex16(x uint64) string { return fmt.Sprintf("%016x", x) }

func (a agingRecord) keys(scope, id string, seq uint64) []string {
	var ks []string
	if a.due != 0 {
		ks = append(ks, pfxDue+scope+hex16(a.due)+"/"+id)
	}
	if a.pending {
		ks = append(ks, pfxPending+scope+hex16(seq)+"/"+id)
	}
	if a.ageAt != 0 {
		ks = append(ks, pfxAgeAt+scope+hex16(a.ageAt)+"/"+id)
	}
	return ks
}

// poolClock reads a pool's clock.
func poolClock(r projector.Reader, scope string) (uint64, error) {
	v, ok, err := r.Get([]byte(pfxClock + scope))
	if err != nil || !ok {
		return 0, err
	}
	c, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, fmt.Errorf("knowledge: corrupt clock of %s", scope)
	}
	return c, nil
}

// materialize sets e.PhasesAlive to its value at the pool's clock.
func materialize(r projector.Reader, e *Entry, clocks map[string]uint64) error {
	v, ok, err := r.Get([]byte(pfxAging + e.ID))
	if err != nil || !ok {
		return err
	}
	a, err := decodeAging(v)
	if err != nil || !a.aging {
		return err
	}
	scope := sumScope(e.Tier, e.Project)
	c, ok := clocks[scope]
	if !ok {
		if c, err = poolClock(r, scope); err != nil {
			return err
		}
		if clocks != nil {
			clocks[scope] = c
		}
	}
	e.PhasesAlive += int(c - a.base)
	return nil
}

// agingOf derives the aging record of e (phases_alive as of clock) under
// cfg.
func agingOf(e *Entry, clock uint64, cfg Config) agingRecord {
	a := agingRecord{base: clock}
	a.aging = e.Status != StatusArchived && e.Status != StatusPromoted && !Evergreen(e, cfg)
	dueIn := func(limit int) uint64 { return clock + uint64(max(1, limit-e.PhasesAlive+1)) }
	if a.aging {
		limit := e.MaxPhases
		if limit <= 0 {
			limit = cfg.DefaultMaxPhases
		}
		a.due = dueIn(limit)
	}
	if e.Category == "todo" && e.Status != StatusPromoted && !Removed(e) {
		var due uint64
		switch {
		case a.aging:
			due = dueIn(cfg.TodoMaxPhases)
		case e.PhasesAlive > cfg.TodoMaxPhases:
			due = clock + 1
		}
		if due != 0 && (a.due == 0 || due < a.due) {
			a.due = due
		}
	}
	if e.Tier == TierSwarm && e.Active() {
		// What AutoPromote and HiveRoute read, apart from the age.
		phases := e.DistinctPhases() >= PromotionPhases
		a.pending = (e.Status == StatusCandidate && phases) || (e.Status == StatusEstablished && phases) ||
			(e.PromotedTo == "" && (e.HiveEligible && phases || e.hasTag(FastTrackTag)))
		if !a.pending && (e.Status == StatusEstablished || e.PromotedTo == "") && !e.CreatedAt.IsZero() {
			a.ageAt = ageAtOf(e.CreatedAt, cfg.AutoPromoteDays)
		}
	}
	if !a.aging {
		a.base = 0
	}
	return a
}

// ageAtOf is the key time from which ageReached(created, now, days)
// holds: any time when the duration is negative or the time is far out of
// range (then every pass looks at the entry, which is never wrong: a pass
// that cannot move an entry leaves it as it is).
func ageAtOf(created time.Time, days int) uint64 {
	d := time.Duration(days) * 24 * time.Hour // as ageReached computes it
	if d < 0 || d > 200*365*24*time.Hour {
		return 1
	}
	at := created.Add(d)
	if y := at.Year(); y < 1700 || y > 2250 {
		return 1
	}
	return max(1, uint64(at.UnixNano())+1<<63)
}

// saveAging writes the aging record of e (saved at its pool's current
// clock) and its index keys, replacing the previous ones.
func saveAging(tx *poolTx, e *Entry) error {
	scope := sumScope(e.Tier, e.Project)
	clock, err := poolClock(tx, scope)
	if err != nil {
		return err
	}
	a := agingOf(e, clock, tx.cfg)
	k := []byte(pfxAging + e.ID)
	old, ok, err := tx.Get(k)
	if err != nil {
		return err
	}
	var oldKeys []string
	if ok {
		prev, err := decodeAging(old)
		if err != nil {
			return err
		}
		if prev == a {
			return nil
		}
		oldKeys = prev.keys(scope, e.ID, e.CreatedSeq)
	}
	newKeys := a.keys(scope, e.ID, e.CreatedSeq)
	for _, o := range oldKeys {
		if !slices.Contains(newKeys, o) {
			if err := tx.Delete([]byte(o)); err != nil {
				return err
			}
		}
	}
	for _, n := range newKeys {
		if !slices.Contains(oldKeys, n) {
			if err := tx.Set([]byte(n), nil); err != nil {
				return err
			}
		}
	}
	if a.empty() {
		if ok {
			return tx.Delete(k)
		}
		return nil
	}
	return tx.Set(k, a.encode())
}

// tick advances a pool's clock by one sweep.
func tick(tx projector.Tx, scope string) (uint64, error) {
	c, err := poolClock(tx, scope)
	if err != nil {
		return 0, err
	}
	c++
	return c, tx.Set([]byte(pfxClock+scope), binary.AppendUvarint(nil, c))
}

// idsUnder lists the ids of index keys under prefix whose 16-hex field
// (just after prefix) is at most upTo, in key order.
func idsUnder(r projector.Reader, prefix string, upTo uint64) ([]string, error) {
	var ids []string
	limit := hex16(upTo)
	err := r.Scan([]byte(prefix), func(k, _ []byte) error {
		rest := string(k[len(prefix):])
		if len(rest) < 17 || rest[:16] > limit {
			return projector.ErrStopScan
		}
		ids = append(ids, rest[17:])
		return nil
	})
	return ids, err
}

// loadSorted loads entries by id (each once) in creation order, the
// order scanEntries lists a pool in.
func loadSorted(r projector.Reader, ids []string) ([]*Entry, error) {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]*Entry, 0, len(ids))
	for _, id := range ids {
		e, ok, err := GetEntry(r, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("knowledge: index names %s without its entry", id)
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *Entry) int {
		if a.CreatedSeq != b.CreatedSeq {
			if a.CreatedSeq < b.CreatedSeq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// dueEntries ticks the pool's clock and returns the entries due at the
// new clock, in creation order, with phases_alive as of the clock before.
func dueEntries(tx *poolTx, scope string) ([]*Entry, error) {
	c, err := poolClock(tx, scope)
	if err != nil {
		return nil, err
	}
	ids, err := idsUnder(tx, pfxDue+scope, c+1)
	if err != nil {
		return nil, err
	}
	es, err := loadSorted(tx, ids)
	if err != nil {
		return nil, err
	}
	if _, err := tick(tx, scope); err != nil {
		return nil, err
	}
	return es, nil
}

// pendingEntries are the active swarm entries of project a lifecycle pass
// at time now may move, in creation order: the pending ones and those old
// enough.
func pendingEntries(r projector.Reader, project string, now time.Time) ([]*Entry, error) {
	scope := sumScope(TierSwarm, project)
	var ids []string
	err := r.Scan([]byte(pfxPending+scope), func(k, _ []byte) error {
		rest := string(k[len(pfxPending)+len(scope):])
		if len(rest) > 17 {
			ids = append(ids, rest[17:])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	aged, err := idsUnder(r, pfxAgeAt+scope, uint64(now.UnixNano())+1<<63)
	if err != nil {
		return nil, err
	}
	return loadSorted(r, append(ids, aged...))
}

// rebase writes every entry again at its pool's clock under cfg (the
// configuration just folded): which entries age, and when they are due or
// pending, depend on it.
func rebase(tx *poolTx) error {
	for _, pfx := range []string{pfxSwarm, pfxHive} {
		var es []*Entry
		clocks := map[string]uint64{}
		err := tx.Scan([]byte(pfx), func(_, v []byte) error {
			var e Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("knowledge: entry: %w", err)
			}
			es = append(es, &e)
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := materialize(tx, e, clocks); err != nil {
				return err
			}
			if err := putJSON(tx, entryKey(e), e); err != nil {
				return err
			}
			if err := saveAging(tx, e); err != nil {
				return err
			}
		}
	}
	return nil
}
