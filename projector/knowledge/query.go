package knowledge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/loredev/lore/projector"
)

// Queries of the knowledge read model. Quarantined entries are hidden unless
// asked for; entries removed from view (todo past TTL) only with All.

// ListOptions filter a listing.
type ListOptions struct {
	Project string `json:"project,omitempty"`
	// Tier: swarm, hive or "" for both.
	Tier     string `json:"tier,omitempty"`
	Status   string `json:"status,omitempty"`
	Category string `json:"category,omitempty"`
	Tag      string `json:"tag,omitempty"`
	// AllProjects lists the swarm entries of every project.
	AllProjects bool `json:"all_projects,omitempty"`
	// Archived includes archived entries; Quarantined includes quarantined
	// ones; All includes everything, removed todos too.
	Archived    bool `json:"archived,omitempty"`
	Quarantined bool `json:"quarantined,omitempty"`
	All         bool `json:"all,omitempty"`
	// Text keeps the entries whose lesson or id holds it, in any case.
	Text string `json:"text,omitempty"`
	// Offset skips this many matching entries of the listing's order;
	// Limit bounds how many are returned (0: all). A large store is read
	// page by page: its whole listing may not fit one reply.
	Offset int `json:"offset,omitempty"`
	Limit  int `json:"limit,omitempty"`
}

// ErrAmbiguous is returned when an id prefix matches several entries.
var ErrAmbiguous = errors.New("lore: ambiguous id prefix")

// ErrUnknown is returned when no entry has the id or prefix.
var ErrUnknown = errors.New("lore: unknown knowledge entry")

// List returns the entries matching o, hive first then swarm, each in
// creation order.
func List(r projector.Reader, o ListOptions) ([]*Entry, error) {
	var pool []*Entry
	if o.Tier == "" || o.Tier == TierHive {
		h, err := HiveEntries(r)
		if err != nil {
			return nil, err
		}
		pool = append(pool, h...)
	}
	if o.Tier == "" || o.Tier == TierSwarm {
		var s []*Entry
		var err error
		if o.AllProjects {
			s, err = AllSwarmEntries(r)
		} else {
			s, err = SwarmEntries(r, o.Project)
		}
		if err != nil {
			return nil, err
		}
		pool = append(pool, s...)
	}
	out := []*Entry{}
	skip := o.Offset
	text := strings.ToLower(o.Text)
	for _, e := range pool {
		if !visible(e, o) || (text != "" && !strings.Contains(strings.ToLower(e.Lesson), text) && !strings.Contains(strings.ToLower(e.ID), text)) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, e)
		if o.Limit > 0 && len(out) == o.Limit {
			break
		}
	}
	return out, nil
}

func visible(e *Entry, o ListOptions) bool {
	if o.Status != "" && e.Status != o.Status {
		return false
	}
	if o.Category != "" && e.Category != o.Category {
		return false
	}
	if o.Tag != "" && !e.hasTag(o.Tag) {
		return false
	}
	if o.All || o.Status != "" {
		return true
	}
	switch e.Status {
	case StatusArchived:
		return o.Archived && !Removed(e)
	case StatusQuarantined:
		return o.Quarantined
	}
	return true
}

// Find returns the entry with this id or unique id prefix.
func Find(r projector.Reader, idOrPrefix string) (*Entry, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("%w: empty id", ErrUnknown)
	}
	if e, ok, err := GetEntry(r, idOrPrefix); err != nil || ok {
		return e, err
	}
	ids, err := ResolveID(r, idOrPrefix, 5)
	if err != nil {
		return nil, err
	}
	switch len(ids) {
	case 0:
		return nil, fmt.Errorf("%w: %q", ErrUnknown, idOrPrefix)
	case 1:
		e, ok, err := GetEntry(r, ids[0])
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknown, idOrPrefix)
		}
		return e, nil
	}
	more := ""
	if len(ids) == 5 {
		more = ", ..."
	}
	return nil, fmt.Errorf("%w: %q matches %s%s", ErrAmbiguous, idOrPrefix, strings.Join(ids, ", "), more)
}

