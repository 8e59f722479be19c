package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/loredev/lore/app"
)

// BenchmarkPipelineOverhead measures what the pipeline adds to a call
// (strict decoding, defaults, schema check of event data) against the
// handler called directly, in the same run: the ratio is reported.
func BenchmarkPipelineOverhead(b *testing.B) {
	mb := newMemBackend(b)
	p := app.NewPipeline(mb)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e, _ := app.Lookup("learning", "error_context")
	raw := []byte(`{"bead_id":"bd-1","include_resolved":true}`)
	ctx := context.Background()
	var direct, piped time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.Query(ctx, mb.Live(), app.Request{Now: now, Project: "default", Args: raw}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := p.Do(ctx, e, app.Call{Now: &now, Args: raw}); err != nil {
			b.Fatal(err)
		}
		direct, piped = direct+t1.Sub(t0), piped+time.Since(t1)
	}
	b.ReportMetric(float64(piped)/float64(direct), "pipeline/direct")
}
