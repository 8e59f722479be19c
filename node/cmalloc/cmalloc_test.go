package cmalloc_test

import (
	"runtime"
	"testing"

	"github.com/loredev/lore/node/cmalloc"
)

// Settings the user gave glibc through the environment are left as set.
func TestTuneLeavesTheUsersSettings(t *testing.T) {
	for _, env := range [][2]string{
		{"GLIBC_TUNABLES", "glibc.malloc.arena_max=8"},
		{"GLIBC_TUNABLES", "glibc.rtld.nns=2:glibc.malloc.mmap_threshold=65536"},
		{"MALLOC_ARENA_MAX", "4"},
	} {
		t.Run(env[0]+"="+env[1], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			if cmalloc.Tune() {
				t.Fatalf("Tune changed malloc's settings with %s=%s in the environment", env[0], env[1])
			}
		})
	}
}

// Where the allocator is glibc's, Tune sets it and Read reports it; a
// tunable that is not malloc's does not stop Tune.
func TestTuneAndReadOnGlibc(t *testing.T) {
	if _, ok := cmalloc.Read(); !ok {
		if runtime.GOOS == "linux" && cgoGlibc {
			t.Fatal("Read reports no allocator in a linux cgo build on glibc")
		}
		t.Skip("no glibc allocator in this build")
	}
	t.Setenv("GLIBC_TUNABLES", "glibc.rtld.nns=2")
	if !cmalloc.Tune() {
		t.Fatal("Tune did not set glibc's malloc")
	}
	s, ok := cmalloc.Read()
	if !ok || s.InUse <= 0 || s.Free < 0 {
		t.Fatalf("Read = %+v, %v: want memory in use", s, ok)
	}
}
