package crossloop

import (
	"strings"
	"unicode"
)

// DefaultSimilarityThreshold: patterns of one type whose signatures are
// more than this similar are the same pattern (strictly greater: 0.80 itself
// does not merge).
const DefaultSimilarityThreshold = 0.80

// Normalize lower-cases s, turns every non-word character into a space and
// collapses spaces (the rule of knowledge dedup, SPEC §5).
func Normalize(s string) string {
	return strings.Join(Words(s), " ")
}

// Words are the normalised words of s.
func Words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
	})
}

// Bigrams is the set of word bigrams of s. A one-word text's set holds that
// word, so one-word texts are not all alike; an empty text's set is empty.
func Bigrams(s string) map[string]struct{} {
	w := Words(s)
	out := make(map[string]struct{}, len(w))
	if len(w) == 1 {
		out[w[0]] = struct{}{}
		return out
	}
	for i := 0; i+1 < len(w); i++ {
		out[w[i]+" "+w[i+1]] = struct{}{}
	}
	return out
}

// Jaccard of two sets; both empty → 1.0.
func Jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	return float64(inter) / float64(union)
}

// Similarity is the word-bigram Jaccard similarity of two texts.
func Similarity(a, b string) float64 { return Jaccard(Bigrams(a), Bigrams(b)) }

// ShouldMerge reports whether a similarity merges two patterns: strictly
// above the threshold (">80% similar").
func ShouldMerge(similarity, threshold float64) bool { return similarity > threshold }
