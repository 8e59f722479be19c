package learning

// The fold of pattern observations: single pattern.observed/v1 events and
// the items of pattern.observations/v1, applied by the same code in order.

import (
	"fmt"
	"slices"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// maxTime is the time a fold evaluates an aggregate at: the event's time,
// or the aggregate's newest term when the event is backfilled (an
// aggregate's clock never runs backwards; this keeps the fold O(1)).
func maxTime(t time.Time, s DecaySums) time.Time {
	if s.Terms > 0 && t.UnixMilli() < s.NewestMs {
		return time.UnixMilli(s.NewestMs).UTC()
	}
	return t
}

func (m *folder) loadPattern(tx projector.Tx, proj, id, content string, at time.Time) (patternRec, error) {
	var rec patternRec
	found, err := get(tx, key(kPattern, proj, id), &rec)
	if err != nil {
		return rec, err
	}
	if !found {
		rec = patternRec{
			Pattern: Pattern{ID: id, Content: content, Kind: KindPattern, CreatedAt: at, UpdatedAt: at,
				Tags: []string{}, ExampleBeads: []string{}},
			Maturity:   NewMaturity(id, at),
			StateSince: at, StateReason: "new pattern",
		}
	}
	if rec.Pattern.Content == "" && content != "" {
		rec.Pattern.Content = content
	}
	return rec, nil
}

// single is the item index of an observation that is a whole event
// (pattern.observed/v1); a pattern.observations/v1 item has its own.
const single = -1

// observed folds one observation: the event's own (item single) or item
// item of a pattern.observations/v1.
func (m *folder) observed(tx projector.Tx, ev *events.Event, item int, d *events.PatternObserved) error {
	typ := Harmful
	if d.Success {
		typ = Helpful
	}
	id := d.PatternID
	if id == "" {
		id = patternIDOf(d.Content) // d.AggregateID(), memoized
	}
	return m.observePattern(tx, ev, item, id, d.Content, d.Success, typ, d.BeadID, d.Tags)
}

// observations folds the items of a pattern.observations/v1 in order, each
// as the same observation sent on its own (observePattern). A run of items
// of one pattern loads its record once and stores it once: nothing an
// observation's fold does reads the record from tx, so holding it between
// items of the run changes no result.
func (m *folder) observations(tx projector.Tx, ev *events.Event, d *events.PatternObservations) error {
	proj := projectOf(ev)
	var rec patternRec
	held := "" // the pattern whose record rec holds, not yet stored
	for i := range d.Observations {
		o := &d.Observations[i]
		id := o.PatternID
		if id == "" {
			id = patternIDOf(o.Content) // o.AggregateID(), memoized
		}
		if id != held {
			if held != "" {
				if err := put(tx, key(kPattern, proj, held), &rec); err != nil {
					return err
				}
			}
			var err error
			if rec, err = m.loadPattern(tx, proj, id, o.Content, ev.Time); err != nil {
				return err
			}
			held = id
		} else if rec.Pattern.Content == "" && o.Content != "" {
			rec.Pattern.Content = o.Content // as loadPattern does
		}
		typ := Harmful
		if o.Success {
			typ = Helpful
		}
		if err := m.applyObservation(tx, ev, i, proj, id, &rec, o.Success, typ, o.BeadID, o.Tags); err != nil {
			return err
		}
	}
	if held == "" {
		return nil
	}
	return put(tx, key(kPattern, proj, held), &rec)
}

func (m *folder) observePattern(tx projector.Tx, ev *events.Event, item int, id, content string, success bool, typ FeedbackType, bead string, tags []string) error {
	proj := projectOf(ev)
	rec, err := m.loadPattern(tx, proj, id, content, ev.Time)
	if err != nil {
		return err
	}
	if err := m.applyObservation(tx, ev, item, proj, id, &rec, success, typ, bead, tags); err != nil {
		return err
	}
	return put(tx, key(kPattern, proj, id), &rec)
}

// applyObservation folds one observation into rec, the record of pattern
// id (loaded by loadPattern), writing its term; the caller stores rec.
func (m *folder) applyObservation(tx projector.Tx, ev *events.Event, item int, proj, id string, rec *patternRec, success bool, typ FeedbackType, bead string, tags []string) error {
	for _, t := range tags {
		if !slices.Contains(rec.Pattern.Tags, t) {
			rec.Pattern.Tags = append(rec.Pattern.Tags, t)
		}
	}
	p, inv := RecordObservation(rec.Pattern, success, bead, ev.Time, m.cfg.AntiPattern)
	rec.Pattern = p
	m.invert(tx, proj, rec, inv, ev.Time)
	switch typ {
	case Helpful:
		rec.Maturity.HelpfulCount++
	case Harmful:
		rec.Maturity.HarmfulCount++
	default:
		rec.NeutralCount++
	}
	const weight = 1.0 // one observation's worth of maturity feedback
	rec.Sums.Add(ev.Time, typ, weight, m.cfg.Maturity.HalfLifeDays)
	if typ != Neutral {
		if err := tx.Set(termKey(termsPrefix(kPatternT, proj, id), ev.Time, itemSeq(tx.Seq(), item)), termValue(typ, weight)); err != nil {
			return err
		}
	}
	if ev.Time.After(rec.Maturity.LastValidated) {
		rec.Maturity.LastValidated = ev.Time
	}
	m.rehabilitate(tx, proj, rec, ev.Time)
	m.reevaluate(tx, proj, rec, maxTime(ev.Time, rec.Sums), "feedback")
	return nil
}

// invert applies the seed's inversion (inv non-nil while the rule holds):
// the reason is refreshed, and the first inversion (or the first since a
// rehabilitation) is announced.
func (m *folder) invert(tx projector.Tx, proj string, rec *patternRec, inv *Inversion, at time.Time) {
	if inv == nil {
		return
	}
	rec.AntiReason = inv.Reason
	if rec.Inverted {
		return
	}
	rec.Inverted = true
	t := at
	rec.InvertedAt = &t
	id, p := rec.Pattern.ID, rec.Pattern
	key := id + ":inverted"
	if rec.Rehabilitations > 0 {
		key = fmt.Sprintf("%s:inverted:%d", id, rec.Rehabilitations)
	}
	tx.Emit(projector.Derived{Type: "pattern.inverted/v1", Project: proj, Subject: id, Key: key,
		Data: &events.PatternInverted{PatternID: id, AntiPatternID: inv.Inverted.ID, Content: inv.Inverted.Content,
			Reason: inv.Reason, SuccessCount: p.SuccessCount, FailureCount: p.FailureCount}})
}

// rehabilitate ends an inversion the observations no longer support
// (evidence policy, ShouldRehabilitate) and announces it once.
func (m *folder) rehabilitate(tx projector.Tx, proj string, rec *patternRec, at time.Time) {
	if !rec.Inverted {
		return
	}
	p := rec.Pattern
	h, x, _ := rec.Sums.At(maxTime(at, rec.Sums), m.cfg.Maturity.HalfLifeDays)
	reason, ok := ShouldRehabilitate(p.SuccessCount, p.FailureCount, h, x, m.cfg.AntiPattern, m.cfg.Evidence)
	if !ok {
		return
	}
	rec.Inverted = false
	rec.Rehabilitations++
	t := at
	rec.RehabilitatedAt, rec.RehabReason = &t, reason
	tx.Emit(projector.Derived{Type: "pattern.rehabilitated/v1", Project: proj, Subject: p.ID,
		Key: fmt.Sprintf("%s:rehabilitated:%d", p.ID, rec.Rehabilitations), Data: &events.PatternRehabilitated{
			PatternID: p.ID, AntiPatternID: "anti-" + p.ID, Content: p.Content, Reason: reason,
			SuccessCount: p.SuccessCount, FailureCount: p.FailureCount}})
}

// reevaluate recomputes the effective state at `at` and announces a change
// (once per cause: the key names the pattern and the new state).
func (m *folder) reevaluate(tx projector.Tx, proj string, rec *patternRec, at time.Time, cause string) bool {
	if rec.Maturity.Manual != nil {
		return false // a manual state holds until the next manual event or a reset
	}
	h, x, _ := rec.Sums.At(at, m.cfg.Maturity.HalfLifeDays)
	s := StateFromDecayed(h, x, m.cfg.Maturity)
	if s == rec.Maturity.State {
		return false
	}
	from := rec.Maturity.State
	rec.Maturity.enter(s, at)
	rec.StateSince = at
	rec.StateReason = cause + ": " + ExplainState(h, x, m.cfg.Maturity)
	tx.Emit(projector.Derived{Type: "pattern.maturity_changed/v1", Project: proj, Subject: rec.Pattern.ID,
		Key: rec.Pattern.ID + ":" + string(s), Data: &events.PatternMaturityChanged{PatternID: rec.Pattern.ID,
			Content: rec.Pattern.Content, From: string(from), To: string(s), Reason: rec.StateReason}})
	return true
}
