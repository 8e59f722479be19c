//go:build !unix

package test

import "time"

// processCPU is unknown on this platform: benchmarks report 0.
func processCPU() time.Duration { return 0 }
