package knowledge

import (
	"sort"
	"strings"
)

// features are what the rules derive from an entry's text (lesson, tags,
// category), computed once when the entry is stored and kept in its summary
// (summary.go), so that a submission compares with existing entries without
// re-running regexes or normalisations over every one of them.
//
// INVARIANT: every field is a pure function of (lesson, tags, category), and
// each use below gives exactly what the original per-text function gives:
//   - bigrams: the set of WordBigrams(lesson), no duplicates, sorted by
//     (bigramHash, string) with bghash[i] = bigramHash(bigrams[i]) (Jaccard
//     on sorted sets = Jaccard on WordBigrams; hashes make the merge cheap
//     and a collision only costs a string comparison);
//   - ctags: contradictionTags(lesson, tags) as a sorted list;
//   - cnorm: normalizeText(lesson), the words contradiction contexts see;
//   - rel: normalizeText(lesson + " " + tags joined by " " + " " + category),
//     the words Relevance sees.
type features struct {
	bigrams []string
	bghash  []uint64
	ctags   []string
	cnorm   string
	rel     string
}

func featuresOf(lesson string, tags []string, category string) features {
	bg, bh := hashOrder(sortedBigrams(Normalize(lesson)))
	return features{
		bigrams: bg,
		bghash:  bh,
		ctags:   contradictionTagList(lesson, tags),
		cnorm:   normalizeText(lesson),
		rel:     relevanceText(lesson, tags, category),
	}
}

func relevanceText(lesson string, tags []string, category string) string {
	return normalizeText(lesson + " " + strings.Join(tags, " ") + " " + category)
}

// sortedBigrams returns the distinct "w[i] w[i+1]" of normalised text, as
// substrings of it, sorted ascending.
func sortedBigrams(normalized string) []string {
	if normalized == "" {
		return nil
	}
	// Word boundaries: normalized is words joined by single spaces.
	var starts []int
	starts = append(starts, 0)
	for i := 0; i < len(normalized); i++ {
		if normalized[i] == ' ' {
			starts = append(starts, i+1)
		}
	}
	if len(starts) < 2 {
		return nil
	}
	out := make([]string, 0, len(starts)-1)
	for i := 0; i+1 < len(starts); i++ {
		end := len(normalized)
		if i+2 < len(starts) {
			end = starts[i+2] - 1
		}
		out = append(out, normalized[starts[i]:end])
	}
	sort.Strings(out)
	return dedupSorted(out)
}

func dedupSorted(xs []string) []string {
	if len(xs) < 2 {
		return xs
	}
	n := 1
	for i := 1; i < len(xs); i++ {
		if xs[i] != xs[n-1] {
			xs[n] = xs[i]
			n++
		}
	}
	return xs[:n]
}

// bigramHash is 64-bit FNV-1a: stored in summaries, so it must not change
// without a new summary format.
func bigramHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// hashOrder sorts a set by (bigramHash, string) and returns the hashes.
func hashOrder(set []string) ([]string, []uint64) {
	if len(set) == 0 {
		return nil, nil
	}
	type hs struct {
		h uint64
		s string
	}
	xs := make([]hs, len(set))
	for i, s := range set {
		xs[i] = hs{bigramHash(s), s}
	}
	sort.Slice(xs, func(i, j int) bool {
		if xs[i].h != xs[j].h {
			return xs[i].h < xs[j].h
		}
		return xs[i].s < xs[j].s
	})
	out, hashes := make([]string, len(xs)), make([]uint64, len(xs))
	for i, x := range xs {
		out[i], hashes[i] = x.s, x.h
	}
	return out, hashes
}

// jaccardFeatures is Jaccard of two bigram sets in (hash, string) order.
func jaccardFeatures(a, b features) float64 {
	if len(a.bigrams) == 0 && len(b.bigrams) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a.bigrams) && j < len(b.bigrams); {
		switch ha, hb := a.bghash[i], b.bghash[j]; {
		case ha < hb || ha == hb && a.bigrams[i] < b.bigrams[j]:
			i++
		case ha > hb || a.bigrams[i] > b.bigrams[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	return float64(inter) / float64(len(a.bigrams)+len(b.bigrams)-inter)
}

// nearDuplicate is jaccardFeatures(a, b) >= t, comparing strings only
// when the hashes alone allow it.
//
// Equal bigrams have equal hashes, so the count of equal hashes (as
// multisets) is at least the intersection, and the Jaccard of the hashes
// at least that of the bigrams; x/(n−x) grows with x and rounding is
// monotonic, so when the hashes' Jaccard is below t the exact one is too.
// REQUIRES: both sets non-empty.
func nearDuplicate(a, b features, t float64) bool {
	if hashJaccard(a.bghash, b.bghash) < t {
		return false
	}
	return jaccardFeatures(a, b) >= t
}

// hashJaccard is the Jaccard of two sorted lists of bigram hashes (as
// multisets), the bound nearDuplicate and nearArchived check first.
// REQUIRES: both lists non-empty.
func hashJaccard(a, b []uint64) float64 {
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch ha, hb := a[i], b[j]; {
		case ha < hb:
			i++
		case ha > hb:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// jaccardSorted is Jaccard of two sets given as sorted lists without
// duplicates; two empty sets are identical (1.0).
func jaccardSorted(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// sharesSorted reports whether two sorted lists have an element in common.
func sharesSorted(a, b []string) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// contradictionTagList is contradictionTags as a sorted list.
func contradictionTagList(text string, own []string) []string {
	set := contradictionTags(text, own)
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// bigramsOnly keeps a features' bigram set (a scan that needs no
// contradiction check).
func bigramsOnly(f features) features { return features{bigrams: f.bigrams, bghash: f.bghash} }
