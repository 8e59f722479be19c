package knowledge

import "time"

// Sweep (SPEC §5), run at every phase.completed on both tiers: every entry
// that is neither archived nor promoted (nor evergreen) ages by one phase,
// quarantined ones too; past its max_phases it is archived (reason ttl).
// Then todo entries past todo_max_phases are removed from view: archived
// with reason ttl-todo, still in the log.

// SweepResult counts what a sweep did, as the reference reports it.
type SweepResult struct {
	Scanned         int `json:"scanned"`
	Aged            int `json:"aged"`
	Archived        int `json:"archived"`
	Removed         int `json:"removed"`
	SkippedPromoted int `json:"skipped_promoted"`
	// SkippedEvergreen counts evergreen entries, which survive sweeps.
	SkippedEvergreen int `json:"skipped_evergreen"`
	// Changed lists the entries the sweep modified, in input order.
	Changed []*Entry `json:"-"`
	// ArchivedIDs and RemovedIDs list the transitions to announce.
	ArchivedIDs []string `json:"-"`
	RemovedIDs  []string `json:"-"`
}

// SweepAged ages entries and archives those past their TTL (per-entry
// max_phases, else defaultMax).
func SweepAged(entries []*Entry, defaultMax int, now time.Time, cfg Config) SweepResult {
	var r SweepResult
	for _, e := range entries {
		r.Scanned++
		switch {
		case e.Status == StatusArchived:
			continue
		case e.Status == StatusPromoted:
			r.SkippedPromoted++
			continue
		case Evergreen(e, cfg):
			r.SkippedEvergreen++
			continue
		}
		e.PhasesAlive++
		r.Aged++
		r.Changed = append(r.Changed, e)
		limit := e.MaxPhases
		if limit <= 0 {
			limit = defaultMax
		}
		if e.PhasesAlive > limit {
			Archive(e, ArchiveTTL, now)
			r.Archived++
			r.ArchivedIDs = append(r.ArchivedIDs, e.ID)
		}
	}
	return r
}

// SweepTodos removes from view every todo entry (archived ones included)
// that is not promoted and has lived more than todoMax phases.
func SweepTodos(entries []*Entry, todoMax int, now time.Time) SweepResult {
	var r SweepResult
	for _, e := range entries {
		r.Scanned++
		if e.Category != "todo" || e.Status == StatusPromoted || e.PhasesAlive <= todoMax || Removed(e) {
			continue
		}
		Archive(e, ArchiveTTLTodo, now)
		r.Removed++
		r.Changed = append(r.Changed, e)
		r.RemovedIDs = append(r.RemovedIDs, e.ID)
	}
	return r
}

// Removed reports an entry removed from view (a todo past its TTL).
func Removed(e *Entry) bool { return e.Status == StatusArchived && e.ArchiveReason == ArchiveTTLTodo }
