package knowledge_test

import (
	"testing"

	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/safety"
)

var benchLessons = []string{
	"Run bun test with --coverage before merging to main",
	"Use rm -rf ./dist only inside the build folder before packaging",
	"Store the API key in OPENAI_API_KEY and read it with os.Getenv, never in code",
	"Retry the deploy after a registry timeout; the second attempt usually succeeds",
}

// BenchmarkValidateLesson is the whole validator on clean lessons.
func BenchmarkValidateLesson(b *testing.B) {
	safety.Redact("warm up the rules")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		knowledge.Validate(benchLessons[i%len(benchLessons)], nil, corpusMeta)
	}
}

// BenchmarkSafetyRules is the part of it the safety package runs
// (commands, instructions, credentials).
func BenchmarkSafetyRules(b *testing.B) {
	safety.Redact("warm up the rules")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s := benchLessons[i%len(benchLessons)]
		safety.Command(s)
		safety.Instruction(s)
		safety.Secrets(s)
	}
}
