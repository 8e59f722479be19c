package knowledge

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loredev/lore/projector/promptline"
)

// Injection (SPEC §5): a budgeted block of lessons for an agent's next task.
// The budget comes from the caller's context headroom (fraction free):
// > 0.6 full, 0.2–0.6 half the entries and chars, 0.05–0.2 a quarter,
// < 0.05 nothing. Swarm and hive are merged, near-duplicates removed,
// ranked by relevance to the task × quality (confidence, utility,
// maturity), each lesson cut to max_lesson_display_chars with "…". Every
// length is in UTF-16 code units.

// Regime names. NB: must not change: recorded in knowledge.injected/v1.
const (
	RegimeFull    = "full"
	RegimeHalf    = "half"
	RegimeQuarter = "quarter"
	RegimeNone    = "none"
)

// Budget is what one injection may use.
type Budget struct {
	Regime     string `json:"regime"`
	MaxEntries int    `json:"max_entries"`
	MaxChars   int    `json:"max_chars"`
}

// BudgetFor maps a headroom fraction to a budget. Boundaries: 0.6 and 0.2
// are half, 0.05 is a quarter.
func BudgetFor(headroom float64, cfg Config) Budget {
	n, c := cfg.MaxInjectCount, cfg.InjectCharBudget
	atLeastOne := func(x int) int {
		if n > 0 && x < 1 {
			return 1
		}
		return x
	}
	switch {
	case headroom > 0.6:
		return Budget{RegimeFull, n, c}
	case headroom >= 0.2:
		return Budget{RegimeHalf, atLeastOne(n / 2), c / 2}
	case headroom >= 0.05:
		return Budget{RegimeQuarter, atLeastOne(n / 4), c / 4}
	}
	return Budget{RegimeNone, 0, 0}
}

// InjectHeader starts a non-empty block. NB: agents may look for it.
const InjectHeader = "Lessons from lore ([S] this project, [H] hive):"

// Shown is one entry of an injection.
type Shown struct {
	ID            string  `json:"id"`
	Tier          string  `json:"tier"`
	Lesson        string  `json:"lesson"` // as displayed (truncated)
	Line          string  `json:"line"`
	Score         float64 `json:"score"`
	Relevance     float64 `json:"relevance"`
	Confidence    float64 `json:"confidence"`
	Status        string  `json:"status"`
	Category      string  `json:"category"`
	SourceProject string  `json:"source_project,omitempty"`
}

// Injection is the budgeted block.
type Injection struct {
	Budget
	Headroom float64 `json:"headroom"`
	Task     string  `json:"task,omitempty"`
	Text     string  `json:"text"`
	Chars    int     `json:"chars"` // UTF-16 code units of Text
	Entries  []Shown `json:"entries"`
	// Candidates is how many active entries were considered after merging.
	Candidates int `json:"candidates"`
}

// InjectOptions select what an injection may show.
type InjectOptions struct {
	Task     string
	Headroom float64
	Project  string
	// Scopes are accepted besides cfg.ScopeFilter (e.g. "stack:go").
	Scopes []string
}

// Inject builds the block from the project's swarm entries and the hive.
// Archived and quarantined entries are never shown.
func Inject(swarm, hive []*Entry, o InjectOptions, cfg Config, now time.Time) Injection {
	return injectSummaries(summariesBySeq(swarm), summariesBySeq(hive), o, cfg)
}

func summariesBySeq(es []*Entry) []*summary {
	out := make([]*summary, len(es))
	for i, e := range sortedBySeq(es) {
		out[i] = summaryOf(e)
	}
	return out
}

// injectSummaries is Inject on summaries, each pool in creation order.
func injectSummaries(swarm, hive []*summary, o InjectOptions, cfg Config) Injection {
	scopes := setOf(append(append([]string(nil), cfg.ScopeFilter...), o.Scopes...)...)
	var pool []*summary
	if cfg.HiveEnabled {
		pool = append(pool, hive...)
	}
	pool = append(pool, swarm...)
	return injectKept(dedupKept(pool, scopes, cfg.DedupThreshold), o, cfg)
}

// injectKept builds the block from the merged pool's candidates left by
// the dedup (kept), in pool order.
func injectKept(kept []*summary, o InjectOptions, cfg Config) Injection {
	return injectSet(&keptSet{sums: kept}, o, cfg)
}

