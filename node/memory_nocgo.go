//go:build !cgo

package node

// storeInGoHeap: without cgo, Pebble's block cache and memtables are Go
// memory, under the Go memory limit.
const storeInGoHeap = true
