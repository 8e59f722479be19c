package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestSimulatePoliciesJSON runs `lore simulate --workload hard --json`
// (both policies by default, on the same seeds) and checks the report's
// shape: means.<policy>.<arm> with the confident-bad precision and the
// share of good strategies found within 20 observations, and every policy
// run on the same workload per seed.
func TestSimulatePoliciesJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight embedded lore nodes")
	}
	code, out, errs := cli(t, context.Background(), "", "simulate", "--workload", "hard", "--seeds", "1,2", "--loops", "3", "--tasks", "6", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Workload string                                           `json:"workload"`
		Means    map[string]map[string]map[string]json.RawMessage `json:"means"`
		Runs     []struct {
			Policy     string            `json:"policy"`
			Arm        string            `json:"arm"`
			Seed       uint64            `json:"seed"`
			Strategies []json.RawMessage `json:"strategies"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range []string{"seed", "evidence"} {
		for _, a := range []string{"unguided", "steered"} {
			m := rep.Means[p][a]
			for _, f := range []string{"mean_iterations", "failed_tasks", "anti_precision", "proven_recall", "confident_bad_precision", "good_found_within_20"} {
				if _, ok := m[f]; !ok {
					t.Errorf("means.%s.%s lacks %s: %v", p, a, f, m)
				}
			}
		}
	}
	if rep.Workload != "hard" || len(rep.Runs) != 8 {
		t.Fatalf("workload %q, %d runs; want hard, 2 seeds × 2 policies × 2 arms", rep.Workload, len(rep.Runs))
	}
	workloads := map[uint64]map[string]bool{}
	for _, r := range rep.Runs {
		var labels []string
		for _, s := range r.Strategies {
			var v struct {
				Label    string  `json:"label"`
				Rate     float64 `json:"rate"`
				LateRate float64 `json:"late_rate"`
			}
			_ = json.Unmarshal(s, &v)
			labels = append(labels, v.Label+":"+strings.TrimSpace(string(must(json.Marshal([]float64{v.Rate, v.LateRate})))))
		}
		if workloads[r.Seed] == nil {
			workloads[r.Seed] = map[string]bool{}
		}
		workloads[r.Seed][strings.Join(labels, ",")] = true
		if len(r.Strategies) != 12 {
			t.Errorf("%s/%s seed %d: %d strategies", r.Policy, r.Arm, r.Seed, len(r.Strategies))
		}
	}
	for seed, w := range workloads {
		if len(w) != 1 {
			t.Errorf("seed %d: the policies and arms ran on %d different workloads", seed, len(w))
		}
	}
	if reflect.DeepEqual(workloads[1], workloads[2]) {
		t.Error("seeds 1 and 2 ran the same workload")
	}
	for _, bad := range [][]string{{"--policy", "bayes"}, {"--workload", "easy"}} {
		if code, _, errs := cli(t, context.Background(), "", append([]string{"simulate"}, bad...)...); code != exitBadInput || !strings.Contains(errs, bad[0]) {
			t.Errorf("%v: exit %d %q", bad, code, errs)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
