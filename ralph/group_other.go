//go:build !unix

package ralph

import "os/exec"

// ownGroup leaves cmd as it is where there are no process groups: its
// cancellation kills the process (exec.CommandContext's default), and
// children it started may outlive it.
func ownGroup(*exec.Cmd) {}
