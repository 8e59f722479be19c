//go:build !unix

package knowledge

import "time"

// cpuUsed is not measured on this platform.
func cpuUsed() time.Duration { return 0 }