// injectSet is injectKept on a kept set, ranked through its index when it
// has one (keptSet.index).
func injectSet(ks *keptSet, o InjectOptions, cfg Config) Injection {
	b := BudgetFor(o.Headroom, cfg)
	inj := Injection{Budget: b, Headroom: o.Headroom, Task: o.Task, Entries: []Shown{}}
	inj.Candidates = ks.size()
	if b.MaxEntries == 0 || inj.Candidates == 0 {
		return inj
	}
	task := taskTerms(o.Task)
	var top []scored
	ranked := false
	if len(task) <= 64 {
		if ix := ks.index(cfg.MinRetrievalsForUtility); ix != nil {
			top, ranked = ix.top(ks, task, b.MaxEntries, cfg)
		}
	}
	if !ranked {
		top = rankSummaries(ks.list(), task, b.MaxEntries, cfg)
	}
	text := InjectHeader
	for _, s := range top {
		if len(inj.Entries) == b.MaxEntries {
			break
		}
		shown, line := displayLine(s.e.Lesson, s.e.Tier, s.e.SourceProject, o.Project, cfg)
		next := text + "\n" + line
		if UTF16Len(next) > b.MaxChars {
			break // whole lines only: the rest does not fit either in rank order
		}
		text = next
		inj.Entries = append(inj.Entries, Shown{ID: s.e.ID, Tier: s.e.Tier, Lesson: shown, Line: line,
			Score: s.val, Relevance: s.rel, Confidence: s.e.Confidence, Status: s.e.Status,
			Category: s.e.Category, SourceProject: s.e.SourceProject})
	}
	if len(inj.Entries) > 0 {
		inj.Text = text
		inj.Chars = UTF16Len(text)
	}
	return inj
}

// rankSummaries is the k first of kept for task in rank order (all of
// them when fewer), every candidate scored from its summary: the
// reference the ranking index is checked against.
func rankSummaries(kept []*summary, task []string, k int, cfg Config) []scored {
	rs := relScorer{task: task}
	if k < len(kept)/4 {
		// The k best so far, in rank order: a candidate below the k-th
		// is dropped without being kept anywhere (topRanked's order).
		top := make([]scored, 0, k)
		for i, e := range kept {
			rel := rs.of(e)
			val := score(rel, len(task) > 0, e.Confidence, e.Outcomes, e.Status, cfg)
			if len(top) == k && val < top[k-1].val {
				continue
			}
			top = insertRanked(top, scored{e, rel, val, i}, k)
		}
		return top
	}
	ranked := make([]scored, 0, len(kept))
	for i, e := range kept {
		rel := rs.of(e)
		ranked = append(ranked, scored{e, rel, score(rel, len(task) > 0, e.Confidence, e.Outcomes, e.Status, cfg), i})
	}
	return topRanked(ranked, k)
}

// scored is a candidate with its relevance, score and pool position.
type scored struct {
	e        *summary
	rel, val float64
	i        int
}

// ranksBefore is the injection's rank order: score descending, then newer
// first, then id, then pool order. Scores are finite (confidence and
// utility are stored as JSON numbers), so this is a strict total order,
// and the one a stable sort by (score, created_at, id) gives.
func ranksBefore(a, c scored) bool {
	if r := rankCmp(a, c); r != 0 {
		return r < 0
	}
	return a.i < c.i
}

// rankCmp compares the rank order's keys before pool order: score
// descending, then newer first, then id (-1: a first, 0: tied).
func rankCmp(a, c scored) int {
	switch {
	case a.val != c.val:
		return boolCmp(a.val > c.val)
	case !a.e.CreatedAt.Equal(c.e.CreatedAt):
		return boolCmp(a.e.CreatedAt.After(c.e.CreatedAt))
	case a.e.ID != c.e.ID:
		return boolCmp(a.e.ID < c.e.ID)
	}
	return 0
}

// boolCmp is -1 when first holds, else 1.
func boolCmp(first bool) int {
	if first {
		return -1
	}
	return 1
}

// insertRanked adds s to top (at most k, in rank order, k > 0), dropping
// the last when it no longer is among the k first.
func insertRanked(top []scored, s scored, k int) []scored {
	return insertBy(top, s, k, ranksBefore)
}

