package sim

import "math/rand/v2"

// Guidance is what lore's decomposition prompt says about the strategies:
// the proven ones and the excluded ones (anti-patterns and deprecated).
type Guidance struct {
	Proven   map[string]bool
	Excluded map[string]bool
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

// ChooseSteered is the steered arm: excluded (AVOID'ed or deprecated)
// strategies are skipped; with probability 1-Explore a proven strategy is
// picked (uniformly among them); otherwise uniformly among the rest. When
// lore excludes everything it is ignored. It always draws two numbers, so
// the stream of draws does not depend on the guidance.
func ChooseSteered(rng *rand.Rand, ss []Strategy, g Guidance) int {
	explore, pick := rng.Float64(), rng.Float64()
	var proven, allowed []int
	for i, s := range ss {
		if g.Excluded[s.Label] {
			continue
		}
		allowed = append(allowed, i)
		if g.Proven[s.Label] {
			proven = append(proven, i)
		}
	}
	from := allowed
	switch {
	case len(allowed) == 0:
		from = make([]int, len(ss))
		for i := range ss {
			from[i] = i
		}
	case len(proven) > 0 && explore >= Explore:
		from = proven
	}
	return from[int(pick*float64(len(from)))]
}
