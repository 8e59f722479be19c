package sim

import "math/rand/v2"

// Guidance is what lore injects about the strategies: the proven ones,
// the excluded ones (the decomposition prompt's deprecated patterns and
// anti-patterns, both under an AVOID heading) and, among those, the
// anti-patterns (inverted: "AVOID: … Failed F/T times").
type Guidance struct {
	Proven   map[string]bool
	Excluded map[string]bool
	Anti     map[string]bool
	// Tentative are the excluded strategies whose verdict is tentative and
	// ExploreShare the share of decompositions the prompt recommends
	// spending on them (evidence policy; empty and 0 otherwise).
	Tentative    map[string]bool
	ExploreShare float64
}

// Explore is the share of steered choices that ignore proven strategies
// (still skipping excluded ones), so that other strategies keep being tried.
const Explore = 0.2

// ChooseUniform is the unguided arm: every strategy equally likely. It
// draws two numbers like ChooseSteered, so both arms use the same draws for
// the same loop and attempt (common random numbers).
func ChooseUniform(rng *rand.Rand, ss []Strategy) int {
	_, pick := rng.Float64(), rng.Float64()
	return int(pick * float64(len(ss)))
}

// ChooseSteered is the steered arm. It draws two numbers whatever the
// guidance, so the stream of draws does not depend on it. With probability
// 1-Explore it picks a proven strategy (uniformly among them) when lore
// names any; otherwise it picks uniformly among the first non-empty tier of
// candidates: not excluded; else not an anti-pattern (lore deprecates after
// one harmful outcome in three, so it can exclude every strategy, and a
// loop then still follows the stronger AVOID of the anti-patterns); else all.
//
// Under the evidence policy the prompt recommends exploring tentative
// verdicts: with probability ExploreShare (the same first draw, so the
// stream of draws is unchanged) the loop picks uniformly among them.
func ChooseSteered(rng *rand.Rand, ss []Strategy, g Guidance) int {
	explore, pick := rng.Float64(), rng.Float64()
	var proven, allowed, notAnti, all, tentative []int
	for i, s := range ss {
		all = append(all, i)
		if g.Tentative[s.Label] {
			tentative = append(tentative, i)
		}
		if g.Anti[s.Label] {
			continue
		}
		notAnti = append(notAnti, i)
		if g.Excluded[s.Label] {
			continue
		}
		allowed = append(allowed, i)
		if g.Proven[s.Label] {
			proven = append(proven, i)
		}
	}
	from := all
	switch {
	case len(tentative) > 0 && explore < g.ExploreShare:
		from = tentative
	case len(proven) > 0 && explore >= Explore:
		from = proven
	case len(allowed) > 0:
		from = allowed
	case len(notAnti) > 0:
		from = notAnti
	}
	return from[int(pick*float64(len(from)))]
}
