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

// A trim is due when the free bytes rose by a step above their lowest
// point since the last trim; a trim's leftovers are the new base.
func TestTrimmerDueAfterAStepFreed(t *testing.T) {
	tr := cmalloc.Trimmer{Step: 10}
	steps := []struct {
		free    int64
		due     bool
		trimmed int64 // free bytes after the trim, when due
	}{
		{free: 100, due: false}, // the first look is the base
		{free: 109, due: false},
		{free: 95, due: false}, // reused: a lower base
		{free: 105, due: true, trimmed: 104},
		{free: 110, due: false}, // trimmed chunks stay counted as free
		{free: 114, due: true, trimmed: 114},
		{free: 50, due: false},
		{free: 60, due: true, trimmed: 60},
	}
	for i, s := range steps {
		if got := tr.Due(s.free); got != s.due {
			t.Fatalf("step %d: Due(%d) = %v, want %v", i, s.free, got, s.due)
		}
		if s.due {
			tr.Trimmed(s.trimmed)
		}
	}
}
