package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for lore when a soak starts it as
// its serving child (`lore bench --soak` runs its own executable).
func TestMain(m *testing.M) {
	if os.Getenv(soakChildEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
