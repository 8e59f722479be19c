package safety_test

import (
	"testing"

	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/safety"
)

// workloadTexts is the free text of n events of the bench's workload
// (errors, outcomes, iterations, lessons, pattern content): the text every
// event's check scans.
func workloadTexts(tb testing.TB, n int) []string {
	tb.Helper()
	g, err := benchkit.Workload{Seed: 7}.Generate(n)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, ev := range g.Events {
		p, err := events.DecodeData(ev)
		if err != nil {
			tb.Fatal(err)
		}
		if r, ok := p.(events.Redactor); ok {
			r.VisitText(func(_, s string) string { out = append(out, s); return s })
		}
	}
	return out
}

// BenchmarkSecretsWorkload is Secrets over the workload's texts (no
// credential among them: the common case of every event's check).
func BenchmarkSecretsWorkload(b *testing.B) {
	texts := workloadTexts(b, 2000)
	if err := safety.RulesError(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		safety.Secrets(texts[i%len(texts)])
		i++
	}
}

// BenchmarkSecretsPrefilter compares, in one run, the scan with the
// rules' derived prefilters (chains) and without: report the ratio of
// the two ns/op.
func BenchmarkSecretsPrefilter(b *testing.B) {
	texts := workloadTexts(b, 2000)
	if err := safety.RulesError(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		scan func(string) []safety.Finding
	}{{"unfiltered", safety.SecretsUnfiltered}, {"prefiltered", safety.Secrets}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.scan(texts[i%len(texts)])
				i++
			}
		})
	}
}
