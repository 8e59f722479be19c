package crossloop

import (
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
		return splitItems(arr, per, func(part []json.RawMessage) ([]byte, error) { return json.Marshal(part) })
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
			return withField(probe, "pattern_registry", pl)
		})
	}
	if pr, ok := probe["patterns"]; ok && fileType != "" {
		var arr []json.RawMessage
		if json.Unmarshal(pr, &arr) != nil {
			return nil
		}
		return splitItems(arr, per, func(part []json.RawMessage) ([]byte, error) { return withField(probe, "patterns", part) })
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

// withField encodes the document's fields with key set to v.
func withField(fields map[string]json.RawMessage, key string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, f := range fields {
		out[k] = f
	}
	out[key] = raw
	return json.Marshal(out)
}
