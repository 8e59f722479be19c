package crossloop

import (
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// keyConfig holds the configuration set by the last crossloop.configured/v1
// (its document, configDoc); absent: the Model's base.
const keyConfig = "cfg"

// LoadConfig returns the folded configuration, or base when none was set.
// The result shares base's posting cache.
func LoadConfig(r getter, base Config) (Config, error) {
	base.setDefaults()
	raw, ok, err := r.Get([]byte(keyConfig))
	if err != nil || !ok {
		return base, err
	}
	d := base.doc()
	if err := json.Unmarshal(raw, &d); err != nil {
		return base, fmt.Errorf("crossloop: stored config: %w", err)
	}
	return d.config(base.postings), nil
}

// ConfigAt is the configuration in force in the state r reads (the live
// store, or an audit's store at a past time).
func (m *Model) ConfigAt(r Reader) (Config, error) { return LoadConfig(r, m.cfg) }

// configured folds a configuration: the document is checked by ParseConfig
// (the check of every door; a document it refuses is poison) and stored.
// What the configuration decides when a pattern is extracted, merged or
// injected applies from this event on; stored state depending on it is
// re-evaluated here: a new similarity threshold re-lists every pattern's
// signature under the merge keys of that threshold (active and archived
// patterns). No pattern changes state: archiving stays a prune decision
// (registry.pruned/v1) and a restore follows a reinforcement (reconsider).
func (f *folder) configured(d *events.CrossloopConfigured) error {
	c, err := ParseConfig(d.Config)
	if err != nil {
		return fmt.Errorf("%w: field \"data.config\": %v", errPoison, err)
	}
	old := f.cfg()
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := f.tx.Set([]byte(keyConfig), raw); err != nil {
		return err
	}
	c.postings = f.m.cfg.postings
	f.conf = &c
	if old.SimilarityThreshold == c.SimilarityThreshold {
		return nil
	}
	return f.relist(c.SimilarityThreshold)
}

// relist re-indexes every pattern's signature under the merge keys of
// threshold t, in id order (deterministic).
func (f *folder) relist(t float64) error {
	st, err := f.stats()
	if err != nil {
		return err
	}
	var heads []*patternHead
	err = f.tx.Scan([]byte(prefPattern), func(_, v []byte) error {
		var h patternHead
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("decode pattern: %w", err)
		}
		heads = append(heads, &h)
		return nil
	})
	if err != nil {
		return err
	}
	for _, h := range heads {
		if h.Archived {
			if err := unindexArchived(f.tx, h.Type, h.ID, &f.mm); err != nil {
				return err
			}
			if err := indexArchived(f.tx, &h.Pattern, t, &f.mm); err != nil {
				return err
			}
			continue
		}
		if err := indexPattern(f.tx, st, &h.Pattern, t, &f.mm, false); err != nil {
			return err
		}
	}
	return nil
}
