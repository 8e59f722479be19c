//go:build unix

package test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) of the whole process so far:
// on a shared machine it measures a benchmark's work where wall time
// measures the machine's load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
