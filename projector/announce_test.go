package projector

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestWindowEnd: the windows that cover a run of announcements hold each
// subject at most once and at most announceWindow messages, keep their
// order, and cover the run with no gap; a subject repeated at once starts
// a window of its own.
func TestWindowEnd(t *testing.T) {
	subjects := func(names ...string) []*nats.Msg {
		msgs := make([]*nats.Msg, len(names))
		for i, n := range names {
			msgs[i] = nats.NewMsg(n)
		}
		return msgs
	}
	long := make([]string, 3*announceWindow+5)
	for i := range long {
		long[i] = fmt.Sprintf("s%d", i%(announceWindow+40))
	}
	for _, c := range []struct {
		names []string
		sizes []int
	}{
		{nil, nil},
		{[]string{"a", "b", "c"}, []int{3}},
		{[]string{"a", "a", "a"}, []int{1, 1, 1}},
		{[]string{"a", "b", "a", "c", "b"}, []int{2, 3}},
		{long, nil},
	} {
		msgs := subjects(c.names...)
		var sizes []int
		for from := 0; from < len(msgs); {
			end := windowEnd(msgs, from)
			if end <= from || end-from > announceWindow {
				t.Fatalf("%v: window [%d, %d)", c.names, from, end)
			}
			seen := map[string]bool{}
			for _, m := range msgs[from:end] {
				if seen[m.Subject] {
					t.Fatalf("window [%d, %d) holds %s twice", from, end, m.Subject)
				}
				seen[m.Subject] = true
			}
			if end < len(msgs) && end-from < announceWindow && !seen[msgs[end].Subject] {
				t.Fatalf("window [%d, %d) ends before %s, a subject it does not hold", from, end, msgs[end].Subject)
			}
			sizes = append(sizes, end-from)
			from = end
		}
		if c.sizes != nil && fmt.Sprint(sizes) != fmt.Sprint(c.sizes) {
			t.Errorf("%v: windows of %v, want %v", c.names, sizes, c.sizes)
		}
	}
}

// TestCausedBefore: only two well-formed cause sequences compare.
func TestCausedBefore(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"3", "10", true}, {"10", "3", false}, {"7", "7", false},
		{"", "7", false}, {"7", "", false}, {"x", "9", false},
	} {
		if got := causedBefore(c.a, c.b); got != c.want {
			t.Errorf("causedBefore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
