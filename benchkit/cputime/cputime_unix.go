//go:build unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per operation: on a shared machine it measures the
// work where wall time measures the machine's load.
package cputime

import (
	"syscall"
	"time"
)

// Used is the CPU time (user + system) of the whole process so far.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
