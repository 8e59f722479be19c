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
	// Serve records of the tests' `lore serve` go to a folder of their own,
	// never the user's.
	rt, err := os.MkdirTemp("", "lore-test-run-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_RUNTIME_DIR", rt)
	// The tests' in-process `lore serve` leaves the test binary's
	// collector as Go sets it (GOGC set: --gc's default does not apply);
	// the tests of --gc give it.
	if os.Getenv("GOGC") == "" {
		os.Setenv("GOGC", "100")
	}
	code := m.Run()
	os.RemoveAll(rt)
	os.Exit(code)
}
