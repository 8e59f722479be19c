package benchkit

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
)

// PerProject is how many seeded knowledge entries go to one project: the
// swarm store keeps at most swarm_max_entries (100) per project, so k
// entries are spread over ceil(k/100) projects "kb-NNNN".
const PerProject = 100

// patternsPerEvent is how many patterns one registry.imported event carries.
const patternsPerEvent = 500

// KnowledgeProjects is the number of projects k seeded entries occupy.
func KnowledgeProjects(k int) int { return (k + PerProject - 1) / PerProject }

// KnowledgeProject names seeded project i.
func KnowledgeProject(i int) string { return fmt.Sprintf("kb-%04d", i) }

// SeedKnowledge returns k knowledge.submitted events, one lesson each,
// PerProject per project: KnowledgeSeeds collected.
func SeedKnowledge(seed int64, k int) ([]*events.Event, error) {
	return collect(KnowledgeSeeds(seed, k), k)
}

// KnowledgeSeeds streams SeedKnowledge's events one at a time, so a bench
// holds none of them beyond the batch it appends.
func KnowledgeSeeds(seed int64, k int) iter.Seq2[*events.Event, error] {
	return func(yield func(*events.Event, error) bool) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x6b6e))
		for i := range k {
			conf := float64(5+rng.IntN(5)) / 10
			at := Epoch.Add(-time.Duration(k-i) * time.Second)
			ev, err := events.New("knowledge.submitted/v1", KnowledgeProject(i/PerProject), "bench", at,
				&events.KnowledgeSubmitted{Lesson: Lesson(rng), Category: categoriesK[rng.IntN(len(categoriesK))],
					Confidence: &conf, Source: "agent", Tags: []string{word(rng)}})
			if err != nil {
				yield(nil, fmt.Errorf("seed knowledge %d: %w", i, err))
				return
			}
			ev.ID = fmt.Sprintf("kb-%d-%08d", seed, i)
			if !yield(ev, nil) {
				return
			}
		}
	}
}

var categoriesK = []string{"debugging", "testing", "tooling", "architecture", "performance"}

// SeedPatterns returns registry.imported events carrying p error patterns
// of the cross-loop registry, patternsPerEvent per event: PatternSeeds
// collected.
func SeedPatterns(seed int64, p int) ([]*events.Event, error) {
	return collect(PatternSeeds(seed, p), (p+patternsPerEvent-1)/patternsPerEvent)
}

// PatternSeeds streams SeedPatterns's events one at a time.
func PatternSeeds(seed int64, p int) iter.Seq2[*events.Event, error] {
	return func(yield func(*events.Event, error) bool) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x7074))
		at := Epoch.Add(-time.Hour)
		for i := 0; i < p; i += patternsPerEvent {
			d := &events.RegistryImported{Source: "bench"}
			for j := i; j < min(i+patternsPerEvent, p); j++ {
				msg := sentence(rng, 5)
				pat := crossloop.Pattern{ID: fmt.Sprintf("pat-error-bench-%06d", j), Type: crossloop.TypeError,
					Title: "bench " + word(rng), ErrorType: errorNames[rng.IntN(len(errorNames))], ErrorPattern: msg,
					FixDescription: "fix " + sentence(rng, 5), Category: categories[rng.IntN(len(categories))],
					Successful: 3 + rng.IntN(5), UsageCount: 8, FirstDiscovered: at, LastUsed: at}
				pat.Failed = pat.UsageCount - pat.Successful
				pat.SuccessRate = float64(pat.Successful) / float64(pat.UsageCount)
				d.Patterns = append(d.Patterns, json.RawMessage(marshal(pat)))
			}
			ev, err := events.New("registry.imported/v1", events.DefaultProject, "bench", at, d)
			if err != nil {
				yield(nil, fmt.Errorf("seed patterns %d: %w", i, err))
				return
			}
			ev.ID = fmt.Sprintf("pat-%d-%08d", seed, i)
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// collect gathers a stream of events (n: a capacity hint).
func collect(seq iter.Seq2[*events.Event, error], n int) ([]*events.Event, error) {
	out := make([]*events.Event, 0, n)
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// KnowledgeTask and PatternTask are the injection queries of the bench.
func KnowledgeTask(rng *rand.Rand) string {
	return fmt.Sprintf("fix the %s %s timeout in the %s tests", word(rng), word(rng), word(rng))
}

// PatternTask asks the registry for an error pattern.
func PatternTask(rng *rand.Rand) string {
	return fmt.Sprintf("fix %s %s %s in the %s handler", errorNames[rng.IntN(len(errorNames))], word(rng), word(rng), word(rng))
}
