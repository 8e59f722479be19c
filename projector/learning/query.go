package learning

import (
	"fmt"
	"strings"

	json "github.com/goccy/go-json"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/promptline"
)

// Queries read the model through a projector.Reader and evaluate decay at
// now. Each costs O(1) per criterion or pattern it reports, unless now
// precedes that aggregate's newest feedback (a --now in the past of
// backfilled or clock-skewed events): then that aggregate's terms are summed
// directly, so that every age is clamped at 0 as the rule says.

// CriterionView is a criterion's weight at now and why.
type CriterionView struct {
	Criterion       string     `json:"criterion"`
	Weight          float64    `json:"weight"`
	EffectiveWeight float64    `json:"effective_weight"`
	DecayedHelpful  float64    `json:"decayed_helpful"`
	DecayedHarmful  float64    `json:"decayed_harmful"`
	HelpfulCount    int        `json:"helpful_count"`
	HarmfulCount    int        `json:"harmful_count"`
	NeutralCount    int        `json:"neutral_count"`
	HarmfulRatio    float64    `json:"harmful_ratio"`
	LastValidated   *time.Time `json:"last_validated,omitempty"`
	HalfLifeDays    float64    `json:"half_life_days"`
	Deprecated      bool       `json:"deprecated"`
	DeprecatedAt    *time.Time `json:"deprecated_at,omitempty"`
	// Evidence is the interval of the helpful rate on the decayed sums and
	// whether the deprecation verdict is tentative (evidence.go).
	Evidence Evidence `json:"evidence"`
	Why      []string `json:"why"`
}

// directSums sums an aggregate's terms at now with the direct formula.
func directSums(r projector.Reader, prefix []byte, now time.Time, halfLife float64) (h, x float64, err error) {
	err = r.Scan(prefix, func(k, v []byte) error {
		typ, val := parseTerm(v)
		d, err := DecayFactor(termTime(k), now, halfLife)
		if err != nil {
			return err
		}
		switch typ {
		case Helpful:
			h += val * d
		case Harmful:
			x += val * d
		}
		return nil
	})
	return h, x, err
}

func sumsAt(r projector.Reader, s DecaySums, prefix []byte, now time.Time, halfLife float64) (float64, float64, error) {
	h, x, exact := s.At(now, halfLife)
	if exact {
		return h, x, nil
	}
	return directSums(r, prefix, now, halfLife)
}

func (m *folder) criterionView(r projector.Reader, proj string, rec criterionRec, now time.Time) (CriterionView, error) {
	h, x, err := sumsAt(r, rec.Sums, termsPrefix(kCriterionT, proj, rec.Criterion), now, rec.HalfLifeDays)
	if err != nil {
		return CriterionView{}, err
	}
	v := CriterionView{Criterion: rec.Criterion, Weight: CriterionWeight(h, x), DecayedHelpful: h, DecayedHarmful: x,
		HelpfulCount: rec.HelpfulCount, HarmfulCount: rec.HarmfulCount, NeutralCount: rec.NeutralCount,
		LastValidated: rec.LastValidated, HalfLifeDays: rec.HalfLifeDays, Deprecated: rec.Deprecated, DeprecatedAt: rec.DeprecatedAt}
	v.EffectiveWeight = v.Weight
	if total := rec.HelpfulCount + rec.HarmfulCount; total > 0 {
		v.HarmfulRatio = float64(rec.HarmfulCount) / float64(total)
	}
	switch total := h + x; {
	case !(total > 0):
		v.Why = append(v.Why, "no decayed helpful or harmful feedback: weight 1.0")
	case h/total < 0.1:
		v.Why = append(v.Why, fmt.Sprintf("weight %.4f: decayed helpful %.4f / (helpful + harmful %.4f) = %.4f, floored at 0.1", v.Weight, h, x, h/total))
	default:
		v.Why = append(v.Why, fmt.Sprintf("weight %.4f = decayed helpful %.4f / (helpful + harmful %.4f)", v.Weight, h, x))
	}
	v.Why = append(v.Why, fmt.Sprintf("raw counts: %d helpful, %d harmful, %d neutral (neutral counts in neither sum); half-life %g days",
		rec.HelpfulCount, rec.HarmfulCount, rec.NeutralCount, rec.HalfLifeDays))
	if rec.LastValidated != nil {
		v.Why = append(v.Why, fmt.Sprintf("last validated (newest helpful feedback) %s, %.1f days before now",
			FormatTime(*rec.LastValidated), math.Max(0, msBetween(*rec.LastValidated, now)/msPerDay)))
	} else {
		v.Why = append(v.Why, "never validated: no helpful feedback")
	}
	lc := m.cfg.Learning
	verdict, side := "weight", ""
	if rec.Deprecated {
		verdict, side = "deprecated", "below"
	}
	v.Evidence = NewEvidence(h, x, verdict, 1-lc.MaxHarmfulRatio, side, m.cfg.Evidence.Confidence)
	if rec.Deprecated {
		v.EffectiveWeight = 0
		v.Why = append(v.Why, fmt.Sprintf("deprecated (impact 0): raw harmful ratio %.3f > %.2f with %d >= %g raw helpful+harmful",
			v.HarmfulRatio, lc.MaxHarmfulRatio, rec.HelpfulCount+rec.HarmfulCount, lc.MinFeedbackForAdjustment))
	} else {
		v.Why = append(v.Why, fmt.Sprintf("not deprecated: needs >= %g raw helpful+harmful (has %d) and raw harmful ratio > %.2f (has %.3f)",
			lc.MinFeedbackForAdjustment, rec.HelpfulCount+rec.HarmfulCount, lc.MaxHarmfulRatio, v.HarmfulRatio))
	}
	v.Why = append(v.Why, v.Evidence.Why())
	return v, nil
}

