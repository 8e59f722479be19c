package crossloop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/crossloop"
)

// TestModelWarm: Warm loads a fresh model's posting cache from a read
// model (what a serving node does at its start), so queries after it
// read no term cold (the cache does not grow) and answer as the
// exhaustive ranking; on an empty registry it loads nothing.
func TestModelWarm(t *testing.T) {
	st, err := projector.OpenStore("", projector.StoreOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := st.Model(crossloop.ModelName)
	empty := crossloop.New(crossloop.Config{})
	if err := empty.Warm(r); err != nil || crossloop.CacheBytes(empty.Config()) != 0 {
		t.Fatalf("warm of an empty registry: %v, %d bytes cached", err, crossloop.CacheBytes(empty.Config()))
	}

	f, err := projector.NewFolder(st, []projector.Model{crossloop.New(crossloop.Config{})}, false)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &events.RegistryImported{}
	words := []string{"null", "user", "token", "timeout", "retry", "parser", "config", "cache", "lock", "index"}
	for i := range 300 {
		p := crossloop.Pattern{ID: fmt.Sprintf("pat-error-w-%03d", i), Type: crossloop.TypeError, Title: words[i%10],
			ErrorType: "TypeError", ErrorPattern: fmt.Sprintf("%s %s %s failed", words[i%10], words[i%7], words[i%3]),
			FixDescription: "check " + words[i%9], Successful: i % 4, Failed: 1, FirstDiscovered: at, LastUsed: at}
		p.UsageCount = p.Successful + p.Failed
		p.SuccessRate = float64(p.Successful) / float64(p.UsageCount)
		raw, _ := json.Marshal(p)
		d.Patterns = append(d.Patterns, raw)
	}
	ev, err := events.New("registry.imported/v1", "default", "test", at, d)
	if err != nil {
		t.Fatal(err)
	}
	ev.Seq = 1
	if _, err := f.Fold(ev); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}

	m := crossloop.New(crossloop.Config{}) // a process started on this store
	if err := m.Warm(r); err != nil {
		t.Fatal(err)
	}
	warmed := crossloop.CacheBytes(m.Config())
	if warmed == 0 {
		t.Fatal("Warm cached nothing")
	}
	for i := range 10 {
		req := crossloop.InjectRequest{Task: fmt.Sprintf("fix the %s %s error", words[i], words[(i+3)%10])}
		got, err := crossloop.Rank(context.Background(), r, m.Config(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := crossloop.Rank(context.Background(), r, crossloop.Uncached(m.Config()), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if len(want) == 0 || string(g) != string(w) {
			t.Fatalf("query %d after Warm:\ngot  %s\nwant %s", i, g, w)
		}
	}
	if after := crossloop.CacheBytes(m.Config()); after != warmed {
		t.Fatalf("the cache went from %d to %d bytes over queries after Warm: a term was read cold", warmed, after)
	}
}
