package main

import (
	"os"
	"strings"
	"testing"

	"github.com/loredev/lore/events"
)

// TestREADMEListsEveryEventType keeps the README's catalogue in step with
// the registered event types.
func TestREADMEListsEveryEventType(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, k := range events.Kinds() {
		if !strings.Contains(readme, "| `"+k.Type+"` |") {
			t.Errorf("README's catalogue misses %s", k.Type)
		}
	}
}
