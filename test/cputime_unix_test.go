//go:build unix

package test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used so far,
// every thread included (GC workers too): benchmarks report it per event
// next to wall time, which the other work sharing the cores distorts.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
