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
// returns nil when the document is not one it splits (not a document it
// knows, or one it cannot read) or when one part would do: it is then sent
// whole, and the import's checks report what is wrong with it. A root
// document's archive months are split too: the import reads the
// registry's lists, then each month's (ParseRegistry), and a part holds
// the months its run of patterns reaches, each with its own fields.
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
		return splitRoot(probe, reg, per)
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

// splitRoot splits a root document: its registry's patterns by type, then
// each archive month's by type (the order ParseRegistry reads them).
func splitRoot(probe map[string]json.RawMessage, reg json.RawMessage, per int) []RegistryPart {
	var l Lists
	if json.Unmarshal(reg, &l) != nil {
		return nil
	}
	var months []map[string]json.RawMessage
	if ar, ok := probe["archive"]; ok && json.Unmarshal(ar, &months) != nil {
		return nil
	}
	monthLists := make([]Lists, len(months))
	for k, m := range months {
		if r, ok := m["pattern_registry"]; ok && json.Unmarshal(r, &monthLists[k]) != nil {
			return nil
		}
	}
	// where[i] is item i's month (-1: the registry), types[i] its type.
	var items []json.RawMessage
	var where []int
	var types []string
	add := func(l *Lists, k int) {
		for _, t := range Types {
			for _, r := range l.ByType(t) {
				items, where, types = append(items, r), append(where, k), append(types, t)
			}
		}
	}
	add(&l, -1)
	for k := range monthLists {
		add(&monthLists[k], k)
	}
	at := 0
	return splitItems(items, per, func(part []json.RawMessage) ([]byte, error) {
		var pl Lists
		ml := map[int]*Lists{}
		var order []int
		for _, r := range part {
			switch k := where[at]; {
			case k < 0:
				pl.add(types[at], r)
			default:
				if ml[k] == nil {
					ml[k] = &Lists{}
					order = append(order, k)
				}
				ml[k].add(types[at], r)
			}
			at++
		}
		fields := make(map[string]json.RawMessage, len(probe))
		for k, v := range probe {
			if k != "archive" {
				fields[k] = v
			}
		}
		if len(order) > 0 {
			arr := make([]json.RawMessage, 0, len(order))
			for _, k := range order {
				lists, err := encodeLists(ml[k])
				if err != nil {
					return nil, err
				}
				m, err := withFieldRaw(months[k], "pattern_registry", lists)
				if err != nil {
					return nil, err
				}
				arr = append(arr, m)
			}
			fields["archive"] = appendArray(nil, arr)
		}
		reg, err := encodeLists(&pl)
		if err != nil {
			return nil, err
		}
		return withFieldRaw(fields, "pattern_registry", reg)
	})
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
