package ralph

import (
	"strings"
	"testing"
)

// The default redaction is the appender's: a credential in an agent's output
// never leaves the process, while ordinary text is kept as it is.
func TestDefaultRedactRemovesCredentials(t *testing.T) {
	token := "ghp_" + "R8kq2Zt7VbN4xWm1PcYd6HsLa3Gf9Ej0Tu5o"
	out := Redact("push failed: remote rejected token " + token + " for repo")
	if strings.Contains(out, token) || !strings.Contains(out, "[REDACTED:") {
		t.Fatalf("credential kept: %q", out)
	}
	plain := "FAIL TestRetry (0.01s): retry.go:42: want 3 attempts, got 2"
	if got := Redact(plain); got != plain {
		t.Fatalf("plain text changed: %q", got)
	}
}
