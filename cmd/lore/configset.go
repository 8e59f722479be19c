package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/sjson"
)

// applyConfigSets applies `--set key=value` assignments to a configuration
// document (JSON object) and returns the result. A key is a dotted path into
// the document ("maturity.min_feedback"); a value is read as JSON when it is
// valid JSON (numbers, booleans, quoted strings, arrays, objects) and as a
// plain string otherwise. Whether a key exists and a value is in range is
// decided by the configure endpoint every door calls, not here: this only
// builds the document.
func applyConfigSets(doc []byte, sets []string) ([]byte, error) {
	out := doc
	if len(out) == 0 {
		out = []byte("{}")
	}
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("%w: --set %q: want key=value", errBadInput, s)
		}
		var raw json.RawMessage
		if json.Valid([]byte(val)) {
			raw = json.RawMessage(val)
		} else {
			b, _ := json.Marshal(val)
			raw = b
		}
		next, err := sjson.SetRawBytes(out, key, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: --set %q: %v", errBadInput, s, err)
		}
		out = next
	}
	return out, nil
}
