package knowledge

import (
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// Fragments that exercise the literals, their case and Unicode folds
// ("ſ" folds to s, the Kelvin sign to k), spacing, control and invisible
// characters.
var fragments = []string{
	"rm", " -rf", "sudo", " ", "  ", "\t", "\n", "mkfs", "dd if=", ":()", "{", "chmod", " -R ", "0777", "777",
	"deltree", "rmdir", " /s", "format", "kill", " -9", "pkill", "killall", "`", "$(", ")", "disable", "firewall",
	"turn off", "security", "skip", "bypass", "auth", "ignore", "certificate", "tls", "ssl", "no", "validation",
	"2fa", "remove", "password", "\x01", "\x7f", "\r", "\u00ad", "\u200b", "\u2062", "\ufeff", "System", "SYSTEM",
	"ſystem", ":", "<script", "<SCRIPT", "<ſcript", "JavaScript:", "eval(", "EVAL(", "__proto__", "constructor[",
	".prototype[", "-----BEGIN RSA PRIVATE KEY-----", "AKIA", "ASIA", "ABCDEFGHIJKLMNOP", "ghp_", "github_pat_",
	"xoxb-", "eyJ", "abcdefghij", ".", "=", "\"", "'", "hunter22", "API_KEY", "api-Key", "api_\u212aey", "Passwd",
	"secret_key", "ACCESS_TOKEN", "auth-token", "ts", "TS", "node", "Docker", "k8s", "\u212a8s", "ci/cd", "_ci",
	"todo", "TODO:", "remember", "don't forget", "dont forget", "test", "tests", "é", "ｒｍ", "\xff", "a", "B9",
}

func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(12) {
		b.WriteString(fragments[rng.IntN(len(fragments))])
		if rng.IntN(3) == 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// TestSafetyPrefilterIsExact: a rule's prefilter never changes its verdict.
func TestSafetyPrefilterIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	all := [][]rule{dangerousWarnings, securityDegrading, injection}
	for range 15000 {
		raw := randomText(rng)
		for _, s := range []string{raw, safetyText(raw), strings.ToUpper(raw)} {
			in := &safetyInput{s: s}
			for _, rules := range all {
				for _, x := range rules {
					if got, want := x.match(in), x.re.MatchString(s); got != want {
						t.Fatalf("rule %s on %q: prefiltered %v, regex %v", x.re, s, got, want)
					}
				}
			}
		}
	}
}

// TestInferTagsMatchesRegexes: the token lookup gives the reference's
// regex rules' tags.
func TestInferTagsMatchesRegexes(t *testing.T) {
	ref := []struct {
		re  *regexp.Regexp
		tag string
	}{
		{regexp.MustCompile(`\b(?:typescript|ts)\b`), "typescript"},
		{regexp.MustCompile(`\b(?:javascript|js)\b`), "javascript"},
		{regexp.MustCompile(`\bpython\b`), "python"},
		{regexp.MustCompile(`\b(?:bun|node|deno)\b`), "runtime"},
		{regexp.MustCompile(`\b(?:react|vue|svelte|angular)\b`), "frontend"},
		{regexp.MustCompile(`\b(?:git|github|gitlab)\b`), "git"},
		{regexp.MustCompile(`\b(?:docker|kubernetes|k8s)\b`), "container"},
		{regexp.MustCompile(`\b(?:sql|postgres|mysql|sqlite)\b`), "database"},
		{regexp.MustCompile(`\b(?:test|spec|vitest|jest|mocha)\b`), "testing"},
		{regexp.MustCompile(`\b(?:ci|cd|pipeline|workflow|action)\b`), "ci-cd"},
		{regexp.MustCompile(`\b(?:security|auth|token|password|encrypt)\b`), "security"},
		{regexp.MustCompile(`\b(?:performance|latency|throughput|cache)\b`), "performance"},
		{regexp.MustCompile(`\b(?:api|rest|graphql|grpc|endpoint)\b`), "api"},
		{regexp.MustCompile(`\b(?:swarm|architect|agent|hook|plan)\b`), "opencode-swarm"},
	}
	words := []string{"typescript", "ts", "JS", "python", "bun", "Node", "deno", "react", "vue", "git", "GitHub",
		"docker", "k8s", "\u212a8s", "sql", "test", "spec", "ci", "cd", "action", "auth", "token", "cache", "api",
		"rest", "agent", "hook", "plan", "todo", "remember", "tests", "node_js", "ts2", "é", "_", "-", ".", "/", " ",
		"\xff", "\u00e9ts", "İ"}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 15000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		s := b.String()
		var want []string
		if todoTag.MatchString(s) {
			want = append(want, "todo")
		}
		lower := strings.ToLower(s)
		for _, r := range ref {
			if r.re.MatchString(lower) {
				want = append(want, r.tag)
			}
		}
		if got := InferTags(s); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("InferTags(%q) = %v, regexes give %v", s, got, want)
		}
	}
}

