package crossloop

import (
	"sort"

	json "github.com/goccy/go-json"
)

// RegistryPart is a part of a registry document and its number of patterns.
type RegistryPart struct {
	Raw []byte
	N   int
}

// SplitRegistry splits a registry document (or a per-type file: an array,
// or {"patterns": [...]}) into documents of at most per patterns each, in
// the order the import reads them (ParseRegistry), every other field
// kept, with the number of patterns of each. Each pattern's text is kept
// as the file has it, so each part parses into the same patterns. It
// returns nil when the document is not one it splits (an archive inside,
// or not a document it knows) or when one part would do: it is then sent
// whole, and the import's checks report what is wrong with it.
func SplitRegistry(raw []byte, fileType string, per int) []RegistryPart {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		var arr []json.RawMessage
		if fileType == "" || json.Unmarshal(raw, &arr) != nil {
			return nil
		}
		return splitItems(arr, per, func(part []json.RawMessage) ([]byte, error) { return appendArray(nil, part), nil })
	}
	if reg, ok := probe["pattern_registry"]; ok {
		if _, ok := probe["archive"]; ok {
			return nil
		}
		var l Lists
		if json.Unmarshal(reg, &l) != nil {
			return nil
		}
		var items []json.RawMessage
		var types []string
		for _, t := range Types {
			for _, r := range l.ByType(t) {
				items, types = append(items, r), append(types, t)
			}
		}
		at := 0
		return splitItems(items, per, func(part []json.RawMessage) ([]byte, error) {
			var pl Lists
			for _, r := range part {
				pl.add(types[at], r)
				at++
			}
			reg, err := encodeLists(&pl)
			if err != nil {
				return nil, err
			}
			return withFieldRaw(probe, "pattern_registry", reg)
		})
	}
	if pr, ok := probe["patterns"]; ok && fileType != "" {
		var arr []json.RawMessage
		if json.Unmarshal(pr, &arr) != nil {
			return nil
		}
		return splitItems(arr, per, func(part []json.RawMessage) ([]byte, error) {
			return withFieldRaw(probe, "patterns", appendArray(nil, part))
		})
	}
	return nil
}

// splitItems makes a document of each run of per items (nil: one part
// would do, or a part could not be encoded).
func splitItems(items []json.RawMessage, per int, doc func([]json.RawMessage) ([]byte, error)) []RegistryPart {
	if len(items) <= per {
		return nil
	}
	var out []RegistryPart
	for i := 0; i < len(items); i += per {
		part := items[i:min(i+per, len(items))]
		d, err := doc(part)
		if err != nil {
			return nil
		}
		out = append(out, RegistryPart{d, len(part)})
	}
	return out
}

// withFieldRaw is the document's fields with key set to raw, as one JSON
// object (fields in key order). The fields' values are the document's
// own bytes, read by a decoder: valid JSON, copied, not encoded again.
func withFieldRaw(fields map[string]json.RawMessage, key string, raw []byte) ([]byte, error) {
	keys := make([]string, 0, len(fields)+1)
	n := len(raw) + 2
	for k, f := range fields {
		if k != key {
			keys = append(keys, k)
			n += len(k) + len(f) + 4
		}
	}
	keys = append(keys, key)
	sort.Strings(keys)
	out := make([]byte, 0, n+len(key)+4)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(append(out, name...), ':')
		if k == key {
			out = append(out, raw...)
		} else {
			out = append(out, fields[k]...)
		}
	}
	return append(out, '}'), nil
}

// encodeLists is a Lists as a JSON object (the lists it holds, in the
// order of its fields), its items' bytes copied.
func encodeLists(l *Lists) ([]byte, error) {
	out := []byte{'{'}
	for _, f := range []struct {
		name  string
		items []json.RawMessage
	}{{"error_patterns", l.Error}, {"success_patterns", l.Success}, {"anti_patterns", l.Anti}, {"code_templates", l.Template}} {
		if len(f.items) == 0 {
			continue // omitempty
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, '"'), f.name...)
		out = append(out, '"', ':')
		out = appendArray(out, f.items)
	}
	return append(out, '}'), nil
}

// appendArray appends the items as a JSON array.
func appendArray(out []byte, items []json.RawMessage) []byte {
	out = append(out, '[')
	for i, r := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}
