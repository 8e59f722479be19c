//go:build cgo

package node

// storeInGoHeap: with cgo, Pebble allocates its block cache and memtables
// with the C allocator, outside the Go heap and its memory limit.
const storeInGoHeap = false
