package crossloop

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	json "github.com/goccy/go-json"
	yaml "go.yaml.in/yaml/v3"
)

// ErrInvalidConfig is returned for an unknown key or an out-of-range value.
var ErrInvalidConfig = errors.New("lore: invalid cross-loop config")

// Config holds the registry's settings: the seed's ralph.cross_loop_learning
// keys (extraction.*, injection.*) and lore's pruning policy. A
// crossloop.configured/v1 event sets them for every replica (the model
// folds with the configuration in force at each event); New's Config is
// the base used until one. Zero values of a Config built in code take the
// defaults.
type Config struct {
	// extraction.*
	ExtractionEnabled   *bool   // extraction.enabled: nothing is extracted when false
	AutoExtract         *bool   // extraction.auto_extract_on_completion: a completion extracts (else only extract requests do)
	MinRateThreshold    float64 // extraction.min_success_rate_threshold: kept for the seed's files (injection's floor is MinSuccessRate)
	SimilarityThreshold float64 // extraction.similarity_threshold: merge strictly above
	ExtractTemplates    *bool   // extraction.extract_code_templates
	MergeSimilar        *bool   // extraction.merge_similar_patterns: when false only identical signatures merge

	// injection.*
	InjectionEnabled *bool    // injection.enabled: nothing is injected when false
	TopK             int      // injection.top_k_patterns
	MaxInjected      int      // injection.max_patterns_injected
	MinSuccessRate   float64  // injection.min_success_rate
	Include          []string // types (injection.include_*_patterns, include_code_templates); empty: all
	CandidatePool    int      // injection.candidate_pool

	// Prune: pruning.min_success_rate, pruning.max_age_days and
	// extraction.min_usage_count_for_evaluation (the uses before a rate is judged).
	Prune PrunePolicy

	// complete: every field was set (ParseConfig, DefaultConfig): zero
	// values are values, not defaults.
	complete bool

	// postings is the Model's cache of decoded postings (New makes it;
	// copies of the Config share it); nil: every query reads the chunks.
	postings *postingCache
}

func (c *Config) setDefaults() {
	if c.complete {
		return
	}
	t := true
	for _, b := range []**bool{&c.ExtractionEnabled, &c.AutoExtract, &c.ExtractTemplates, &c.MergeSimilar, &c.InjectionEnabled} {
		if *b == nil {
			*b = &t
		}
	}
	if c.MinRateThreshold == 0 {
		c.MinRateThreshold = 0.6
	}
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
	if len(c.Include) == 0 {
		c.Include = []string{TypeError, TypeSuccess, TypeAnti, TypeTemplate}
	}
	if c.CandidatePool == 0 {
		c.CandidatePool = 200
	}
	if c.Prune == (PrunePolicy{}) {
		c.Prune = DefaultPrunePolicy()
	}
	c.complete = true
}

// DefaultConfig returns the defaults: everything enabled, merge > 0.80,
// top-k 5, at most 10 injected, min success rate 0.6, every type
// included, 200 candidates, prune below 0.5 after 3 uses or unused for
// more than 90 days.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

// configDoc is the configuration as a document: the seed's
// ralph.cross_loop_learning block, plus lore's pruning block.
// NB: the JSON names must not change: they are config files and
// crossloop.configured/v1 events.
type configDoc struct {
	Extraction struct {
		Enabled             bool    `json:"enabled"`
		AutoExtract         bool    `json:"auto_extract_on_completion"`
		MinRateThreshold    float64 `json:"min_success_rate_threshold"`
		MinUsageCount       int     `json:"min_usage_count_for_evaluation"`
		ExtractTemplates    bool    `json:"extract_code_templates"`
		MergeSimilar        bool    `json:"merge_similar_patterns"`
		SimilarityThreshold float64 `json:"similarity_threshold"`
	} `json:"extraction"`
	Injection struct {
		Enabled          bool    `json:"enabled"`
		TopK             int     `json:"top_k_patterns"`
		MinSuccessRate   float64 `json:"min_success_rate"`
		MaxInjected      int     `json:"max_patterns_injected"`
		IncludeError     bool    `json:"include_error_patterns"`
		IncludeSuccess   bool    `json:"include_success_patterns"`
		IncludeAnti      bool    `json:"include_anti_patterns"`
		IncludeTemplates bool    `json:"include_code_templates"`
		CandidatePool    int     `json:"candidate_pool"`
	} `json:"injection"`
	Pruning struct {
		MinSuccessRate float64 `json:"min_success_rate"`
		MaxAgeDays     float64 `json:"max_age_days"`
	} `json:"pruning"`
}

