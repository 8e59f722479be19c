package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveData starts `lore serve` on a temp data folder and returns the
// --data flags of the commands talking to it.
func serveData(t *testing.T) []string {
	t.Helper()
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0")
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
		served <- code
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-served:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(data, urlFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not write its URL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return []string{"--data", data}
}

// aiwgConfig is a .aiwg/config.yml as the seed writes it, with settings of
// other tools beside lore's block.
const aiwgConfig = `# In aiwg.yml or .aiwg/config.yml
project:
  name: web
ralph:
  max_iterations: 10
  cross_loop_learning:
    extraction:
      enabled: true
      auto_extract_on_completion: true
      min_success_rate_threshold: 0.6
      min_usage_count_for_evaluation: 5
      extract_code_templates: false
      merge_similar_patterns: true
      similarity_threshold: 0.85
    injection:
      enabled: true
      top_k_patterns: 3
      min_success_rate: 0.7
      max_patterns_injected: 10
      include_error_patterns: true
      include_success_patterns: true
      include_anti_patterns: false
      include_code_templates: true
`

type clConfig struct {
	Extraction map[string]any `json:"extraction"`
	Injection  map[string]any `json:"injection"`
	Pruning    map[string]any `json:"pruning"`
}

// TestCLIPatternsConfig: `lore patterns config` shows the defaults, sets
// the seed's YAML file, changes keys with --set over the configuration in
// force, refuses an unknown key and an out-of-range value naming them
// (exit 2), and answers --as-of with the configuration in force then.
func TestCLIPatternsConfig(t *testing.T) {
	d := serveData(t)
	bg := context.Background()
	get := func(extra ...string) clConfig {
		t.Helper()
		code, out, errs := cli(t, bg, "", append(append(d, "--json", "patterns", "config"), extra...)...)
		if code != 0 {
			t.Fatalf("config: exit %d: %s", code, errs)
		}
		var c clConfig
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("config %q: %v", out, err)
		}
		return c
	}
	if c := get(); c.Injection["top_k_patterns"] != 5.0 || c.Extraction["similarity_threshold"] != 0.8 || c.Pruning["max_age_days"] != 90.0 {
		t.Fatalf("defaults: %+v", c)
	}
	before := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte(aiwgConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, bg, "", append(d, "patterns", "config", "--file", file)...); code != 0 || !strings.Contains(out, "injection.top_k_patterns = 3") {
		t.Fatalf("--file: exit %d, %q %q", code, out, errs)
	}
	c := get()
	if c.Injection["top_k_patterns"] != 3.0 || c.Extraction["similarity_threshold"] != 0.85 || c.Injection["include_anti_patterns"] != false ||
		c.Extraction["min_usage_count_for_evaluation"] != 5.0 || c.Extraction["extract_code_templates"] != false {
		t.Fatalf("after --file: %+v", c)
	}
	time.Sleep(10 * time.Millisecond)
	mid := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	if code, _, errs := cli(t, bg, "", append(d, "patterns", "config", "--set", "injection.top_k_patterns=4", "--set", "pruning.max_age_days=30")...); code != 0 {
		t.Fatalf("--set: exit %d: %s", code, errs)
	}
	c = get()
	if c.Injection["top_k_patterns"] != 4.0 || c.Pruning["max_age_days"] != 30.0 || c.Extraction["similarity_threshold"] != 0.85 {
		t.Fatalf("--set keeps the rest of the configuration in force: %+v", c)
	}
	for _, bad := range []struct{ set, name string }{
		{"injection.top_k=4", `"injection.top_k"`},
		{"extraction.similarity_threshold=1.5", `"extraction.similarity_threshold"`},
		{"injection.top_k_patterns=0", `"injection.top_k_patterns"`},
		{"cache.size=1", `"cache"`},
	} {
		code, _, errs := cli(t, bg, "", append(d, "patterns", "config", "--set", bad.set)...)
		if code != 2 || !strings.Contains(errs, bad.name) {
			t.Errorf("--set %s: exit %d, %q; want 2 naming %s", bad.set, code, errs, bad.name)
		}
	}
	if c := get(); c.Injection["top_k_patterns"] != 4.0 {
		t.Errorf("a refused change changed the configuration: %+v", c)
	}
	if c := get("--as-of", before.Format(time.RFC3339Nano)); c.Injection["top_k_patterns"] != 5.0 || c.Extraction["similarity_threshold"] != 0.8 {
		t.Errorf("--as-of before any change: %+v, want the defaults", c)
	}
	if c := get("--as-of", mid.Format(time.RFC3339Nano)); c.Injection["top_k_patterns"] != 3.0 || c.Pruning["max_age_days"] != 90.0 {
		t.Errorf("--as-of between the file and --set: %+v, want the file's", c)
	}
}
