package crossloop

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidConfig is returned by Config.Validate for an out-of-range value.
var ErrInvalidConfig = errors.New("lore: invalid cross-loop config")

// Config holds the registry's settings (the seed's
// ralph.cross_loop_learning keys). Zero values take the defaults.
type Config struct {
	SimilarityThreshold float64     `json:"similarity_threshold"`
	ExtractTemplates    *bool       `json:"extract_code_templates,omitempty"`
	TopK                int         `json:"top_k_patterns"`
	MaxInjected         int         `json:"max_patterns_injected"`
	MinSuccessRate      float64     `json:"min_success_rate"`
	Include             []string    `json:"include,omitempty"` // types; empty: all
	CandidatePool       int         `json:"candidate_pool"`
	Prune               PrunePolicy `json:"pruning"`

	// postings is the Model's cache of decoded postings (New makes it;
	// copies of the Config share it); nil: every query reads the chunks.
	postings *postingCache
}

func (c *Config) setDefaults() {
	if c.SimilarityThreshold == 0 {
		c.SimilarityThreshold = DefaultSimilarityThreshold
	}
	if c.TopK == 0 {
		c.TopK = 5
	}
	if c.MaxInjected == 0 {
		c.MaxInjected = 10
	}
	if c.MinSuccessRate == 0 {
		c.MinSuccessRate = 0.6
	}
	if c.CandidatePool == 0 {
		c.CandidatePool = 200
	}
	if c.Prune == (PrunePolicy{}) {
		c.Prune = DefaultPrunePolicy()
	}
}

// DefaultConfig returns the defaults: merge > 0.80, top-k 5, at most 10
// injected, min success rate 0.6, prune below 0.5 after 3 uses or unused
// for more than 90 days.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

// Validate reports the first out-of-range value, naming the field.
func (c Config) Validate() error {
	rate := func(name string, v float64) error {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("%w: %s: %v not in [0,1]", ErrInvalidConfig, name, v)
		}
		return nil
	}
	if err := rate("similarity_threshold", c.SimilarityThreshold); err != nil {
		return err
	}
	if err := rate("min_success_rate", c.MinSuccessRate); err != nil {
		return err
	}
	if c.TopK < 0 || c.MaxInjected < 0 || c.CandidatePool < 0 {
		return fmt.Errorf("%w: top_k_patterns, max_patterns_injected and candidate_pool must be >= 0", ErrInvalidConfig)
	}
	for _, t := range c.Include {
		if !ValidType(t) {
			return fmt.Errorf("%w: include: unknown type %q", ErrInvalidConfig, t)
		}
	}
	return nil
}

// Limit is the number of patterns an injection returns: top-k, capped at
// max_patterns_injected (top-k is global across types).
func (c Config) Limit(topK int) int {
	if topK <= 0 {
		topK = c.TopK
	}
	if topK > c.MaxInjected {
		topK = c.MaxInjected
	}
	return topK
}

func (c Config) templates() bool { return c.ExtractTemplates == nil || *c.ExtractTemplates }