// TestSummaryRoundTrip: a summary decodes to what was encoded.
func TestSummaryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		e := &Entry{ID: randomText(rng), Tier: TierHive, Project: "p/ü", Lesson: randomText(rng), Category: "testing",
			Tags: []string{randomText(rng)}, Scope: "global", Status: StatusArchived, ArchiveReason: ArchiveTTLTodo,
			SourceProject: "q", CreatedSeq: rng.Uint64(), Confidence: rng.Float64(),
			Outcomes: Outcomes{Shown: rng.IntN(100), Helpful: rng.IntN(9), Harmful: rng.IntN(9)}}
		want := summaryOf(e)
		got, err := decodeSummary(want.encode())
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Lesson != want.Lesson || got.Project != want.Project || got.CreatedSeq != want.CreatedSeq ||
			got.Confidence != want.Confidence || got.Outcomes != want.Outcomes || !got.CreatedAt.Equal(want.CreatedAt) ||
			got.rel != want.rel || got.cnorm != want.cnorm || strings.Join(got.bigrams, "|") != strings.Join(want.bigrams, "|") ||
			strings.Join(got.ctags, "|") != strings.Join(want.ctags, "|") || got.removed() != true {
			t.Fatalf("round trip of %+v gave %+v", want, got)
		}
		if _, err := decodeSummary(want.encode()[:len(want.encode())/2]); err == nil {
			t.Fatal("a truncated summary decoded")
		}
	}
}

// TestSortedBigramsAreWordBigrams: the stored bigram sets give the
// reference's Jaccard.
func TestSortedBigramsAreWordBigrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 5000 {
		a, b := randomText(rng), randomText(rng)
		if rng.IntN(4) == 0 {
			b = a + " " + b
		}
		sa, sb := sortedBigrams(Normalize(a)), sortedBigrams(Normalize(b))
		if got, want := jaccardSorted(sa, sb), Jaccard(WordBigrams(a), WordBigrams(b)); got != want {
			t.Fatalf("Jaccard(%q, %q): sorted %v, reference %v", a, b, got, want)
		}
		fa, fb := featuresOf(a, nil, ""), featuresOf(b, nil, "")
		if got, want := jaccardFeatures(fa, fb), Jaccard(WordBigrams(a), WordBigrams(b)); got != want {
			t.Fatalf("Jaccard(%q, %q): hashed %v, reference %v", a, b, got, want)
		}
		packed := summaryOf(&Entry{Lesson: b}).encode()
		d := sumDecoder[[]byte]{s: packed}
		d.byte()
		d.byte()
		for range 4 {
			d.uvarint()
		}
		d.str()
		if got, want := jaccardPacked(fa, &d), Jaccard(WordBigrams(a), WordBigrams(b)); got != want || d.bad {
			t.Fatalf("Jaccard(%q, %q): packed %v, reference %v", a, b, got, want)
		}
		if len(sa) != len(setOf(WordBigrams(a)...)) {
			t.Fatalf("bigrams of %q: %v vs %v", a, sa, WordBigrams(a))
		}
	}
}

