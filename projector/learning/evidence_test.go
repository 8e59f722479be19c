package learning_test

import (
	"math"
	"strings"
	"testing"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// TestWilson: the interval of the example (2 failures in 3: 21–94 %
// failure rate) and its limits.
func TestWilson(t *testing.T) {
	lo, hi := learning.Wilson(1, 3, 0.95)
	if math.Abs(lo-0.0615) > 0.001 || math.Abs(hi-0.7923) > 0.001 {
		t.Errorf("1/3: [%v, %v]", lo, hi)
	}
	if lo, hi := learning.Wilson(0, 0, 0.95); lo != 0 || hi != 1 {
		t.Errorf("no observations: [%v, %v]", lo, hi)
	}
	lo, hi = learning.Wilson(10, 50, 0.95)
	if !(lo > 0.1 && hi < 0.34) {
		t.Errorf("10/50: [%v, %v]", lo, hi)
	}
	e := learning.InversionEvidence(1, 2, learning.DefaultAntiPatternConfig(), 0.95)
	if got := e.FailurePhrase(); got != "67%; 95% interval 21–94%, little evidence, tentative" || !e.Tentative || e.Confident {
		t.Errorf("2/3 inversion: %q %+v", got, e)
	}
	e = learning.InversionEvidence(5, 45, learning.DefaultAntiPatternConfig(), 0.95)
	if e.Tentative || !e.Confident || e.Strength != "strong" {
		t.Errorf("45/50 inversion: %+v", e)
	}
}

// TestRehabilitation: under the evidence policy an inversion made on thin
// evidence ends once the observations show a failure rate below the
// threshold, announced once with its reason; under the seed policy it
// holds. The stored state is the same in a replay of the log.
func TestRehabilitation(t *testing.T) {
	for _, policy := range []string{"seed", "evidence"} {
		s := newSim(t)
		s.must("learning.configured/v1", day(0), configured(t, `{"evidence": {"policy": "`+policy+`"}}`))
		observe(s, "Tests in separate subtask", 1, false, false, true)
		if n := len(s.emitted("pattern.inverted/v1")); n != 1 {
			t.Fatalf("%s: %d inversions", policy, n)
		}
		for i := 0; i < 14; i++ {
			observe(s, "Tests in separate subtask", 2+float64(i)*0.01, true)
		}
		reh := s.emitted("pattern.rehabilitated/v1")
		r := s.store()
		p, _, err := s.m.Pattern(r, events.DefaultProject, "Tests in separate subtask", day(3))
		if err != nil {
			t.Fatal(err)
		}
		switch policy {
		case "seed":
			if len(reh) != 0 || !p.Inverted {
				t.Errorf("seed: rehabilitated %d, inverted %v", len(reh), p.Inverted)
			}
		case "evidence":
			if len(reh) != 1 || p.Inverted || p.Rehabilitations != 1 {
				t.Fatalf("evidence: rehabilitated %d, view %+v", len(reh), p)
			}
			d := reh[0].Data.(*events.PatternRehabilitated)
			if !strings.Contains(d.Reason, "below the inversion threshold 60%") || d.SuccessCount < 6 {
				t.Errorf("reason %q", d.Reason)
			}
			why := strings.Join(p.Why, "\n")
			if !strings.Contains(why, "rehabilitated at") || !strings.Contains(p.RehabReason, "Failed 2/") {
				t.Errorf("why: %s", why)
			}
			// The rehabilitation holds; the seed rule inverts again only
			// when failures are back at the threshold.
			if len(s.emitted("pattern.inverted/v1")) != 1 {
				t.Errorf("inverted again: %+v", s.emitted("pattern.inverted/v1"))
			}
		}
	}
}
