package crossloop

import (
	"errors"
	"fmt"
	"sort"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// ModelName is the read model's name and key prefix. NB: must not change.
const ModelName = "crossloop"

// Model folds loop and registry events into the pattern registry.
type Model struct {
	cfg     Config
	filters *filterPool // filters of merge lists present (mergefilter.go)
}

// New returns the model with cfg (zero values take the defaults).
func New(cfg Config) *Model {
	cfg.setDefaults()
	cfg.postings = newPostingCache(DefaultCacheBudget)
	return &Model{cfg: cfg, filters: &filterPool{}}
}

// Config is the model's configuration (defaults filled in).
func (m *Model) Config() Config { return m.cfg }

func (m *Model) Name() string { return ModelName }

// Version 3: growing lists (trend, lineage, iterations) stored one key per
// entry, merge lists carrying signatures, scoring records, postings
// carrying a scoring header (store.go, index.go). Version 5: a term's
// postings packed in chunks (index.go). Version 6: a term's record
// carries the fingerprint of its postings (termDF). Version 7: new
// postings go to a tail key of the last chunk (index.go).
// Version 9: a loop records whether it was started (loopHead.Begun); a
// completion of a loop never started is refused. Version 10: archived
// patterns keep merge lists of their own (archive.go); the configuration
// is folded from crossloop.configured/v1 (cfg). Version 11: imported
// patterns keep the figures their file states (rate_stated, fractional
// iteration sums, trend, times) and are known by content (imp/). Version
// 12: a signature is stored once per pattern, not in each merge list
// entry, and signatures of up to 64 bigrams are indexed under pairs
// (mergelist.go). Version 13: a merge list entry carries a 128-bit
// sketch of its signature's bigrams, which bounds the bigrams it shares
// with another (mergelist.go), and the store records the fingerprint of
// its set of merge lists (ix/mk, mergefilter.go); a term's fingerprint
// sums xxHash64 and FNV-1a lanes instead of SHA-256 ones (postings.go).
// Version 14: an iteration, an application or an injection of a loop
// never started is refused as its completion is (begun).
func (m *Model) Version() int { return 14 }

// errPoison marks fold errors caused by the event itself.
var errPoison = errors.New("crossloop")

// Folds implements projector.TypedModel: the kinds handler knows.
func (m *Model) Folds(data events.Payload) bool { return handler(data) != nil }

// handler is the fold of an event of data's kind (nil: the model folds
// nothing of that kind).
func handler(data events.Payload) func(f *folder) error {
	switch d := data.(type) {
	case *events.LoopStarted:
		return func(f *folder) error { return f.started(d) }
	case *events.LoopIteration:
		return func(f *folder) error { return f.iteration(d) }
	case *events.LoopCompleted:
		return func(f *folder) error { return f.completed(d) }
	case *events.PatternApplied:
		return func(f *folder) error { return f.applied(d) }
	case *events.LoopInjected:
		return func(f *folder) error { return f.injected(d) }
	case *events.ExtractRequested:
		return func(f *folder) error { return f.extractRequested(d) }
	case *events.RegistryPruned:
		return func(f *folder) error { return f.pruned(d) }
	case *events.RegistryImported:
		return func(f *folder) error { return f.imported(d) }
	case *events.CrossloopConfigured:
		return func(f *folder) error { return f.configured(d) }
	}
	return nil
}

// Fold implements projector.Model. Deterministic: ids are allocated from
// per-type counters in fold order; the only clock is ev.Time.
func (m *Model) Fold(tx projector.Tx, ev *events.Event, data events.Payload) (err error) {
	h := handler(data)
	if h == nil {
		return nil
	}
	f := &folder{m: m, tx: tx, ev: ev, t: ev.Time.UTC(), mm: memo{cache: m.cfg.postings}}
	f.mm.filter.pool = m.filters
	defer func() { f.mm.release(err == nil) }()
	err = h(f)
	if err == nil {
		err = f.confErr
	}
	if err != nil {
		return err
	}
	if err := f.mm.flush(f.tx); err != nil {
		return err
	}
	if f.st != nil {
		if f.t.After(f.st.Updated) {
			f.st.Updated = f.t
		}
		return f.putJSON([]byte(keyStats), f.st)
	}
	return nil
}

// cfg is the configuration the event folds with: the one the last
// crossloop.configured/v1 set, else the Model's base (read once per event;
// a read error is returned by Fold).
func (f *folder) cfg() Config {
	if f.conf == nil {
		c, err := LoadConfig(f.tx, f.m.cfg)
		if err != nil && f.confErr == nil {
			f.confErr = err
		}
		f.conf = &c
	}
	return *f.conf
}

type folder struct {
	mm memo // text analysis of this event
	m  *Model
	tx projector.Tx
	ev *events.Event
	t  time.Time
	st *Stats // loaded lazily; written back when loaded

	conf    *Config // loaded lazily (cfg)
	confErr error
}

func (f *folder) stats() (*Stats, error) {
	if f.st == nil {
		st, err := LoadStats(f.tx)
		if err != nil {
			return nil, err
		}
		f.st = st
	}
	return f.st, nil
}

func (f *folder) putJSON(k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	return f.tx.Set(k, raw)
}

// loop reads a loop's head (iterations not loaded); a loop never seen
// starts at the event's time.
func (f *folder) loop(id string) (*loopHead, error) {
	l, ok, err := loadLoopHead(f.tx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		l = &loopHead{Loop: Loop{ID: id, Started: f.t}}
	}
	return l, nil
}

// begun is the head of a started loop; a loop never started (a mistyped
// id, an event published before its loop's start) is refused: poison,
// the raw door's equivalent of the command's 404. Nothing is recorded on
// a loop no one started, so no loop runs forever without a task.
func (f *folder) begun(id string) (*loopHead, error) {
	l, ok, err := loadLoopHead(f.tx, id)
	if err != nil {
		return nil, err
	}
	if !ok || !l.Begun {
		return nil, fmt.Errorf("%w: field \"data.loop_id\": %v", errPoison, ErrLoopNotStarted(id))
	}
	return l, nil
}

func (f *folder) started(d *events.LoopStarted) error {
	l, err := f.loop(d.LoopID)
	if err != nil {
		return err
	}
	l.Task, l.Category, l.Agent, l.Started, l.Begun = d.Task, d.Category, d.Agent, f.t, true
	if l.Agent == "" {
		l.Agent = f.ev.Source
	}
	return saveLoopHead(f.tx, l)
}

// iteration stores the iteration under its number (replacing one of the
// same number): the loop's other iterations are neither read nor rewritten.
func (f *folder) iteration(d *events.LoopIteration) error {
	l, err := f.begun(d.LoopID)
	if err != nil {
		return err
	}
	it := Iteration{N: d.Iteration, ErrorType: d.ErrorType, ErrorMessage: d.ErrorMessage, Location: d.Location,
		FixDescription: d.FixDescription, FixDiff: d.FixDiff, TestsPassed: d.TestsPassed, TestsFailed: d.TestsFailed,
		Tools: d.ToolsUsed, FilesChanged: d.FilesChanged, Agent: d.Agent, Time: f.t}
	if err := putIteration(f.tx, l, &it); err != nil {
		return err
	}
	return saveLoopHead(f.tx, l)
}

// completed ends a begun loop; a completion of a loop never started is
// refused (poison: the raw door's equivalent of the command's 404), so it
// is never counted in the metrics.
func (f *folder) completed(d *events.LoopCompleted) error {
	l, err := f.begun(d.LoopID)
	if err != nil {
		return err
	}
	if err := loadIterations(f.tx, l); err != nil {
		return err
	}
	l.Outcome, l.Completed, l.NIterations = d.Outcome, f.t, d.Iterations
	l.FailureMode, l.Approach = d.FailureMode, d.Approach
	st, err := f.stats()
	if err != nil {
		return err
	}
	if !l.Counted {
		l.Counted = true
		c := st.Categories[l.Category]
		if c == nil {
			c = &Cat{}
			st.Categories[l.Category] = c
		}
		if len(l.Injected) > 0 {
			c.With++
			c.WithIter += l.IterationCount()
		} else {
			c.Without++
			c.WithoutIter += l.IterationCount()
		}
	}
	if f.cfg().extractOn(true) {
		if err := f.extract(l, nil); err != nil {
			return err
		}
	}
	return saveLoopHead(f.tx, l)
}

// extract upserts what a loop teaches; its iterations must be loaded.
func (f *folder) extract(l *loopHead, types map[string]bool) error {
	for _, c := range Extract(&l.Loop, ExtractOptions{Types: types, Templates: f.cfg().templates()}) {
		if err := f.upsert(l, c); err != nil {
			return err
		}
	}
	return nil
}

func (f *folder) agentOf(l *loopHead) (string, error) {
	if l.Agent != "" {
		return l.Agent, nil
	}
	if l.Iterations == nil && len(l.Ns) > 0 {
		if err := loadIterations(f.tx, l); err != nil {
			return "", err
		}
	}
	for i := len(l.Iterations) - 1; i >= 0; i-- {
		if l.Iterations[i].Agent != "" {
			return l.Iterations[i].Agent, nil
		}
	}
	return f.ev.Source, nil
}

// mergeTarget is the pattern a signature merges into: among the active
// patterns of its type more than the threshold similar, the most similar
// one, ties to the smaller id; with first, the first one in candidate
// order (mergeMatches). "" when none.
func (f *folder) mergeTarget(typ, sig string, first bool) (string, error) {
	ms, err := mergeMatches(f.tx, typ, sig, f.cfg().SimilarityThreshold, &f.mm)
	if err != nil || len(ms) == 0 {
		return "", err
	}
	if !f.cfg().mergeSimilar() { // only identical signatures are the same pattern
		same := ms[:0]
		for _, m := range ms {
			if m.sim >= 1 {
				same = append(same, m)
			}
		}
		if ms = same; len(ms) == 0 {
			return "", nil
		}
	}
	if first {
		return ms[0].id, nil
	}
	best := ms[0]
	for _, m := range ms[1:] {
		if m.sim > best.sim || (m.sim == best.sim && m.id < best.id) {
			best = m
		}
	}
	return best.id, nil
}

// upsert merges a candidate into the most similar active pattern of its
// type (similarity > threshold), else into the most similar archived one
// (a pruned pattern's signature stays known: the archived record is
// reinforced, and restored when the prune rule no longer holds), or adds
// it with a new id.
func (f *folder) upsert(l *loopHead, c Candidate) error {
	st, err := f.stats()
	if err != nil {
		return err
	}
	th := f.cfg().SimilarityThreshold
	bestID, archived, err := f.knownTarget(c.Pattern.Type, c.Pattern.Signature(), false)
	if err != nil {
		return err
	}
	agent, err := f.agentOf(l)
	if err != nil {
		return err
	}
	if bestID != "" {
		best, ok, err := loadHead(f.tx, bestID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("merge candidate %s has no pattern", bestID)
		}
		known, err := hasLoop(f.tx, best, l.ID)
		if err != nil || known {
			return err // known: this loop already counted here (re-extraction)
		}
		recordKnown(&best.Pattern, false, l.ID, agent, RoleMerged, best.Type != TypeAnti, f.t) // Merge
		annotate(&best.Pattern, &l.Loop, &c.Pattern)
		tags := MergeTags(best.Tags, c.Pattern.Tags)
		reindex := len(tags) != len(best.Tags) && !archived
		best.Tags = tags
		if reindex {
			if err := indexPattern(f.tx, st, &best.Pattern, th, &f.mm, false); err != nil {
				return err
			}
		}
		restored := false
		if archived {
			if restored, err = f.reconsider(st, best, l.ID); err != nil {
				return err
			}
		}
		l.Extracted = append(l.Extracted, Extracted{PatternID: best.ID, Archived: best.Archived, Restored: restored})
		f.emitExtracted(&best.Pattern, l.ID, false)
		return savePattern(f.tx, best, !reindex && !restored && !best.Archived, &f.mm)
	}
	p := &patternHead{Pattern: c.Pattern}
	st.Counters[p.Type]++
	p.ID = PatternID(p.Type, c.Slug, st.Counters[p.Type])
	sort.Strings(p.Tags)
	Discover(&p.Pattern, l.ID, agent, f.t)
	annotate(&p.Pattern, &l.Loop, &c.Pattern)
	st.ByType[p.Type]++
	if err := indexPattern(f.tx, st, &p.Pattern, th, &f.mm, true); err != nil { // a new id
		return err
	}
	l.Extracted = append(l.Extracted, Extracted{PatternID: p.ID, New: true})
	f.emitExtracted(&p.Pattern, l.ID, true)
	return savePattern(f.tx, p, false, &f.mm)
}

// annotate completes the newest lineage entry with the loop's details and
// aggregates a success pattern's iteration counts.
func annotate(p *Pattern, l *Loop, c *Pattern) {
	if n := len(p.SourceLoops); n > 0 && p.SourceLoops[n-1].LoopID == l.ID {
		s := &p.SourceLoops[n-1]
		s.Outcome, s.Iterations = l.Outcome, l.IterationCount()
		if p.Type == TypeAnti && l.Outcome != OutcomeSuccess {
			s.FailureIteration = l.IterationCount()
		}
	}
	if p.Type == TypeSuccess && p.IterationsN > 0 && c.IterationsN > 0 && p != c {
		if p.SourceLoops[len(p.SourceLoops)-1].Role == RoleMerged {
			p.IterationsSum += c.IterationsSum
			p.IterationsN += c.IterationsN
			if c.IterationsMin < p.IterationsMin {
				p.IterationsMin = c.IterationsMin
			}
			if c.IterationsMax > p.IterationsMax {
				p.IterationsMax = c.IterationsMax
			}
		}
	}
}

func (f *folder) emitExtracted(p *Pattern, loopID string, isNew bool) {
	f.tx.Emit(projector.Derived{Type: "registry.pattern_extracted/v1", Project: f.ev.Project, Subject: p.ID,
		Key: p.ID, Data: events.PatternExtracted{PatternID: p.ID, Type: p.Type, LoopID: loopID, New: isNew}})
}

func (f *folder) applied(d *events.PatternApplied) error {
	p, ok, err := loadHead(f.tx, d.PatternID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: field \"data.pattern_id\": unknown pattern %q", errPoison, d.PatternID)
	}
	l, err := f.begun(d.LoopID)
	if err != nil {
		return err
	}
	agent := d.Agent
	if agent == "" {
		if agent, err = f.agentOf(l); err != nil {
			return err
		}
	}
	known := false
	if d.LoopID != "" {
		if known, err = hasLoop(f.tx, p, d.LoopID); err != nil {
			return err
		}
	}
	recordKnown(&p.Pattern, known, d.LoopID, agent, RoleApplied, d.Success, f.t) // Apply
	l.Applied = append(l.Applied, Application{PatternID: d.PatternID, Success: d.Success, Iteration: d.Iteration})
	st, err := f.stats()
	if err != nil {
		return err
	}
	if d.Success {
		st.Successful++
	} else {
		st.Failed++
	}
	if err := saveLoopHead(f.tx, l); err != nil {
		return err
	}
	restored, err := f.reconsider(st, p, d.LoopID) // an archived pattern applied again
	if err != nil {
		return err
	}
	return savePattern(f.tx, p, !restored, &f.mm)
}

