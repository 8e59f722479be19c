//go:build !linux || !cgo

package cmalloc_test

var cgoGlibc = false
