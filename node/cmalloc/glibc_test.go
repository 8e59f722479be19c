//go:build linux && cgo

package cmalloc_test

import "os"

// cgoGlibc: this linux cgo build's C library is glibc (its loader is on
// the machine).
var cgoGlibc = func() bool {
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}()