func (f *folder) injected(d *events.LoopInjected) error {
	l, err := f.begun(d.LoopID)
	if err != nil {
		return err
	}
	l.Injected = uniq(append(l.Injected, d.PatternIDs...))
	return saveLoopHead(f.tx, l)
}

func (f *folder) extractRequested(d *events.ExtractRequested) error {
	if !f.cfg().extractOn(false) {
		return nil // extraction disabled: the request extracts nothing
	}
	var types map[string]bool
	if len(d.Types) > 0 {
		types = map[string]bool{}
		for _, t := range d.Types {
			types[t] = true
		}
	}
	if !d.All {
		l, ok, err := loadLoopHead(f.tx, d.LoopID)
		if err != nil || !ok || l.Outcome == "" {
			return err // unknown or running loop: nothing to extract
		}
		if err := loadIterations(f.tx, l); err != nil {
			return err
		}
		if err := f.extract(l, types); err != nil {
			return err
		}
		return saveLoopHead(f.tx, l)
	}
	var loops []*loopHead
	err := f.tx.Scan([]byte(prefLoop), func(_, v []byte) error {
		var l loopHead
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("decode loop: %w", err)
		}
		if l.Outcome != "" {
			loops = append(loops, &l)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(loops, func(i, j int) bool {
		if !loops[i].Completed.Equal(loops[j].Completed) {
			return loops[i].Completed.Before(loops[j].Completed)
		}
		return loops[i].ID < loops[j].ID
	})
	for _, l := range loops {
		if err := loadIterations(f.tx, l); err != nil {
			return err
		}
		if err := f.extract(l, types); err != nil {
			return err
		}
		if err := saveLoopHead(f.tx, l); err != nil {
			return err
		}
	}
	return nil
}

func (f *folder) pruned(d *events.RegistryPruned) error {
	st, err := f.stats()
	if err != nil {
		return err
	}
	for _, pp := range d.Patterns {
		p, ok, err := loadHead(f.tx, pp.PatternID)
		if err != nil {
			return err
		}
		if !ok || p.Archived {
			continue
		}
		p.Archived, p.ArchiveMonth, p.ArchiveReason = true, d.Month, pp.Reason
		if err := unindexPattern(f.tx, st, p.ID, &f.mm); err != nil {
			return err
		}
		if err := indexArchived(f.tx, &p.Pattern, f.cfg().SimilarityThreshold, &f.mm); err != nil {
			return err
		}
		st.ByType[p.Type]--
		st.Archived++
		f.tx.Emit(projector.Derived{Type: "registry.pattern_archived/v1", Project: f.ev.Project, Subject: p.ID,
			Key: p.ID, Data: events.PatternArchived{PatternID: p.ID, Month: d.Month, Reason: pp.Reason}})
		if err := savePattern(f.tx, p, false, &f.mm); err != nil { // archived: unindexed
			return err
		}
	}
	return nil
}

func (f *folder) imported(d *events.RegistryImported) error {
	st, err := f.stats()
	if err != nil {
		return err
	}
	th := f.cfg().SimilarityThreshold
	for i, raw := range d.Patterns {
		var p Pattern
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%w: field \"data.patterns.%d\": %v", errPoison, i, err)
		}
		typ, n, ok := ParsePatternID(p.ID)
		if !ok || typ != p.Type {
			return fmt.Errorf("%w: field \"data.patterns.%d.pattern_id\": %q is not a %s pattern id", errPoison, i, p.ID, p.Type)
		}
		if n > st.Counters[typ] {
			st.Counters[typ] = n
		}
		dg, err := ImportDigest(&p)
		if err != nil {
			return err
		}
		if known, err := ImportKnownDigest(f.tx, p.ID, dg); err != nil {
			return err
		} else if known {
			continue // imported before, or the registry holds its id
		}
		if err := f.tx.Set([]byte(prefImported+dg), nil); err != nil {
			return err
		}
		if !p.Archived {
			merged, err := f.mergeImported(st, &p)
			if err != nil {
				return err
			}
			if merged {
				continue // aggregated into a similar pattern; the rest still folds
			}
		}
		if p.Archived {
			st.Archived++
			if err := indexArchived(f.tx, &p, th, &f.mm); err != nil {
				return err
			}
		} else {
			st.ByType[p.Type]++
			if err := indexPattern(f.tx, st, &p, th, &f.mm, true); err != nil { // an id not stored
				return err
			}
		}
		if err := savePattern(f.tx, &patternHead{Pattern: p}, false, &f.mm); err != nil {
			return err
		}
	}
	return nil
}

