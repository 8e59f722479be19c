package snapshots_test

import (
	"errors"
	"testing"
	"time"

	"github.com/loredev/lore/snapshots"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func snap(name string, seq uint64, format string, created time.Duration) snapshots.Info {
	return snapshots.Info{Name: name, LastSeq: seq, Format: format, Created: t0.Add(created)}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name        string
		s           snapshots.Info
		first, last uint64
		wantErr     error
	}{
		{"same format inside the log", snap("a", 50, "f1", 0), 1, 100, nil},
		{"snapshot at the log's end", snap("a", 100, "f1", 0), 1, 100, nil},
		{"other format is incompatible", snap("a", 50, "f0", 0), 1, 100, snapshots.ErrIncompatible},
		{"ends just before the first sequence", snap("a", 9, "f1", 0), 10, 100, nil},
		{"gap to the first sequence is stale", snap("a", 8, "f1", 0), 10, 100, snapshots.ErrStale},
		{"ahead of the log is stale", snap("a", 101, "f1", 0), 1, 100, snapshots.ErrStale},
		{"empty log with first 0", snap("a", 0, "f1", 0), 0, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := snapshots.Check(c.s, "f1", c.first, c.last)
			if c.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
		})
	}
}

func TestNewest(t *testing.T) {
	cases := []struct {
		name   string
		ss     []snapshots.Info
		want   string
		wantOK bool
	}{
		{"none stored", nil, "", false},
		{"only other formats", []snapshots.Info{snap("old", 90, "f0", time.Hour)}, "", false},
		{"highest sequence wins", []snapshots.Info{snap("a", 40, "f1", 2*time.Hour), snap("b", 60, "f1", time.Hour)}, "b", true},
		{"tie on sequence: most recent", []snapshots.Info{snap("a", 60, "f1", time.Hour), snap("b", 60, "f1", 2*time.Hour)}, "b", true},
		{"incompatible newer is passed over", []snapshots.Info{snap("new", 99, "f0", 3*time.Hour), snap("ok", 30, "f1", time.Hour)}, "ok", true},
		{"stale is passed over", []snapshots.Info{snap("ahead", 500, "f1", 3*time.Hour), snap("ok", 30, "f1", time.Hour)}, "ok", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := snapshots.Newest(c.ss, "f1", 1, 100)
			if ok != c.wantOK || got.Name != c.want {
				t.Fatalf("Newest = %q, %v; want %q, %v", got.Name, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	var ss []snapshots.Info
	for _, n := range []string{"s3", "s1", "s5", "s2", "s4", "s6", "s7"} {
		ss = append(ss, snap(n, 10, "f1", time.Duration(n[1]-'0')*time.Hour))
	}
	cases := []struct {
		name string
		keep int
		want []string
	}{
		{"keep 5 deletes the two oldest", 5, []string{"s2", "s1"}},
		{"keep more than stored deletes none", 10, nil},
		{"keep all stored deletes none", 7, nil},
		{"keep 0 deletes none", 0, nil},
		{"keep 1 deletes all but the newest", 1, []string{"s6", "s5", "s4", "s3", "s2", "s1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := snapshots.Expired(ss, c.keep)
			if len(got) != len(c.want) {
				t.Fatalf("expired %d snapshots, want %v", len(got), c.want)
			}
			for i := range got {
				if got[i].Name != c.want[i] {
					t.Fatalf("expired[%d] = %s, want %s", i, got[i].Name, c.want[i])
				}
			}
		})
	}
}

func TestObjectNameSortsBySequence(t *testing.T) {
	a := snapshots.ObjectName(9, t0.Add(time.Hour), "lore-b")
	b := snapshots.ObjectName(10, t0, "lore-a")
	if !(a < b) {
		t.Fatalf("%q should sort before %q", a, b)
	}
	if snapshots.ObjectName(10, t0, "lore-a") == snapshots.ObjectName(10, t0, "lore-b") {
		t.Fatal("names of two replicas at the same instant collide")
	}
}
