// Package schemas holds one JSON Schema (draft 2020-12) per event type and
// version, for the data of the event: "<name>.v<N>.json", for instance
// outcome.recorded.v1.json. envelope.v1.json describes the envelope.
//
// The files are embedded in the binary (lore validates every append with
// them) and published for clients in other languages with
// `lore schemas export DIR`. NB: a published version never changes; a new
// shape is a new version with an upcaster in events/.
package schemas

import "embed"

// FS holds every schema file.
//
//go:embed *.json
var FS embed.FS

// FileName is the schema file of a versioned type: "outcome.recorded/v1" →
// "outcome.recorded.v1.json".
func FileName(typ string) string {
	for i := len(typ) - 1; i >= 0; i-- {
		if typ[i] == '/' {
			return typ[:i] + "." + typ[i+1:] + ".json"
		}
	}
	return typ + ".json"
}
