//go:build unix

package node

import (
	"io/fs"
	"syscall"
)

// FileIdentity names the file at path by its device and inode, so that
// hard links to one file (a checkpoint's links to the live store's tables)
// are one file.
func FileIdentity(path string, fi fs.FileInfo) FileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return FileID{path: path}
}
