package learning

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// reconfigure folds learning.configured/v1: the configuration is stored
// (every later event and query uses it) and every criterion and pattern is
// re-evaluated under it at the event's time, announcing the transitions the
// change causes (criterion deprecations, maturity changes, inversions,
// rehabilitations) once, keyed by this event. A changed half-life rebuilds
// the decayed sums from the stored terms (O(terms), once per change).
//
// INVARIANT: a fold step reads the configuration stored before it, so
// every replica and replay folds each event with the same configuration.
func (m *folder) reconfigure(tx projector.Tx, ev *events.Event, d *events.LearningConfigured) error {
	cfg, err := ParseConfig(d.Config)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := tx.Set(configKey, raw); err != nil {
		return err
	}
	old := m.cfg
	m.cfg = cfg
	if err := m.reconfigureCriteria(tx, ev); err != nil {
		return err
	}
	return m.reconfigurePatterns(tx, ev, old)
}

// rebuildSums sums an aggregate's stored terms again with a half-life.
func rebuildSums(tx projector.Reader, prefix []byte, halfLife float64) (DecaySums, error) {
	var s DecaySums
	err := tx.Scan(prefix, func(k, v []byte) error {
		typ, val := parseTerm(v)
		s.Add(termTime(k), typ, val, halfLife)
		return nil
	})
	return s, err
}

func (m *folder) reconfigureCriteria(tx projector.Tx, ev *events.Event) error {
	type item struct {
		proj string
		rec  criterionRec
	}
	var items []item
	err := tx.Scan([]byte{kCriterion, 0}, func(k, v []byte) error {
		var rec criterionRec
		if err := rec.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		items = append(items, item{string(k[2 : len(k)-len(rec.Criterion)-1]), rec})
		return nil
	})
	if err != nil {
		return err
	}
	for _, it := range items {
		rec, proj, changed := it.rec, it.proj, false
		if hl := m.cfg.CriterionHalfLife(rec.Criterion); hl != rec.HalfLifeDays {
			s, err := rebuildSums(tx, termsPrefix(kCriterionT, proj, rec.Criterion), hl)
			if err != nil {
				return err
			}
			rec.Sums, rec.HalfLifeDays, changed = s, hl, true
		}
		dep := ShouldDeprecateCriterion(rec.HelpfulCount, rec.HarmfulCount, m.cfg.Learning)
		if dep != rec.Deprecated {
			changed = true
			if dep {
				t := ev.Time
				rec.DeprecatedAt = &t
				total := rec.HelpfulCount + rec.HarmfulCount
				h, x, _ := rec.Sums.At(maxTime(ev.Time, rec.Sums), rec.HalfLifeDays)
				tx.Emit(projector.Derived{Type: "criterion.deprecated/v1", Project: proj, Subject: rec.Criterion,
					Key: rec.Criterion + ":deprecated:config", Data: &events.CriterionDeprecated{Criterion: rec.Criterion,
						HelpfulCount: rec.HelpfulCount, HarmfulCount: rec.HarmfulCount,
						HarmfulRatio: float64(rec.HarmfulCount) / float64(total), Weight: CriterionWeight(h, x)}})
			}
			rec.Deprecated = dep
		}
		if changed {
			if err := put(tx, key(kCriterion, proj, rec.Criterion), &rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *folder) reconfigurePatterns(tx projector.Tx, ev *events.Event, old Config) error {
	type item struct {
		proj string
		rec  patternRec
	}
	var items []item
	err := tx.Scan([]byte{kPattern, 0}, func(k, v []byte) error {
		var rec patternRec
		if err := rec.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		items = append(items, item{string(k[2 : len(k)-len(rec.Pattern.ID)-1]), rec})
		return nil
	})
	if err != nil {
		return err
	}
	hlChanged := old.Maturity.HalfLifeDays != m.cfg.Maturity.HalfLifeDays
	for _, it := range items {
		rec, proj := it.rec, it.proj
		before, _ := json.Marshal(&rec)
		if hlChanged {
			s, err := rebuildSums(tx, termsPrefix(kPatternT, proj, rec.Pattern.ID), m.cfg.Maturity.HalfLifeDays)
			if err != nil {
				return err
			}
			rec.Sums = s
		}
		at := maxTime(ev.Time, rec.Sums)
		if ShouldInvert(rec.Pattern, m.cfg.AntiPattern) {
			p := rec.Pattern
			inv := InvertToAntiPattern(p, InversionReason(p.FailureCount, p.SuccessCount+p.FailureCount), at, m.cfg.AntiPattern)
			m.invert(tx, proj, &rec, &inv, at)
		}
		m.rehabilitate(tx, proj, &rec, at)
		m.reevaluate(tx, proj, &rec, at, "configuration changed")
		after, _ := json.Marshal(&rec)
		if hlChanged || string(before) != string(after) {
			if err := put(tx, key(kPattern, proj, rec.Pattern.ID), &rec); err != nil {
				return err
			}
		}
	}
	return nil
}
