package conformance_test

import (
	"encoding/json"
	"reflect"

	"github.com/loredev/lore/projector/knowledge"
)

// Handlers for swarm_knowledge.json (opencode-swarm knowledge). Departures
// K1–K5 are asserted as lore's values, named in a t.Log.

const skFile = "swarm_knowledge"

func init() {
	register(skFile, "validateLesson", skValidate)
	register(skFile, "normalize", func(t T, c Case) {
		var in struct{ Text string }
		decodeInput(t, c, &in)
		var want string
		mustJSON(t, c.Expected, &want)
		if got := knowledge.Normalize(in.Text); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in.Text, got, want)
		}
	})
	register(skFile, "wordBigrams", func(t T, c Case) {
		var in struct{ Text string }
		decodeInput(t, c, &in)
		var want []string
		mustJSON(t, c.Expected, &want)
		if got := knowledge.WordBigrams(in.Text); !reflect.DeepEqual(got, want) {
			t.Errorf("WordBigrams(%q) = %q, want %q", in.Text, got, want)
		}
	})
	register(skFile, "jaccardBigram(wordBigrams(a), wordBigrams(b))", func(t T, c Case) {
		var in struct{ A, B string }
		decodeInput(t, c, &in)
		var want struct {
			Similarity float64 `json:"similarity"`
			Near       bool    `json:"near_duplicate_at_0_6"`
		}
		mustJSON(t, c.Expected, &want)
		got := knowledge.Similarity(in.A, in.B)
		if got != want.Similarity {
			t.Errorf("Similarity(%q, %q) = %v, want %v", in.A, in.B, got, want.Similarity)
		}
		if n := knowledge.NearDuplicate(in.A, in.B, knowledge.DefaultDedupThreshold); n != want.Near {
			t.Errorf("NearDuplicate = %v, want %v", n, want.Near)
		}
	})
	register(skFile, "jaccardBigram", func(t T, c Case) {
		var in struct{ A, B []string }
		decodeInput(t, c, &in)
		var want float64
		mustJSON(t, c.Expected, &want)
		if got := knowledge.Jaccard(in.A, in.B); got != want {
			t.Errorf("Jaccard = %v, want %v", got, want)
		}
	})
	register(skFile, "computeConfidence", func(t T, c Case) {
		var in struct {
			N    int  `json:"confirmed_by_count"`
			Auto bool `json:"auto_generated"`
		}
		decodeInput(t, c, &in)
		var want float64
		mustJSON(t, c.Expected, &want)
		if got := knowledge.ComputeConfidence(in.N, in.Auto); got != want {
			t.Errorf("ComputeConfidence(%d, %v) = %v, want %v", in.N, in.Auto, got, want)
		}
	})
	register(skFile, "inferTags", func(t T, c Case) {
		var in struct{ Lesson string }
		decodeInput(t, c, &in)
		var want []string
		mustJSON(t, c.Expected, &want)
		if got := knowledge.InferTags(in.Lesson); !reflect.DeepEqual(got, want) {
			t.Errorf("InferTags(%q) = %q, want %q", in.Lesson, got, want)
		}
	})
	register(skFile, "sweepAgedEntries", func(t T, c Case) { skSweep(t, c, false) })
	register(skFile, "sweepStaleTodos", func(t T, c Case) { skSweep(t, c, true) })
	register(skFile, "phaseCompleteSweep(sweepAgedEntries(10) then sweepStaleTodos(3)) x4", skPhaseSweep)
	register(skFile, "enforceKnowledgeCap", skCap)
	register(skFile, "checkHivePromotions(route eligibility)", skRoute)
	register(skFile, "checkHivePromotions(encounter_score)", skEncounter)
	register(skFile, "runAutoPromotion", skAutoPromotion)
	register(skFile, "migrateContextToKnowledge", skMigrate)
	register(skFile, "quarantineEntry+restoreEntry", skQuarantine)
	register(skFile, "restoreEntry(re-validation)", skRestoreRevalidation)
	register(skFile, "KnowledgeConfigSchema.parse({})", func(t T, c Case) {
		// The case's input is the configuration parsed: {} gives the
		// defaults.
		cfg, err := knowledge.ParseConfig(c.Input)
		if err != nil {
			t.Fatalf("ParseConfig(%s): %v", c.Input, err)
		}
		got, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var g, w map[string]any
		mustJSON(t, got, &g)
		mustJSON(t, c.Expected, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("DefaultConfig() =\n%s\nwant\n%s", got, c.Expected)
		}
	})
	register(skFile, "KnowledgeConfigSchema.safeParse", func(t T, c Case) {
		var in struct{ Input json.RawMessage }
		decodeInput(t, c, &in)
		var want struct{ Success bool }
		mustJSON(t, c.Expected, &want)
		_, err := knowledge.ParseConfig(in.Input)
		if (err == nil) != want.Success {
			t.Errorf("ParseConfig(%s): err = %v, want success %v", in.Input, err, want.Success)
		}
	})
}