// TestRelevanceInIsReference: the one-pass relevance gives the
// reference's term-by-term count.
func TestRelevanceInIsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	ref := func(task []string, text string) float64 {
		hit := 0
		for _, tt := range task {
			for _, w := range words(text) {
				if w == tt || (len(tt) >= 4 && strings.HasPrefix(w, tt)) || (len(w) >= 4 && strings.HasPrefix(tt, w)) {
					hit++
					break
				}
			}
		}
		return float64(hit) / float64(len(task))
	}
	for range 5000 {
		task := taskTerms(randomText(rng) + " tests testing tes")
		text := relevanceText(randomText(rng), []string{randomText(rng)}, "testing")
		if len(task) == 0 {
			continue
		}
		if got, want := relevanceIn(task, text), ref(task, text); got != want {
			t.Fatalf("relevance of %v in %q: %v, reference %v", task, text, got, want)
		}
		// The same through word ids of a pool (relScorer).
		pool := []*summary{{features: features{rel: text}}, {features: features{rel: relevanceText(randomText(rng), nil, "")}}}
		(&relVocab{}).index(pool)
		rs := relScorer{task: task}
		for _, s := range pool {
			if got, want := rs.of(s), ref(task, s.rel); got != want {
				t.Fatalf("relevance of %v in %q by word ids: %v, reference %v", task, s.rel, got, want)
			}
		}
	}
}

// TestDedupKeptIsReference: prefix-filtered dedup keeps exactly what the
// greedy pairwise comparison keeps.
func TestDedupKeptIsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	scopes := map[string]bool{"global": true}
	for round := range 300 {
		var pool []*summary
		var texts []string
		for i := range 5 + rng.IntN(40) {
			text := randomText(rng)
			switch rng.IntN(6) {
			case 0:
				text = "x" // no bigram
			case 1:
				if len(texts) > 0 {
					text = texts[rng.IntN(len(texts))] + " " + fragments[rng.IntN(len(fragments))]
				}
			}
			texts = append(texts, text)
			pool = append(pool, summaryOf(&Entry{ID: string(rune('a' + i%26)), Lesson: text, Scope: "global", Status: StatusCandidate}))
		}
		for _, th := range []float64{0, 0.3, 0.6, 0.75, 1} {
			var want []string
			var keptBG [][]string
			for i, text := range texts {
				bg := WordBigrams(text)
				dup := false
				for _, k := range keptBG {
					if Jaccard(bg, k) >= th {
						dup = true
						break
					}
				}
				if !dup {
					keptBG = append(keptBG, bg)
					want = append(want, pool[i].Lesson)
				}
			}
			var got []string
			for _, s := range dedupKept(pool, scopes, th) {
				got = append(got, s.Lesson)
			}
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("round %d threshold %v: kept %q, reference %q", round, th, got, want)
			}
		}
	}
}

// TestTopRankedIsStableSort: the selection of the shown entries gives the
// first k of the stable sort by (score, created_at, id), ties included.
func TestTopRankedIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		n := rng.IntN(60)
		var ranked []scored
		for i := range n {
			e := &summary{ID: string(rune('a' + rng.IntN(3))), CreatedAt: time.Unix(int64(rng.IntN(3)), 0)}
			ranked = append(ranked, scored{e: e, val: float64(rng.IntN(4)) / 4, i: i})
		}
		want := append([]scored(nil), ranked...)
		sort.SliceStable(want, func(i, j int) bool {
			a, c := want[i], want[j]
			if a.val != c.val {
				return a.val > c.val
			}
			if !a.e.CreatedAt.Equal(c.e.CreatedAt) {
				return a.e.CreatedAt.After(c.e.CreatedAt)
			}
			return a.e.ID < c.e.ID
		})
		k := 1 + rng.IntN(20)
		got := topRanked(append([]scored(nil), ranked...), k)
		want = want[:min(k, len(want))]
		if len(got) != len(want) {
			t.Fatalf("n=%d k=%d: %d entries, want %d", n, k, len(got), len(want))
		}
		for i := range got {
			if got[i].i != want[i].i {
				t.Fatalf("n=%d k=%d: rank %d is #%d, want #%d", n, k, i, got[i].i, want[i].i)
			}
		}
	}
}
