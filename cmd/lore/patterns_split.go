package main

import (
	"github.com/loredev/lore/projector/crossloop"
)

// importPart bounds the patterns of one patterns.import request of a long
// import, so that the CLI reports progress between requests. A multiple
// of the command's events (200 patterns each): a file split in parts is
// appended as the same events as in one request when none of its patterns
// was imported before.
const importPart = 2000

// splitRegistry is crossloop.SplitRegistry: nil when the document is sent
// whole.
func splitRegistry(raw []byte, fileType string, per int) []importDoc {
	var out []importDoc
	for _, p := range crossloop.SplitRegistry(raw, fileType, per) {
		out = append(out, importDoc{p.Raw, p.N})
	}
	return out
}

// importDoc is a part of a document and its number of patterns.
type importDoc struct {
	raw []byte
	n   int
}
