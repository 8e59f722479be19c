package main

import (
	"encoding/json"

	"github.com/loredev/lore/projector/crossloop"
)

// importPart bounds the patterns of one patterns.import request of a long
// import, so that the CLI reports progress between requests. A multiple
// of the command's events (200 patterns each): a file split in parts is
// appended as the same events as in one request when none of its patterns
// was imported before.
const importPart = 2000

// splitRegistry splits a registry document (or a per-type file: an array,
// or {"patterns": [...]}) into documents of at most per patterns each, in
// the order the import reads them (crossloop.ParseRegistry), every other
// field kept, with the number of patterns of each. Each pattern's text is kept as the file has it, so each part
// parses into the same patterns. It returns nil when the document is not
// one it splits (an archive inside, or not a document it knows): it is
// then sent whole, and the command's checks report what is wrong with it.
func splitRegistry(raw []byte, fileType string, per int) []importDoc {
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
		var l crossloop.Lists
		if json.Unmarshal(reg, &l) != nil {
			return nil
		}
		var items []json.RawMessage
		var types []string
		for _, t := range crossloop.Types {
			for _, r := range l.ByType(t) {
				items, types = append(items, r), append(types, t)
			}
		}
		at := 0
		return splitItems(items, per, func(part []json.RawMessage) ([]byte, error) {
			var pl crossloop.Lists
			for _, r := range part {
				switch types[at] {
				case crossloop.TypeError:
					pl.Error = append(pl.Error, r)
				case crossloop.TypeSuccess:
					pl.Success = append(pl.Success, r)
				case crossloop.TypeAnti:
					pl.Anti = append(pl.Anti, r)
				default:
					pl.Template = append(pl.Template, r)
				}
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

// importDoc is a part of a document and its number of patterns.
type importDoc struct {
	raw []byte
	n   int
}

// splitItems makes a document of each run of per items (nil: one part
// would do, or a part could not be encoded).
func splitItems(items []json.RawMessage, per int, doc func([]json.RawMessage) ([]byte, error)) []importDoc {
	if len(items) <= per {
		return nil
	}
	var out []importDoc
	for i := 0; i < len(items); i += per {
		part := items[i:min(i+per, len(items))]
		d, err := doc(part)
		if err != nil {
			return nil
		}
		out = append(out, importDoc{d, len(part)})
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
