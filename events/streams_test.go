package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/loredev/lore/events"
)

// TestEnsureStreamsUpdatesAnOlderDerivedStream: a derived stream created
// by an earlier version (direct gets allowed) is updated in place to be
// read through its leader; the log keeps direct gets.
func TestEnsureStreamsUpdatesAnOlderDerivedStream(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	st, err := js.Stream(ctx, events.DerivedStream)
	if err != nil {
		t.Fatal(err)
	}
	old := st.CachedInfo().Config
	old.AllowDirect = true
	if _, err := js.UpdateStream(ctx, old); err != nil {
		t.Fatalf("make the derived stream look like an older one: %v", err)
	}
	if err := events.EnsureStreams(ctx, js, events.StreamOptions{}); err != nil {
		t.Fatalf("ensure streams over an older derived stream: %v", err)
	}
	for name, direct := range map[string]bool{events.DerivedStream: false, events.LogStream: true} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.AllowDirect; got != direct {
			t.Errorf("%s allows direct gets: %v, want %v", name, got, direct)
		}
	}
}

// TestEnsureStreamsReadsMatchingStreams: the configurations the server
// gives back for lore's streams match what lore asks for (so a start
// against existing streams only reads them), and a setting changed behind
// lore's back does not match.
func TestEnsureStreamsReadsMatchingStreams(t *testing.T) {
	js := startJetStream(t)
	ctx := context.Background()
	o := events.StreamOptions{}
	if err := events.EnsureStreams(ctx, js, o); err != nil {
		t.Fatal(err)
	}
	for _, want := range events.StreamConfigs(o) {
		st, err := js.Stream(ctx, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		have := st.CachedInfo().Config
		if !events.StreamConfigMatches(have, want) {
			t.Errorf("%s: the server's configuration does not match lore's:\nhave %+v\nwant %+v", want.Name, have, want)
		}
		changed := have
		changed.Duplicates = have.Duplicates + time.Minute
		if events.StreamConfigMatches(changed, want) {
			t.Errorf("%s: a changed duplicate window matches", want.Name)
		}
	}
}