func (c Config) doc() configDoc {
	c.setDefaults()
	var d configDoc
	e := &d.Extraction
	e.Enabled, e.AutoExtract, e.MinRateThreshold = *c.ExtractionEnabled, *c.AutoExtract, c.MinRateThreshold
	e.MinUsageCount, e.ExtractTemplates, e.MergeSimilar = c.Prune.MinUsageCount, *c.ExtractTemplates, *c.MergeSimilar
	e.SimilarityThreshold = c.SimilarityThreshold
	i := &d.Injection
	i.Enabled, i.TopK, i.MinSuccessRate, i.MaxInjected, i.CandidatePool = *c.InjectionEnabled, c.TopK, c.MinSuccessRate, c.MaxInjected, c.CandidatePool
	for _, t := range c.Include {
		switch t {
		case TypeError:
			i.IncludeError = true
		case TypeSuccess:
			i.IncludeSuccess = true
		case TypeAnti:
			i.IncludeAnti = true
		case TypeTemplate:
			i.IncludeTemplates = true
		}
	}
	d.Pruning.MinSuccessRate, d.Pruning.MaxAgeDays = c.Prune.MinSuccessRate, c.Prune.MaxAgeDays
	return d
}

func (d *configDoc) config(postings *postingCache) Config {
	e, i := d.Extraction, d.Injection
	b := func(v bool) *bool { return &v }
	c := Config{ExtractionEnabled: b(e.Enabled), AutoExtract: b(e.AutoExtract), MinRateThreshold: e.MinRateThreshold,
		SimilarityThreshold: e.SimilarityThreshold, ExtractTemplates: b(e.ExtractTemplates), MergeSimilar: b(e.MergeSimilar),
		InjectionEnabled: b(i.Enabled), TopK: i.TopK, MaxInjected: i.MaxInjected, MinSuccessRate: i.MinSuccessRate,
		CandidatePool: i.CandidatePool, Include: []string{},
		Prune:    PrunePolicy{MinSuccessRate: d.Pruning.MinSuccessRate, MinUsageCount: e.MinUsageCount, MaxAgeDays: d.Pruning.MaxAgeDays},
		complete: true, postings: postings}
	for _, x := range []struct {
		on  bool
		typ string
	}{{i.IncludeError, TypeError}, {i.IncludeSuccess, TypeSuccess}, {i.IncludeAnti, TypeAnti}, {i.IncludeTemplates, TypeTemplate}} {
		if x.on {
			c.Include = append(c.Include, x.typ)
		}
	}
	return c
}

// MarshalJSON writes the configuration as its document (configDoc).
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.doc()) }

// UnmarshalJSON reads a document with ParseConfig.
func (c *Config) UnmarshalJSON(raw []byte) error {
	p, err := ParseConfig(raw)
	if err != nil {
		return err
	}
	p.postings = c.postings
	*c = p
	return nil
}

// ConfigKeys are the keys of the configuration document, dotted.
func ConfigKeys() []string {
	raw, _ := json.Marshal(DefaultConfig().doc())
	var m map[string]map[string]any
	_ = json.Unmarshal(raw, &m)
	var out []string
	for s, keys := range m {
		for k := range keys {
			out = append(out, s+"."+k)
		}
	}
	sort.Strings(out)
	return out
}

// ParseConfig reads a configuration document over the defaults and
// validates it (a JSON string is read as a file's text, ConfigJSON): the
// block itself ({extraction, injection, pruning}, any
// of them), or a document holding it as cross_loop_learning or
// ralph.cross_loop_learning (the seed's aiwg.yml / .aiwg/config.yml; the
// file's other settings are not lore's and are ignored). An unknown key
// or an out-of-range value is refused, naming it. It is the one check of
// every door (API, MCP, CLI, files) and of the fold.
func ParseConfig(raw []byte) (Config, error) {
	return parseOver(DefaultConfig(), raw)
}