// Rejections lists the rejected read model, optionally for one project.
func Rejections(r projector.Reader, project string, limit int) ([]*Rejected, error) {
	all, err := RejectedRecords(r)
	if err != nil {
		return nil, err
	}
	out := []*Rejected{}
	for _, x := range all {
		if project != "" && x.Project != project {
			continue
		}
		out = append(out, x)
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// InjectFrom builds an injection from the read model. It reads only the
// summaries of the active entries of the project's swarm store and of the
// hive (summary.go): no JSON decode, no scan of other projects or of
// archived entries.
func InjectFrom(r projector.Reader, base Config, o InjectOptions, now time.Time) (Injection, error) {
	cfg, err := LoadConfig(r, base)
	if err != nil {
		return Injection{}, err
	}
	if !cfg.Enabled {
		return Injection{Budget: Budget{Regime: RegimeNone}, Headroom: o.Headroom, Task: o.Task, Entries: []Shown{}}, nil
	}
	swarm, err := activeSummaries(r, TierSwarm, o.Project)
	if err != nil {
		return Injection{}, err
	}
	var hive []*summary
	if cfg.HiveEnabled {
		if hive, err = activeSummaries(r, TierHive, ""); err != nil {
			return Injection{}, err
		}
	}
	return injectSummaries(swarm, hive, o, cfg), nil
}

// InjectFrom is the package's InjectFrom through the model's pool cache:
// the same injection, but a pool whose version the cache holds costs one
// Get instead of a scan and decode of its summaries, and the hive's dedup
// is done once per hive version. Safe for concurrent use, also while the
// model folds: each pool is read at one version (poolCache.active).
func (m *Model) InjectFrom(r projector.Reader, base Config, o InjectOptions, now time.Time) (Injection, error) {
	cfg, err := LoadConfig(r, base)
	if err != nil {
		return Injection{}, err
	}
	if !cfg.Enabled {
		return Injection{Budget: Budget{Regime: RegimeNone}, Headroom: o.Headroom, Task: o.Task, Entries: []Shown{}}, nil
	}
	// The swarm and the hive stay cached together (poolCache.store).
	swarmScope, hiveScope := sumScope(TierSwarm, o.Project), sumScope(TierHive, "")
	var with []string
	if cfg.HiveEnabled {
		with = []string{hiveScope}
	}
	swarm, err := m.cache.active(r, swarmScope, with...)
	if err != nil {
		return Injection{}, err
	}
	var hive *cachedPool
	if cfg.HiveEnabled {
		if hive, err = m.cache.active(r, hiveScope, swarmScope); err != nil {
			return Injection{}, err
		}
	}
	scopes := setOf(append(append([]string(nil), cfg.ScopeFilter...), o.Scopes...)...)
	return injectSet(m.cache.keptMerged(swarmScope, hive, swarm, scopes, cfg.DedupThreshold), o, cfg), nil
}

// CurationReport is what `lore knowledge curate` shows.
type CurationReport struct {
	Project string   `json:"project"`
	Entries int      `json:"entries"`
	Flagged []Health `json:"flagged"`
	// Evergreen lists entries that survive sweeps.
	Evergreen []Health `json:"evergreen"`
	// Eligible lists swarm entries that qualify for the hive now, by route.
	Eligible []Eligible `json:"eligible"`
}

// Eligible is a swarm entry a curation pass would promote.
type Eligible struct {
	ID     string `json:"id"`
	Lesson string `json:"lesson"`
	Route  string `json:"route"`
}

// Curation audits the active entries of a project and the hive.
func Curation(r projector.Reader, base Config, project string, now time.Time) (CurationReport, error) {
	cfg, err := LoadConfig(r, base)
	if err != nil {
		return CurationReport{}, err
	}
	es, err := List(r, ListOptions{Project: project})
	if err != nil {
		return CurationReport{}, err
	}
	rep := CurationReport{Project: project, Entries: len(es), Flagged: []Health{}, Evergreen: []Health{}, Eligible: []Eligible{}}
	for _, e := range es {
		h := EntryHealth(e, cfg)
		if h.Issue != "" {
			rep.Flagged = append(rep.Flagged, h)
		}
		if h.Evergreen {
			rep.Evergreen = append(rep.Evergreen, h)
		}
		if e.Tier == TierSwarm && e.PromotedTo == "" {
			if route := HiveRoute(e, now, cfg); route != "" {
				rep.Eligible = append(rep.Eligible, Eligible{ID: e.ID, Lesson: e.Lesson, Route: route})
			}
		}
	}
	return rep, nil
}

// Stats counts entries by tier and status.
type Stats struct {
	Swarm    map[string]int `json:"swarm"`
	Hive     map[string]int `json:"hive"`
	Rejected int            `json:"rejected"`
}

// Summary counts a project's swarm entries, the hive and the rejected model.
func Summary(r projector.Reader, project string) (Stats, error) {
	st := Stats{Swarm: map[string]int{}, Hive: map[string]int{}}
	es, err := List(r, ListOptions{Project: project, All: true})
	if err != nil {
		return st, err
	}
	for _, e := range es {
		s := e.Status
		if Removed(e) {
			s = "removed"
		}
		if e.Tier == TierHive {
			st.Hive[s]++
		} else {
			st.Swarm[s]++
		}
	}
	rj, err := Rejections(r, project, 0)
	st.Rejected = len(rj)
	return st, err
}
