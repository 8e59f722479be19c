package node

import "testing"

// A live checkpoint is due an interval after the last one, or
// catchUpIntervals intervals after it while the projector has a backlog of
// more than an interval behind it.
func TestLiveCheckpointSpacing(t *testing.T) {
	a := &auditCheckpoints{every: 100}
	a.last.Store(1000)
	for _, c := range []struct {
		seq, backlog uint64
		want         bool
	}{
		{1099, 0, false}, {1100, 0, true}, {1100, 100, true},
		{1100, 101, false}, {2599, 5000, false}, {2600, 5000, true},
	} {
		if got := a.liveDue(c.seq, c.backlog); got != c.want {
			t.Errorf("seq %d, backlog %d: due %v, want %v", c.seq, c.backlog, got, c.want)
		}
	}
}
