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

// An episode's counts are the work begun between the last sample at or
// before its first event's append less its worst lag and the first sample
// at or after its last event's commit, and the most store work running in
// those samples (not in the ones outside them); an episode the samples do
// not surround counts nothing.
func TestLagEpisodeActivity(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []activity{
		{at: at(0), running: 3},
		{at: at(10), flushes: 1},
		{at: at(20), flushes: 1, checkpoints: 1, gcs: 2, running: 1},
		{at: at(30), flushes: 2, checkpoints: 1, compactions: 1, gcs: 2, running: 2},
		{at: at(40), flushes: 3, checkpoints: 2, compactions: 1, gcs: 3},
	}
	acked := []time.Time{at(5), at(12), at(14), at(33), at(45)}
	lags := []time.Duration{time.Millisecond, 3 * time.Millisecond, 12 * time.Millisecond, 2 * time.Millisecond, time.Millisecond}
	eps := []LagEpisode{
		{Index: 1, Events: 2, MaxUs: 1000},  // from 11 ms (sample at 10) to 26 ms (sample at 30)
		{Index: 3, Events: 1, MaxUs: 2000},  // from 31 ms (30) to 35 ms (40)
		{Index: 3, Events: 1, MaxUs: 15000}, // from 18 ms (10) to 35 ms (40)
		{Index: 4, Events: 1, MaxUs: 1000},  // to 46 ms: no sample at or after it
	}
	during(eps, acked, lags, samples)
	want := []LagEpisode{
		{Index: 1, Events: 2, MaxUs: 1000, Checkpoints: 1, Flushes: 1, Compactions: 1, GCs: 2, StoreWork: 2},
		{Index: 3, Events: 1, MaxUs: 2000, Checkpoints: 1, Flushes: 1, GCs: 1, StoreWork: 2},
		{Index: 3, Events: 1, MaxUs: 15000, Checkpoints: 2, Flushes: 2, Compactions: 1, GCs: 3, StoreWork: 2},
		{Index: 4, Events: 1, MaxUs: 1000},
	}
	if !reflect.DeepEqual(eps, want) {
		t.Fatalf("during = %+v, want %+v", eps, want)
	}
}

// An episode's waits are the worst of its events' (ack to delivery,
// delivery to commit), an event without a recorded delivery counting for
// neither; its fsync is the slowest of the commits made within it (from
// its first event's ack less its worst lag to its last event's commit),
// not of those outside it.
func TestLagEpisodeStages(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	seqs := []uint64{11, 12, 13, 14}
	acked := []time.Time{at(10), at(11), at(12), at(40)}
	lags := []time.Duration{20 * time.Millisecond, 19 * time.Millisecond, 18 * time.Millisecond, 2 * time.Millisecond}
	st := &stageLog{}
	st.start()
	st.delivered[11], st.delivered[12] = at(12), at(25) // 13: not recorded
	st.delivered[14] = at(41)
	commits := &commitLog{seq: []uint64{10, 13, 14}, at: []time.Time{at(-15), at(30), at(42)}}
	st.durable[10], st.durable[13], st.durable[14] = at(29), at(37), at(50)
	eps := []LagEpisode{{Index: 0, Events: 3, MaxUs: 20000}, {Index: 3, Events: 1, MaxUs: 2000}}
	stagesOf(eps, seqs, acked, lags, st, commits)
	if e := eps[0]; e.DeliveryUs != 14000 || e.FoldCommitUs != 18000 || e.FsyncUs != 7000 {
		t.Errorf("first episode: delivery %v, fold and commit %v, fsync %v µs; want 14000, 18000, 7000", e.DeliveryUs, e.FoldCommitUs, e.FsyncUs)
	}
	if e := eps[1]; e.DeliveryUs != 1000 || e.FoldCommitUs != 1000 || e.FsyncUs != 8000 {
		t.Errorf("second episode: delivery %v, fold and commit %v, fsync %v µs; want 1000, 1000, 8000", e.DeliveryUs, e.FoldCommitUs, e.FsyncUs)
	}
}

// The longest wait for a core is the lower bound of the highest bucket
// that gained a count between the two samples; none gained, or samples
// without the histogram, give 0.
func TestSchedWait(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-3, 1e-2, 1}
	if got := schedWaitUs([]uint64{5, 2, 1, 0}, []uint64{9, 2, 3, 0}, buckets); got != 1000 {
		t.Errorf("schedWaitUs = %v µs, want 1000 (the 1 ms bucket gained)", got)
	}
	if got := schedWaitUs([]uint64{5, 2, 1, 1}, []uint64{5, 2, 1, 1}, buckets); got != 0 {
		t.Errorf("schedWaitUs with nothing gained = %v, want 0", got)
	}
	if got := schedWaitUs(nil, nil, nil); got != 0 {
		t.Errorf("schedWaitUs without samples = %v, want 0", got)
	}
}
