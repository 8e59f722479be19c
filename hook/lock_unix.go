//go:build unix

package hook

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile holds an exclusive lock on path until the returned func runs:
// hook calls of one session that run at once (parallel tool calls) read
// and write its state one after the other.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("session lock: %w", err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
