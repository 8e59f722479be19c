package ralph

import "github.com/loredev/lore/safety"

// Redact removes secrets from a text before it is recorded; Run applies it
// to every text of every record (task, error, location, fix, diff, files)
// when its Config names no other. It is the appender's own redaction
// (package safety), applied before the text leaves this process.
var Redact = func(s string) string {
	out, _ := safety.Redact(s)
	return out
}