// topRanked returns the k first of ranked in rank order (all of them when
// fewer), reordering ranked. An injection shows at most k entries and
// stops at the first that does not fit, so only these are ever looked at.
func topRanked(ranked []scored, k int) []scored {
	if k <= 0 {
		return nil
	}
	if k >= len(ranked)/4 {
		slices.SortFunc(ranked, func(a, c scored) int {
			if ranksBefore(a, c) {
				return -1
			}
			return 1 // never equal: ranksBefore is strict and total
		})
		return ranked[:min(k, len(ranked))]
	}
	// Insertion into the k best so far: ranked[:n], in rank order.
	n := 0
	for _, s := range ranked {
		if n == k && !ranksBefore(s, ranked[n-1]) {
			continue
		}
		j := min(n, k-1)
		for j > 0 && ranksBefore(s, ranked[j-1]) {
			ranked[j] = ranked[j-1]
			j--
		}
		ranked[j] = s
		n = min(n+1, k)
	}
	return ranked[:n]
}

// dedupKept keeps, in pool order, each active in-scope entry that is not a
// near-duplicate (Jaccard of bigrams >= threshold) of an entry kept before
// it. With threshold <= 0 every similarity passes (only the first entry is
// kept); two empty sets have similarity 1, an empty and a non-empty one 0.
func dedupKept(pool []*summary, scopes map[string]bool, threshold float64) []*summary {
	var cand []*summary
	for _, e := range pool {
		if e.active() && scopes[e.Scope] {
			cand = append(cand, e)
		}
	}
	if threshold <= 0 || len(cand) < 2 {
		return cand[:min(len(cand), 1)]
	}
	d := newDedupper(nil, docFreq(cand), threshold, len(cand))
	for _, e := range cand {
		d.add(e)
	}
	return d.kept
}

// docFreq counts, for each bigram hash, the candidates holding it.
func docFreq(cand []*summary) map[uint64]int32 {
	df := make(map[uint64]int32, len(cand)*8)
	for _, e := range cand {
		for _, h := range e.bghash {
			df[h]++
		}
	}
	return df
}

// dedupper is the greedy dedup, one candidate at a time in pool order.
//
// It compares a candidate only with the kept entries sharing a bigram
// hash of its prefix, by prefix filtering: order hashes by (df, hash) and
// index each kept set by its first |x| − ⌈t·|x|⌉ + 2 hashes. If J(a, b) >=
// t the sets share o >= ⌈t·|a∪b|⌉ bigrams, so each prefix holds the first
// hash (in that order) of a shared bigram: near-duplicates always meet,
// and the exact similarity decides (the +2 instead of the textbook +1
// covers rounding of t·|x|). This holds for any order of the hashes, as
// long as every set is indexed and probed in the same one; df only makes
// the work small: with df the frequency of a hash among the candidates,
// bigrams common to many lessons sort last and are not indexed, so the
// work stays near linear.
//
// A pair is compared only if the positions allow it (apart): a set is
// indexed once per distinct hash of its prefix, at the position of that
// hash's first occurrence in its order, and a candidate is met first
// through the first shared hash of both orders (a shared hash before it
// would be in both prefixes and met earlier), so every shared element
// lies at or after those positions: the intersection is at most
// min(|x| − i, |y| − j), and the hash Jaccard at most what that implies.
// Below t the pair is no near-duplicate (nearDuplicate checks this same
// hash Jaccard first), so skipping it changes no decision.
//
// REQUIRES: threshold > 0.
type dedupper struct {
	threshold float64
	df        map[uint64]int32 // the hash order; read-only
	// base holds the entries kept before this dedupper started (nil:
	// none); read-only, shared with other dedups.
	base      *dedupIndex
	kept      []*summary // base's kept entries, then the ones kept here
	post      postings   // prefix postings of the entries kept here
	seen      []bool     // by index in kept; all false between adds
	emptyKept bool       // an entry without bigrams is kept
	touched   []int32
	near      []int32
	prefix    []hashRank
}

// dedupIndex is a finished dedup of a pool's candidates, to be continued
// by others (newDedupper): read-only once built.
type dedupIndex struct {
	df        map[uint64]int32
	kept      []*summary
	post      postings
	emptyKept bool
	// lineage is shared by the indexes derived from one build
	// (deriveIndex): they keep the same entries, with the same bigrams,
	// at the same positions.
	lineage *struct{ byte }
}

// newDedupper starts a dedup of about n candidates after base (nil: from
// scratch) in the hash order of df.
func newDedupper(base *dedupIndex, df map[uint64]int32, threshold float64, n int) *dedupper {
	d := &dedupper{threshold: threshold, df: df, base: base, post: postings{head: make(map[uint64]int32, 8*n)}}
	if base != nil {
		d.kept = base.kept[:len(base.kept):len(base.kept)] // appends copy: base stays as it is
		d.seen = make([]bool, len(base.kept))
		d.emptyKept = base.emptyKept
	}
	return d
}

