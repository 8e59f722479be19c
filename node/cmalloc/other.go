//go:build !linux || !cgo

package cmalloc

// Tune does nothing: no glibc allocator to tune.
func Tune() bool { return false }

// Read reports nothing.
func Read() (Stats, bool) { return Stats{}, false }

// Trim does nothing.
func Trim() {}