// Weights lists every criterion of a project (sorted by name) at now.
func (m *Model) Weights(r projector.Reader, proj string, now time.Time) ([]CriterionView, error) {
	var recs []criterionRec
	err := r.Scan(append(key(kCriterion, proj), 0), func(k, v []byte) error {
		var rec criterionRec
		if err := rec.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f, err := m.at(r)
	if err != nil {
		return nil, err
	}
	out := make([]CriterionView, 0, len(recs))
	for _, rec := range recs {
		v, err := f.criterionView(r, proj, rec, now)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Criterion returns one criterion at now; found is false when it has no feedback.
func (m *Model) Criterion(r projector.Reader, proj, name string, now time.Time) (CriterionView, bool, error) {
	var rec criterionRec
	ok, err := get(r, key(kCriterion, proj, name), &rec)
	if err != nil || !ok {
		return CriterionView{}, ok, err
	}
	f, err := m.at(r)
	if err != nil {
		return CriterionView{}, false, err
	}
	v, err := f.criterionView(r, proj, rec, now)
	return v, true, err
}

// PatternView is a pattern's maturity at now, its observations and why.
type PatternView struct {
	ID      string   `json:"id"`
	Content string   `json:"content"`
	Tags    []string `json:"tags"`
	// State is the effective state: the manual one when set, else ComputedState.
	State         MaturityState `json:"state"`
	ComputedState MaturityState `json:"computed_state"`
	Multiplier    float64       `json:"multiplier"`
	Label         string        `json:"label"`
	Manual        *Manual       `json:"manual,omitempty"`
	// AnnouncedState is the last state announced by the fold (ticks and
	// feedback); it lags State while time-only transitions wait for a tick.
	AnnouncedState MaturityState `json:"announced_state"`
	StateSince     time.Time     `json:"state_since"`
	StateReason    string        `json:"state_reason,omitempty"`
	DecayedHelpful float64       `json:"decayed_helpful"`
	DecayedHarmful float64       `json:"decayed_harmful"`
	HarmfulRatio   float64       `json:"harmful_ratio"`
	HelpfulCount   int           `json:"helpful_count"`
	HarmfulCount   int           `json:"harmful_count"`
	NeutralCount   int           `json:"neutral_count"`
	SuccessCount   int           `json:"success_count"`
	FailureCount   int           `json:"failure_count"`
	Inverted       bool          `json:"inverted"`
	AntiPattern    string        `json:"anti_pattern,omitempty"`
	AntiPatternID  string        `json:"anti_pattern_id,omitempty"`
	InvertedAt     *time.Time    `json:"inverted_at,omitempty"`
	ExampleBeads   []string      `json:"example_beads"`
	PromotedAt     *time.Time    `json:"promoted_at,omitempty"`
	DeprecatedAt   *time.Time    `json:"deprecated_at,omitempty"`
	LastValidated  time.Time     `json:"last_validated"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
	// Evidence is the evidence of the maturity state (decayed sums);
	// InversionEvidence that of the inversion (same decayed counts, the
	// inversion's threshold), when inverted.
	// Tentative is true when the verdict lore acts on (the inversion, else
	// a proven or deprecated state) is tentative.
	Evidence          Evidence   `json:"evidence"`
	InversionEvidence *Evidence  `json:"inversion_evidence,omitempty"`
	Tentative         bool       `json:"tentative"`
	Rehabilitations   int        `json:"rehabilitations,omitempty"`
	RehabReason       string     `json:"rehabilitation_reason,omitempty"`
	RehabilitatedAt   *time.Time `json:"rehabilitated_at,omitempty"`
	Why               []string   `json:"why"`
}

func (m *folder) patternView(r projector.Reader, proj string, rec patternRec, now time.Time) (PatternView, error) {
	mc := m.cfg.Maturity
	h, x, err := sumsAt(r, rec.Sums, termsPrefix(kPatternT, proj, rec.Pattern.ID), now, mc.HalfLifeDays)
	if err != nil {
		return PatternView{}, err
	}
	p := rec.Pattern
	v := PatternView{ID: p.ID, Content: p.Content, Tags: p.Tags, ComputedState: StateFromDecayed(h, x, mc),
		Manual: rec.Maturity.Manual, AnnouncedState: rec.Maturity.State, StateSince: rec.StateSince, StateReason: rec.StateReason,
		DecayedHelpful: h, DecayedHarmful: x, HelpfulCount: rec.Maturity.HelpfulCount, HarmfulCount: rec.Maturity.HarmfulCount,
		NeutralCount: rec.NeutralCount, SuccessCount: p.SuccessCount, FailureCount: p.FailureCount, Inverted: rec.Inverted,
		InvertedAt: rec.InvertedAt, ExampleBeads: p.ExampleBeads, PromotedAt: rec.Maturity.PromotedAt,
		DeprecatedAt: rec.Maturity.DeprecatedAt, LastValidated: rec.Maturity.LastValidated, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if h+x > floatEpsilon {
		v.HarmfulRatio = x / (h + x)
	}
	v.State = v.ComputedState
	if v.Manual != nil {
		v.State = v.Manual.State
	}
	v.Multiplier, _ = Multiplier(v.State)
	mat := rec.Maturity
	mat.State = v.State
	v.Label = FormatMaturityForPrompt(mat)
	ec := m.cfg.Evidence
	v.Evidence = MaturityEvidence(v.State, h, x, mc, ec.Confidence)
	v.Tentative = v.Evidence.Tentative
	v.Rehabilitations, v.RehabReason, v.RehabilitatedAt = rec.Rehabilitations, rec.RehabReason, rec.RehabilitatedAt
	if rec.Inverted {
		ie := InversionEvidence(h, x, m.cfg.AntiPattern, ec.Confidence)
		v.InversionEvidence, v.Tentative = &ie, ie.Tentative
		v.AntiPatternID = "anti-" + p.ID
		reason := rec.AntiReason
		if total := p.SuccessCount + p.FailureCount; ec.Policy == PolicyEvidence && total > 0 {
			reason = fmt.Sprintf("Failed %d/%d times (%s%%; %s)", p.FailureCount, total,
				pct(float64(p.FailureCount)/float64(total)), ie.FailureInterval())
		}
		v.AntiPattern = AntiPatternText(p.Content, reason, m.cfg.AntiPattern)
	}
	if v.Manual != nil {
		v.Why = append(v.Why, fmt.Sprintf("%s by hand at %s (%s), holds until the next manual event or a reset",
			v.Manual.State, FormatTime(v.Manual.At), orNone(v.Manual.Reason)))
		v.Why = append(v.Why, "without it: "+ExplainState(h, x, mc))
	} else {
		v.Why = append(v.Why, ExplainState(h, x, mc))
	}
	if rec.StateReason != "" {
		v.Why = append(v.Why, fmt.Sprintf("last announced %s at %s (%s)", rec.Maturity.State, FormatTime(rec.StateSince), rec.StateReason))
	}
	v.Why = append(v.Why, fmt.Sprintf("raw feedback: %d helpful, %d harmful, %d neutral (neutral counts in neither sum); half-life %g days",
		v.HelpfulCount, v.HarmfulCount, v.NeutralCount, mc.HalfLifeDays))
	ac := m.cfg.AntiPattern
	total := p.SuccessCount + p.FailureCount
	fr := 0.0
	if total > 0 {
		fr = float64(p.FailureCount) / float64(total)
	}
	switch {
	case rec.Inverted:
		v.Why = append(v.Why, fmt.Sprintf("inverted at %s: %s (inverts when observations >= %g and failure ratio >= %.2f)",
			FormatTime(*rec.InvertedAt), rec.AntiReason, ac.MinObservations, ac.FailureRatioThreshold))
	case float64(total) < ac.MinObservations:
		v.Why = append(v.Why, fmt.Sprintf("not inverted: %d observations < %g", total, ac.MinObservations))
	default:
		v.Why = append(v.Why, fmt.Sprintf("not inverted: failure ratio %d/%d = %.3f < %.2f", p.FailureCount, total, fr, ac.FailureRatioThreshold))
	}
	v.Why = append(v.Why, "maturity "+v.Evidence.Why())
	if v.InversionEvidence != nil {
		v.Why = append(v.Why, "inversion "+v.InversionEvidence.Why())
		if ec.Policy == PolicyEvidence {
			v.Why = append(v.Why, fmt.Sprintf("policy evidence: rehabilitated once the %s%% interval of the success rate lies above %s%%",
				pct(ec.Confidence), pct(1-ac.FailureRatioThreshold)))
		} else {
			v.Why = append(v.Why, "policy seed: the inversion holds until a reset")
		}
	}
	if rec.RehabilitatedAt != nil {
		v.Why = append(v.Why, fmt.Sprintf("rehabilitated at %s (%d time(s)): %s", FormatTime(*rec.RehabilitatedAt), rec.Rehabilitations, rec.RehabReason))
	}
	return v, nil
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return "reason: " + s
}

// Patterns lists a project's patterns at now, sorted by state (proven,
// established, candidate, deprecated) then content; state filters when set.
func (m *Model) Patterns(r projector.Reader, proj string, now time.Time, state MaturityState) ([]PatternView, error) {
	var recs []patternRec
	err := r.Scan(append(key(kPattern, proj), 0), func(k, v []byte) error {
		var rec patternRec
		if err := rec.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f, err := m.at(r)
	if err != nil {
		return nil, err
	}
	out := make([]PatternView, 0, len(recs))
	for _, rec := range recs {
		v, err := f.patternView(r, proj, rec, now)
		if err != nil {
			return nil, err
		}
		if state == "" || v.State == state {
			out = append(out, v)
		}
	}
	rank := map[MaturityState]int{Proven: 0, Established: 1, Candidate: 2, Deprecated: 3}
	sort.SliceStable(out, func(i, j int) bool {
		if rank[out[i].State] != rank[out[j].State] {
			return rank[out[i].State] < rank[out[j].State]
		}
		return out[i].Content < out[j].Content
	})
	return out, nil
}

// Pattern returns one pattern at now, by id, or by content (its derived id).
func (m *Model) Pattern(r projector.Reader, proj, idOrContent string, now time.Time) (PatternView, bool, error) {
	var rec patternRec
	ok, err := get(r, key(kPattern, proj, idOrContent), &rec)
	if err == nil && !ok {
		ok, err = get(r, key(kPattern, proj, PatternID(idOrContent)), &rec)
	}
	if err != nil || !ok {
		return PatternView{}, ok, err
	}
	f, err := m.at(r)
	if err != nil {
		return PatternView{}, false, err
	}
	v, err := f.patternView(r, proj, rec, now)
	return v, true, err
}

// AntiPatterns returns the project's anti-patterns (sorted by id) and
// their prompt block (formatAntiPatternsForPrompt).
func (m *Model) AntiPatterns(r projector.Reader, proj string, now time.Time) ([]Pattern, string, error) {
	views, err := m.Patterns(r, proj, now, "")
	if err != nil {
		return nil, "", err
	}
	var anti []Pattern
	for _, v := range views {
		if v.Inverted {
			anti = append(anti, Pattern{ID: v.AntiPatternID, Content: v.AntiPattern, Kind: KindAntiPattern, IsNegative: true,
				SuccessCount: v.SuccessCount, FailureCount: v.FailureCount, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
				Tags: v.Tags, ExampleBeads: v.ExampleBeads})
		}
	}
	sort.Slice(anti, func(i, j int) bool { return anti[i].ID < anti[j].ID })
	return anti, FormatAntiPatternsForPrompt(anti), nil
}

// DecompositionPrompt is the block for a decomposition prompt: the
// patterns that are not anti-patterns, by maturity at now
// (formatPatternsWithMaturityForPrompt), then the anti-patterns. Proven
// lists the proven patterns' contents; Excluded the deprecated and
// inverted ones (multiplier 0 or AVOID). Under the evidence policy each
// label carries its evidence, Tentative lists the excluded patterns whose
// verdict is tentative and which could still beat the recommended ones
// (success-rate interval reaching the best success rate among them, and at
// least 1 − maturity.deprecationThreshold), and (ExplorationShare > 0)
// an Exploration section recommends spending that share of decompositions
// on them.
type DecompositionPrompt struct {
	Text             string   `json:"text"`
	Proven           []string `json:"proven"`
	Excluded         []string `json:"excluded"`
	Tentative        []string `json:"tentative"`
	ExplorationShare float64  `json:"exploration_share"`
	Policy           string   `json:"policy"`
}

// Decomposition builds the decomposition prompt block at now.
func (m *Model) Decomposition(r projector.Reader, proj string, now time.Time) (DecompositionPrompt, error) {
	cfg, err := m.ConfigAt(r)
	if err != nil {
		return DecompositionPrompt{}, err
	}
	views, err := m.Patterns(r, proj, now, "")
	if err != nil {
		return DecompositionPrompt{}, err
	}
	ec := cfg.Evidence
	evidence := ec.Policy == PolicyEvidence
	out := DecompositionPrompt{Proven: []string{}, Excluded: []string{}, Tentative: []string{}, Policy: ec.Policy}
	var withMat []ContentMaturity
	bar := explorationBar(views, cfg)
	for _, v := range views {
		excluded := v.Inverted || v.State == Deprecated
		if excluded {
			out.Excluded = append(out.Excluded, v.Content)
			// Worth exploring: the verdict is tentative and the pattern
			// could still beat what the prompt recommends (its interval
			// reaches the bar). An exclusion that is tentative only between
			// "bad" and "mediocre" would not change a choice.
			if v.Tentative && v.Evidence.High >= bar {
				out.Tentative = append(out.Tentative, v.Content)
			}
		}
		if v.Inverted {
			continue
		}
		if v.State == Proven {
			out.Proven = append(out.Proven, v.Content)
		}
		cm := ContentMaturity{Content: v.Content, Maturity: Maturity{PatternID: v.ID, State: v.State,
			HelpfulCount: v.HelpfulCount, HarmfulCount: v.HarmfulCount}}
		if evidence && v.Evidence.Observations > 0 {
			cm.Note = v.Evidence.SuccessPhrase()
		}
		withMat = append(withMat, cm)
	}
	_, anti, err := m.AntiPatterns(r, proj, now)
	if err != nil {
		return out, err
	}
	parts := []string{}
	if s := FormatPatternsWithMaturityForPrompt(withMat); s != "" {
		parts = append(parts, s+"\n")
	}
	if anti != "" {
		parts = append(parts, anti)
	}
	if evidence && ec.ExplorationShare > 0 && len(out.Tentative) > 0 {
		out.ExplorationShare = ec.ExplorationShare
		parts = append(parts, FormatExplorationForPrompt(out.Tentative, ec.ExplorationShare))
	}
	for i, p := range parts {
		if i > 0 {
			out.Text += "\n"
		}
		out.Text += p
	}
	return out, nil
}

// explorationBar is the success rate an excluded pattern's interval must
// reach to be worth exploring: the best decayed success rate among the
// patterns the prompt recommends (proven or established, not inverted),
// and at least the line under which maturity deprecates. A candidate whose
// optimistic bound stays under the incumbent's estimate could not improve
// a choice (measured against the incumbent's lower bound instead, the
// exploration costs more and corrects no more: docs/simulate.md).
func explorationBar(views []PatternView, cfg Config) float64 {
	bar := 1 - cfg.Maturity.DeprecationThreshold
	for _, v := range views {
		if !v.Inverted && (v.State == Proven || v.State == Established) && v.Evidence.SuccessRate > bar {
			bar = v.Evidence.SuccessRate
		}
	}
	return bar
}

// FormatExplorationForPrompt recommends spending a bounded share of
// decompositions on excluded patterns whose verdict is tentative, so that a
// verdict made on thin evidence can be confirmed or corrected.
func FormatExplorationForPrompt(tentative []string, share float64) string {
	lines := make([]string, 0, len(tentative))
	for _, c := range tentative {
		lines = append(lines, "- "+promptline.Line(c))
	}
	return "## Exploration\n\nThese verdicts rest on too little evidence to be final. In about " + pct(share) +
		"% of decompositions, try one of them so the evidence can confirm or correct the verdict:\n\n" +
		strings.Join(lines, "\n") + "\n"
}

// BeadErrors returns a bead's errors in recording order.
func (m *Model) BeadErrors(r projector.Reader, proj, bead string) ([]ErrorEntry, error) {
	var out []ErrorEntry
	err := r.Scan(append(key(kError, proj, bead), 0), func(k, v []byte) error {
		var e ErrorEntry
		if err := e.decode(newDec(v)); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// ErrorContext is getErrorContext for a bead.
func (m *Model) ErrorContext(r projector.Reader, proj, bead string, includeResolved bool) (string, error) {
	es, err := m.BeadErrors(r, proj, bead)
	if err != nil {
		return "", err
	}
	return ErrorContext(es, includeResolved), nil
}

// ErrorStats is getErrorStats for a bead (zeros when it has no errors).
func (m *Model) ErrorStats(r projector.Reader, proj, bead string) (ErrorStats, error) {
	var b beadRec
	if _, err := get(r, key(kBead, proj, bead), &b); err != nil {
		return ErrorStats{}, err
	}
	if b.Stats.ByType == nil {
		b.Stats.ByType = ByType{}
	}
	return b.Stats, nil
}

// LastOutcome is how the bead's newest outcome was scored (nil when none).
func (m *Model) LastOutcome(r projector.Reader, proj, bead string) (*OutcomeView, error) {
	var b beadRec
	_, err := get(r, key(kBead, proj, bead), &b)
	return b.LastOutcome, err
}

// Outcome is how the outcome appended as event eventID was scored by the
// fold (ok false until that event is folded).
func (m *Model) Outcome(r projector.Reader, proj, eventID string) (o *OutcomeView, ok bool, err error) {
	raw, ok, err := r.Get(key(kOutcome, proj, eventID))
	if err != nil || !ok {
		return nil, false, err
	}
	o = new(OutcomeView)
	if err := json.Unmarshal(raw, o); err != nil {
		return nil, false, fmt.Errorf("decode outcome %s: %w", eventID, err)
	}
	return o, true, nil
}

// ErrorBead returns the bead an error id belongs to and whether it is
// resolved; found is false for an unknown id.
func (m *Model) ErrorBead(r projector.Reader, proj, errorID string) (bead string, resolved, found bool, err error) {
	ref, ok, err := r.Get(key(kErrorID, proj, errorID))
	if err != nil || !ok {
		return "", false, false, err
	}
	b, seq, ok := cutNul(ref)
	if !ok {
		return "", false, false, nil
	}
	var e ErrorEntry
	if _, err := get(r, key(kError, proj, b, seq), &e); err != nil {
		return "", false, false, err
	}
	return b, e.Resolved, true, nil
}

// PatternsByTag is getByTag: the project's patterns at now that carry tag
// (exact match), in Patterns' order; state filters when set.
func (m *Model) PatternsByTag(r projector.Reader, proj string, now time.Time, state MaturityState, tag string) ([]PatternView, error) {
	ps, err := m.Patterns(r, proj, now, state)
	if err != nil {
		return nil, err
	}
	out := make([]PatternView, 0, len(ps))
	for _, p := range ps {
		if slices.Contains(p.Tags, tag) {
			out = append(out, p)
		}
	}
	return out, nil
}

// BeadErrorEntries is ErrorStorage's getByBead (all) or
// getUnresolvedByBead (unresolvedOnly): a bead's raw error entries, ids
// included, in recording order; never nil.
func (m *Model) BeadErrorEntries(r projector.Reader, proj, bead string, unresolvedOnly bool) ([]ErrorEntry, error) {
	es, err := m.BeadErrors(r, proj, bead)
	if err != nil {
		return nil, err
	}
	out := make([]ErrorEntry, 0, len(es))
	for _, e := range es {
		if !unresolvedOnly || !e.Resolved {
			out = append(out, e)
		}
	}
	return out, nil
}