// index freezes the dedup for others to continue.
func (d *dedupper) index() *dedupIndex {
	return &dedupIndex{df: d.df, kept: d.kept, post: d.post, emptyKept: d.emptyKept}
}

// add keeps e unless it near-duplicates an entry kept before.
func (d *dedupper) add(e *summary) {
	if len(e.bigrams) == 0 {
		if !(d.emptyKept && 1 >= d.threshold) {
			d.kept, d.seen, d.emptyKept = append(d.kept, e), append(d.seen, false), true
		}
		return
	}
	d.prefix = rarest(e.bghash, d.df, prefixLen(len(e.bghash), d.threshold), d.prefix[:0])
	d.touched = d.touched[:0]
	lx := len(e.bghash)
	// meet marks the kept entry k seen when it is first met, through a
	// hash at position j of its order and i of e's: touched lists every
	// entry met (to clear seen), near those whose positions allow a
	// near-duplicate (apart).
	near := d.near[:0]
	meet := func(k int32, j int32, i int) {
		if d.seen[k] {
			return
		}
		d.seen[k] = true
		d.touched = append(d.touched, k)
		if !apart(lx, i, len(d.kept[k].bghash), int(j), d.threshold) {
			near = append(near, k)
		}
	}
	for i, r := range d.prefix {
		if d.base != nil {
			for n := d.base.post.first(r.h); n >= 0; n = d.base.post.next[n] {
				meet(d.base.post.kept[n], d.base.post.pos[n], i)
			}
		}
		for n := d.post.first(r.h); n >= 0; n = d.post.next[n] {
			meet(d.post.kept[n], d.post.pos[n], i)
		}
	}
	for _, k := range d.touched {
		d.seen[k] = false
	}
	d.near = near
	for _, k := range near {
		if nearDuplicate(e.features, d.kept[k].features, d.threshold) {
			return
		}
	}
	k := int32(len(d.kept))
	d.kept, d.seen = append(d.kept, e), append(d.seen, false)
	for i, r := range d.prefix {
		if i == 0 || r.h != d.prefix[i-1].h { // a hash's first occurrence only
			d.post.add(r.h, k, int32(i))
		}
	}
}

// apart reports that sets of sizes lx and ly, first met through a shared
// hash at positions i and j of their orders, cannot have a hash Jaccard
// of t: every shared element lies at or after those positions, so the
// intersection is at most min(lx − i, ly − j) (hashJaccard's float
// formula, increasing in the intersection).
func apart(lx, i, ly, j int, t float64) bool {
	ub := min(lx-i, ly-j)
	return float64(ub)/float64(lx+ly-ub) < t
}

// postings lists, by hash, indexes of kept entries: linked lists in
// flat slices, so adding one allocates nothing per hash.
type postings struct {
	head map[uint64]int32 // hash → its last node
	next []int32          // node → the node before it in its list, -1 at the end
	kept []int32          // node → index of the kept entry
	pos  []int32          // node → position of the hash's first occurrence in that entry's order
}

// first is the first node of h's list, -1 when empty.
func (p *postings) first(h uint64) int32 {
	if n, ok := p.head[h]; ok {
		return n
	}
	return -1
}

func (p *postings) add(h uint64, k, pos int32) {
	p.next = append(p.next, p.first(h))
	p.kept = append(p.kept, k)
	p.pos = append(p.pos, pos)
	p.head[h] = int32(len(p.kept) - 1)
}

// prefixLen is |x| − ⌈t·|x|⌉ + 2, within [1, |x|].
func prefixLen(n int, t float64) int {
	return max(1, min(n, n-int(math.Ceil(t*float64(n)))+2))
}

type hashRank struct {
	df int32
	h  uint64
}

// rarest appends to out the p first hashes of hs in (df, hash) order.
func rarest(hs []uint64, df map[uint64]int32, p int, out []hashRank) []hashRank {
	for _, h := range hs {
		out = append(out, hashRank{df[h], h})
	}
	// Insertion sort: a lesson has a few dozen bigrams at most.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && (out[j].df < out[j-1].df || out[j].df == out[j-1].df && out[j].h < out[j-1].h); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out[:p]
}

func sortedBySeq(es []*Entry) []*Entry {
	out := append([]*Entry(nil), es...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedSeq < out[j].CreatedSeq })
	return out
}