// mergeImported aggregates an imported pattern into a similar active one
// (counts add, lineage unions); it reports whether it did.
func (f *folder) mergeImported(st *Stats, p *Pattern) (bool, error) {
	th := f.cfg().SimilarityThreshold
	id, archived, err := f.knownTarget(p.Type, p.Signature(), true)
	if err != nil || id == "" {
		return false, err
	}
	q, ok, err := loadHead(f.tx, id)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("merge candidate %s has no pattern", id)
	}
	q.Successful += p.Successful
	q.Failed += p.Failed
	q.UsageCount += p.UsageCount
	q.SuccessRate = SuccessRate(q.Successful, q.Failed)
	q.RateStated, q.StatedFailureRate = false, 0
	for _, s := range p.SourceLoops {
		known, err := hasLoop(f.tx, q, s.LoopID)
		if err != nil {
			return false, err
		}
		if !known {
			q.SourceLoops = append(q.SourceLoops, s)
		}
	}
	if p.LastUsed.After(q.LastUsed) {
		q.LastUsed = p.LastUsed
	}
	q.Trend = append(q.Trend, TrendPoint{Timestamp: f.t, SuccessRate: q.SuccessRate, SampleSize: q.Successful + q.Failed})
	q.Tags = MergeTags(q.Tags, p.Tags)
	if archived {
		if _, err := f.reconsider(st, q, "import"); err != nil {
			return false, err
		}
		return true, savePattern(f.tx, q, false, &f.mm)
	}
	if err := indexPattern(f.tx, st, &q.Pattern, th, &f.mm, false); err != nil {
		return false, err
	}
	return true, savePattern(f.tx, q, false, &f.mm)
}
