//go:build unix

package knowledge

import (
	"syscall"
	"time"
)

// cpuUsed is the CPU time (user + system) the process has used.
func cpuUsed() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