// displayLine renders one entry: "- [S] lesson" or "- [H] lesson (from: p)".
// The lesson is stored text: it is shown as one safe line (promptline),
// then cut, which keeps it one line and its start unchanged.
func displayLine(full, tier, sourceProject, project string, cfg Config) (lesson, line string) {
	lesson, _ = TruncateUTF16(promptline.Line(full), cfg.MaxLessonDisplayChars, "…")
	mark := "[S]"
	if tier == TierHive {
		mark = "[H]"
	}
	line = "- " + mark + " " + lesson
	if tier == TierHive && sourceProject != "" && sourceProject != project {
		line += " (from: " + promptline.Line(sourceProject) + ")"
	}
	return lesson, line
}

var stopWords = setOf("the", "and", "for", "with", "that", "this", "from", "into", "when", "then",
	"are", "was", "were", "will", "not", "but", "all", "any", "our", "your", "its", "you", "has",
	"have", "had", "how", "why", "what", "which", "who", "out", "use", "using", "make", "add")

// taskTerms are the distinct content words of a task (normalised, 3+ letters).
func taskTerms(task string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range words(normalizeText(task)) {
		if len(w) < 3 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// Relevance is the share of the task's terms found in the entry's lesson,
// tags or category (a term also matches a word it prefixes, e.g. "test" →
// "tests"), in [0, 1].
func Relevance(task []string, e *Entry) float64 {
	if len(task) == 0 {
		return 0
	}
	return relevanceIn(task, relevanceText(e.Lesson, e.Tags, e.Category))
}

// relevanceIn is Relevance on the entry's normalised relevance text (words
// separated by single spaces), in one pass over its words.
func relevanceIn(task []string, text string) float64 {
	if len(task) == 0 {
		return 0
	}
	var hitBits uint64 // terms found, for the first 64 terms
	var hitMore map[int]bool
	hit := 0
	isHit := func(i int) bool {
		if i < 64 {
			return hitBits&(1<<i) != 0
		}
		return hitMore[i]
	}
	for start := 0; start <= len(text) && hit < len(task); {
		end := strings.IndexByte(text[start:], ' ')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		w := text[start:end]
		for i, t := range task {
			if isHit(i) {
				continue
			}
			if w == t || (len(t) >= 4 && strings.HasPrefix(w, t)) || (len(w) >= 4 && strings.HasPrefix(t, w)) {
				hit++
				if i < 64 {
					hitBits |= 1 << i
				} else {
					if hitMore == nil {
						hitMore = map[int]bool{}
					}
					hitMore[i] = true
				}
			}
		}
		start = end + 1
	}
	return float64(hit) / float64(len(task))
}

// Maturity weighs an entry's status: promoted 1, established 0.75,
// candidate 0.5.
func Maturity(e *Entry) float64 { return maturity(e.Status) }

func maturity(status string) float64 {
	switch status {
	case StatusPromoted:
		return 1
	case StatusEstablished:
		return 0.75
	}
	return 0.5
}

// Score ranks an entry: quality = 0.5·confidence + 0.3·utility (0.5 until
// measured) + 0.2·maturity; with a task, score = (0.25 + 0.75·relevance) ×
// quality, so relevance dominates and quality breaks ties.
func Score(rel float64, hasTask bool, e *Entry, cfg Config) float64 {
	return score(rel, hasTask, e.Confidence, e.Outcomes, e.Status, cfg)
}

func score(rel float64, hasTask bool, confidence float64, o Outcomes, status string, cfg Config) float64 {
	return scoreOf(rel, hasTask, confidence, o.Shown, o.Helpful, maturity(status), cfg)
}

// scoreOf is score on what it reads of an entry (the maturity of its
// status).
func scoreOf(rel float64, hasTask bool, confidence float64, shown, helpful int, mat float64, cfg Config) float64 {
	q := qualityOf(confidence, shown, helpful, mat, cfg.MinRetrievalsForUtility)
	if !hasTask {
		return q
	}
	return taskScore(rel, q)
}

// qualityOf is an entry's quality: 0.5·confidence + 0.3·utility (0.5
// until measured: fewer than minRet retrievals) + 0.2·maturity.
func qualityOf(confidence float64, shown, helpful int, mat float64, minRet int) float64 {
	u := 0.5 // Utility, inlined: not measured
	if shown >= minRet && shown != 0 {
		u = float64(helpful) / float64(shown)
	}
	return float64(0.5*confidence + 0.3*u + 0.2*mat)
}

// taskScore is the score with a task of an entry of relevance rel and
// quality q. It does not decrease with q, nor with rel when q >= 0 (the
// ranking index relies on both); the conversions keep every caller's
// rounding the same.
func taskScore(rel, q float64) float64 {
	return float64(0.25+0.75*rel) * q
}