func parseOver(base Config, raw []byte) (Config, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil { // a file's text (YAML or JSON) given as a string
		conv, err := ConfigJSON([]byte(text))
		if err != nil {
			return base, err
		}
		raw = conv
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return base, fmt.Errorf("%w: not a JSON object: %v", ErrInvalidConfig, err)
	}
	block, err := unwrapBlock(top)
	if err != nil {
		return base, err
	}
	var probe map[string]any
	if err := json.Unmarshal(block, &probe); err != nil {
		return base, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := checkKeys(probe); err != nil {
		return base, err
	}
	d := base.doc()
	dec := json.NewDecoder(bytes.NewReader(block))
	if err := dec.Decode(&d); err != nil {
		return base, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	c := d.config(base.postings)
	if err := c.Validate(); err != nil {
		return base, err
	}
	return c, nil
}

// ConfigBlock is the cross_loop_learning block of a configuration file
// (YAML or JSON; ConfigJSON), as JSON: the keys `--set` paths are
// relative to.
func ConfigBlock(raw []byte) ([]byte, error) {
	conv, err := ConfigJSON(raw)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(conv, &top); err != nil {
		return nil, fmt.Errorf("%w: not an object: %v", ErrInvalidConfig, err)
	}
	return unwrapBlock(top)
}

// unwrapBlock finds the cross_loop_learning block of a document.
func unwrapBlock(top map[string]json.RawMessage) ([]byte, error) {
	if r, ok := top["ralph"]; ok {
		var ralph map[string]json.RawMessage
		if err := json.Unmarshal(r, &ralph); err != nil {
			return nil, fmt.Errorf("%w: key \"ralph\": not an object", ErrInvalidConfig)
		}
		b, ok := ralph["cross_loop_learning"]
		if !ok {
			return nil, fmt.Errorf("%w: key \"ralph\" has no cross_loop_learning block", ErrInvalidConfig)
		}
		return b, nil
	}
	if b, ok := top["cross_loop_learning"]; ok {
		if len(top) > 1 {
			for k := range top {
				if k != "cross_loop_learning" {
					return nil, fmt.Errorf("%w: unknown key %q beside cross_loop_learning", ErrInvalidConfig, k)
				}
			}
		}
		return b, nil
	}
	return json.Marshal(top)
}

// checkKeys refuses a key the document does not have, naming it dotted.
func checkKeys(probe map[string]any) error {
	known := map[string]bool{}
	for _, k := range ConfigKeys() {
		known[k] = true
		known[k[:strings.IndexByte(k, '.')]] = true
	}
	secs := make([]string, 0, len(probe))
	for s := range probe {
		secs = append(secs, s)
	}
	sort.Strings(secs)
	for _, s := range secs {
		if !known[s] {
			return fmt.Errorf("%w: unknown key %q (sections: extraction, injection, pruning)", ErrInvalidConfig, s)
		}
		sub, ok := probe[s].(map[string]any)
		if !ok {
			return fmt.Errorf("%w: key %q: want an object", ErrInvalidConfig, s)
		}
		keys := make([]string, 0, len(sub))
		for k := range sub {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !known[s+"."+k] {
				return fmt.Errorf("%w: unknown key %q", ErrInvalidConfig, s+"."+k)
			}
			if err := checkKind(s+"."+k, defaultDoc()[s][k], sub[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// intKeys are the keys whose values are whole numbers.
var intKeys = map[string]bool{"extraction.min_usage_count_for_evaluation": true, "injection.top_k_patterns": true,
	"injection.max_patterns_injected": true, "injection.candidate_pool": true}

// defaultDoc is the default configuration document, decoded.
func defaultDoc() map[string]map[string]any {
	raw, _ := json.Marshal(DefaultConfig().doc())
	var m map[string]map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// checkKind refuses a value of another kind than the key's, naming it.
func checkKind(key string, def, v any) error {
	switch def.(type) {
	case bool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%w: key %q: %v is not true or false", ErrInvalidConfig, key, v)
		}
	case float64:
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%w: key %q: %v is not a number", ErrInvalidConfig, key, v)
		}
		if intKeys[key] && f != math.Trunc(f) {
			return fmt.Errorf("%w: key %q: %v is not a whole number", ErrInvalidConfig, key, v)
		}
	}
	return nil
}

// ConfigJSON converts a configuration file to JSON: JSON as it is, else
// YAML (the seed's aiwg.yml / .aiwg/config.yml), read with go.yaml.in/yaml/v3.
func ConfigJSON(raw []byte) ([]byte, error) {
	if json.Valid(raw) {
		return raw, nil
	}
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: neither JSON nor YAML: %v", ErrInvalidConfig, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return out, nil
}

// Validate reports the first out-of-range value, naming its key.
func (c Config) Validate() error {
	c.setDefaults()
	floats := []struct {
		key    string
		v      float64
		lo, hi float64
		openLo bool
	}{
		{"extraction.min_success_rate_threshold", c.MinRateThreshold, 0, 1, false},
		{"extraction.similarity_threshold", c.SimilarityThreshold, 0, 1, true},
		{"injection.min_success_rate", c.MinSuccessRate, 0, 1, false},
		{"pruning.min_success_rate", c.Prune.MinSuccessRate, 0, 1, false},
		{"pruning.max_age_days", c.Prune.MaxAgeDays, 0, 36500, false},
	}
	for _, x := range floats {
		if math.IsNaN(x.v) || x.v < x.lo || x.v > x.hi || (x.openLo && x.v == x.lo) {
			lo := "["
			if x.openLo {
				lo = "("
			}
			return fmt.Errorf("%w: key %q: %v not in %s%v, %v]", ErrInvalidConfig, x.key, x.v, lo, x.lo, x.hi)
		}
	}
	ints := []struct {
		key    string
		v      int
		lo, hi int
	}{
		{"extraction.min_usage_count_for_evaluation", c.Prune.MinUsageCount, 1, 1000000},
		{"injection.top_k_patterns", c.TopK, 1, 1000},
		{"injection.max_patterns_injected", c.MaxInjected, 1, 1000},
		{"injection.candidate_pool", c.CandidatePool, 1, 100000},
	}
	for _, x := range ints {
		if x.v < x.lo || x.v > x.hi {
			return fmt.Errorf("%w: key %q: %d not in [%d, %d]", ErrInvalidConfig, x.key, x.v, x.lo, x.hi)
		}
	}
	for _, t := range c.Include {
		if !ValidType(t) {
			return fmt.Errorf("%w: include: unknown type %q", ErrInvalidConfig, t)
		}
	}
	return nil
}

// Limit is the number of patterns an injection returns: top-k, capped at
// max_patterns_injected (top-k is global across types); 0 when injection
// is disabled.
func (c Config) Limit(topK int) int {
	c.setDefaults()
	if !*c.InjectionEnabled {
		return 0
	}
	if topK <= 0 {
		topK = c.TopK
	}
	if topK > c.MaxInjected {
		topK = c.MaxInjected
	}
	return topK
}

// Types are the pattern types an injection may return: those asked for
// (all when none) that the configuration includes.
func (c Config) Types(asked []string) []string {
	c.setDefaults()
	out := []string{}
	for _, t := range c.Include {
		if len(asked) == 0 || containsString(asked, t) {
			out = append(out, t)
		}
	}
	return out
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (c Config) templates() bool { c.setDefaults(); return *c.ExtractTemplates }

// extractOn reports whether a completion (auto) or an extract request
// (!auto) extracts.
func (c Config) extractOn(auto bool) bool {
	c.setDefaults()
	return *c.ExtractionEnabled && (!auto || *c.AutoExtract)
}

// mergeSimilar reports whether merges need only similarity above the
// threshold (else identical signatures).
func (c Config) mergeSimilar() bool { c.setDefaults(); return *c.MergeSimilar }
