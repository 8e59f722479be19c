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
//   - bigrams: the set of WordBigrams(lesson), sorted ascending, no
//     duplicates (Jaccard on sorted sets = Jaccard on WordBigrams);
//   - ctags: contradictionTags(lesson, tags) as a sorted list;
//   - cnorm: normalizeText(lesson), the words contradiction contexts see;
//   - rel: normalizeText(lesson + " " + tags joined by " " + " " + category),
//     the words Relevance sees.
type features struct {
	bigrams []string
	ctags   []string
	cnorm   string
	rel     string
}

func featuresOf(lesson string, tags []string, category string) features {
	return features{
		bigrams: sortedBigrams(Normalize(lesson)),
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
