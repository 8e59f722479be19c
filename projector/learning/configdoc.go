package learning

import (
	"bytes"
	"fmt"
	"sync"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// configAliases are the section names of the reference's Configuration
// Tuning (learningConfig, antiPatternConfig, maturityConfig), accepted in a
// configuration document beside lore's own.
var configAliases = map[string]string{
	"learningConfig":    "learning",
	"antiPatternConfig": "anti_pattern",
	"maturityConfig":    "maturity",
}

// ParseConfig reads a configuration document over the defaults and
// validates it: the one rule every door (API, MCP, CLI, a raw publisher of
// learning.configured/v1, the fold) applies. Keys are those of Config's
// JSON form, or the reference's section names; an unknown key or a value
// out of range is refused, naming it (errors wrap ErrBadInput).
func ParseConfig(raw []byte) (Config, error) {
	cfg := DefaultConfig()
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return cfg, fmt.Errorf("%w: learning config: %v", ErrBadInput, err)
	}
	if probe == nil {
		return cfg, fmt.Errorf("%w: learning config: must be a JSON object", ErrBadInput)
	}
	renamed := false
	for from, to := range configAliases {
		if v, ok := probe[from]; ok {
			if _, dup := probe[to]; dup {
				return cfg, badInput(from, "given twice (also as %q)", to)
			}
			delete(probe, from)
			probe[to] = v
			renamed = true
		}
	}
	if renamed {
		b, err := json.Marshal(probe)
		if err != nil {
			return cfg, fmt.Errorf("learning config: %w", err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%w: learning config: %v", ErrBadInput, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func init() {
	// learning.configured/v1 is refused before append, at every door, by
	// the same rule the fold and the configure endpoint apply.
	events.CheckLearningConfig = func(raw json.RawMessage) error {
		_, err := ParseConfig(raw)
		return err
	}
}

// configKey holds the folded configuration (JSON of Config); absent until
// the first learning.configured/v1, when the model's base applies.
var configKey = []byte{kConfig, 0}

// configCache keeps the last decoded stored configuration, so that a fold
// step or a query decodes it only when it changed.
type configCache struct {
	mu  sync.Mutex
	raw []byte
	cfg Config
}

func (c *configCache) decode(raw []byte) (Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw != nil && bytes.Equal(c.raw, raw) {
		return c.cfg, nil
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("learning: stored config: %w", err)
	}
	c.raw, c.cfg = append([]byte(nil), raw...), cfg
	return cfg, nil
}

// ConfigAt is the configuration in force in the store r reads: the last
// folded learning.configured/v1, else the model's base configuration.
func (m *Model) ConfigAt(r projector.Reader) (Config, error) {
	raw, ok, err := r.Get(configKey)
	if err != nil || !ok {
		return m.cfg, err
	}
	return m.cache.decode(raw)
}

// at is the model with the configuration in force in r, for a query.
func (m *Model) at(r projector.Reader) (*folder, error) {
	cfg, err := m.ConfigAt(r)
	if err != nil {
		return nil, err
	}
	return &folder{cfg: cfg}, nil
}
