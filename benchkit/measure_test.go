package benchkit

import (
	"reflect"
	"testing"
	"time"
)

// Runs of events lagging at or above the threshold are reported worst
// first, each from its first event, and no more than asked.
func TestLagEpisodes(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	types := []string{"a", "b", "c", "d", "e", "f", "g"}
	got := lagEpisodes(ms(1, 5, 6, 1, 7, 1, 9), types, 5*time.Millisecond, 2)
	want := []LagEpisode{{Index: 6, Type: "g", Events: 1, MaxUs: 9000}, {Index: 4, Type: "e", Events: 1, MaxUs: 7000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lagEpisodes = %+v, want %+v", got, want)
	}
	got = lagEpisodes(ms(1, 5, 6, 1), types, 5*time.Millisecond, 5)
	want = []LagEpisode{{Index: 1, Type: "b", Events: 2, MaxUs: 6000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lagEpisodes = %+v, want %+v", got, want)
	}
	if got := lagEpisodes(ms(1, 2), types, 0, 5); got != nil {
		t.Fatalf("lagEpisodes without a threshold = %+v, want none", got)
	}
}
