package knowledge

import (
	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Folds of the commands on existing entries: quarantine, restore, outcomes,
// injections and manual promotions. Unknown ids change nothing.

func (f *fold) quarantined(d *events.KnowledgeQuarantined) error {
	e, ok, err := GetEntry(f.tx, d.EntryID)
	if err != nil || !ok {
		return err
	}
	by := d.ReportedBy
	if by == "" {
		by = f.ev.Source
	}
	rec, changed := Quarantine(e, d.Reason, by, f.t)
	if !changed {
		return nil
	}
	rec.EventID = f.ev.ID
	if err := saveEntry(f.tx, e); err != nil {
		return err
	}
	return putJSON(f.tx, pfxReject+e.ID, &rec)
}

func (f *fold) restored(d *events.KnowledgeRestored) error {
	e, ok, err := GetEntry(f.tx, d.EntryID)
	if err != nil || !ok || e.Status != StatusQuarantined {
		return err
	}
	var pool []*Entry
	if e.Tier == TierHive {
		pool, err = HiveEntries(f.tx)
	} else {
		pool, err = SwarmEntries(f.tx, e.Project)
	}
	if err != nil {
		return err
	}
	existing, refs := existingOf(pool, e.ID)
	res, ok := Restore(e, existing, f.cfg, f.t)
	if ok {
		for _, i := range res.Conflicts {
			e.Conflicts = appendOnce(e.Conflicts, refs[i].ID)
			refs[i].Conflicts = appendOnce(refs[i].Conflicts, e.ID)
			if err := saveEntry(f.tx, refs[i]); err != nil {
				return err
			}
		}
		raw, found, err := f.tx.Get([]byte(pfxReject + e.ID))
		if err != nil {
			return err
		}
		var rec Rejected
		if found && json.Unmarshal(raw, &rec) == nil && rec.Kind == RejectedQuarantine {
			if err := f.tx.Delete([]byte(pfxReject + e.ID)); err != nil {
				return err
			}
		}
	}
	return saveEntry(f.tx, e)
}

func (f *fold) outcome(d *events.KnowledgeOutcome) error {
	e, ok, err := GetEntry(f.tx, d.EntryID)
	if err != nil || !ok {
		return err
	}
	e.Outcomes = AddOutcome(e.Outcomes, d.Outcome)
	e.UpdatedAt = f.t
	return saveEntry(f.tx, e)
}

func (f *fold) injected(d *events.KnowledgeInjected) error {
	for _, id := range d.EntryIDs {
		e, ok, err := GetEntry(f.tx, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		e.Outcomes.Shown++
		e.Outcomes.LastShownAt = f.t
		if err := saveEntry(f.tx, e); err != nil {
			return err
		}
	}
	return nil
}

// ManualHiveID is the id of the hive entry a manual promotion of text makes.
func ManualHiveID(evID string) string { return DeriveID("hive-manual", evID) }

func (f *fold) promoted(d *events.KnowledgePromoted) error {
	if d.EntryID != "" {
		e, ok, err := GetEntry(f.tx, d.EntryID)
		if err != nil || !ok || e.Tier != TierSwarm || !e.Active() {
			return err
		}
		return f.promote(e, RouteManual)
	}
	project := orProject("", f.ev.Project)
	src := &Entry{ID: ManualHiveID(f.ev.ID), Tier: TierSwarm, Lesson: d.Lesson, Category: d.Category,
		Tags: append([]string{}, d.Tags...), Scope: d.Scope, Project: project, Status: StatusCandidate}
	if src.Category == "" {
		src.Category = "process"
	}
	if src.Scope == "" {
		src.Scope = "global"
	}
	hive, err := f.tx.scanPool(TierHive, "", cachedFeatures(src.Lesson, src.Tags, src.Category), f.cfg.DedupThreshold, true)
	if err != nil {
		return err
	}
	if hive.nearest() != "" {
		return nil // already in the hive
	}
	hid := src.ID
	if ok, err := has(f.tx, pfxIndex+hid); err != nil || ok {
		return err
	}
	if f.cfg.ValidationEnabled {
		res := Validate(src.Lesson, hive.shared, Meta{Category: src.Category, Scope: src.Scope, Confidence: 1, Tags: src.Tags})
		if !res.Valid {
			return f.reject(&Rejected{ID: hid, Tier: TierHive, Project: project, Lesson: src.Lesson,
				Category: src.Category, Tags: src.Tags, Reason: res.Reason, Layer: res.Layer, Kind: RejectedValidation})
		}
	}
	h := NewHiveEntry(src, hid, RouteManual, f.t, f.cfg)
	h.PromotedFrom, h.EventID, h.CreatedSeq, h.MaxPhases = "", f.ev.ID, f.tx.Seq(), f.cfg.DefaultMaxPhases
	if err := saveEntry(f.tx, &h); err != nil {
		return err
	}
	f.emit("knowledge.hive_promoted/v1", project, hid, "hive:"+hid, &events.KnowledgeHivePromoted{
		HiveID: hid, Route: RouteManual, SourceProject: project, Lesson: h.Lesson})
	return f.enforceCap(hive, &h, TierHive, project, f.cfg.HiveMaxEntries)
}

// merged merges entry d.EntryID into d.Into: both active entries of the
// same store (tier and project); otherwise nothing changes (the command
// refuses these before appending). The merged entry is archived (reason
// merged, never deleted); the other takes its confirmations (once per
// project and phase) and retrieval outcomes, is alive again, and takes a
// lifecycle step as a reinforced entry does.
func (f *fold) merged(d *events.KnowledgeMerged) error {
	x, okx, err := GetEntry(f.tx, d.EntryID)
	if err != nil {
		return err
	}
	y, oky, err := GetEntry(f.tx, d.Into)
	if err != nil || !okx || !oky || MergeRefusal(x, y) != "" {
		return err
	}
	for _, c := range x.ConfirmedBy {
		dup := false
		for _, o := range y.ConfirmedBy {
			if o.Project == c.Project && o.Phase == c.Phase {
				dup = true
				break
			}
		}
		if !dup {
			y.ConfirmedBy = append(y.ConfirmedBy, c)
		}
	}
	y.Outcomes.Shown += x.Outcomes.Shown
	y.Outcomes.Applied += x.Outcomes.Applied
	y.Outcomes.Helpful += x.Outcomes.Helpful
	y.Outcomes.Harmful += x.Outcomes.Harmful
	if x.Outcomes.LastShownAt.After(y.Outcomes.LastShownAt) {
		y.Outcomes.LastShownAt = x.Outcomes.LastShownAt
	}
	y.PhasesAlive, y.UpdatedAt = 0, f.t
	Archive(x, ArchiveMerged, f.t)
	x.MergedInto = y.ID
	if err := saveEntry(f.tx, x); err != nil {
		return err
	}
	if err := saveEntry(f.tx, y); err != nil {
		return err
	}
	if y.Tier == TierSwarm {
		return f.lifecycle(y)
	}
	return nil
}

// MergeRefusal says why x cannot be merged into y ("" when it can): both
// must be distinct active entries of the same store.
func MergeRefusal(x, y *Entry) string {
	switch {
	case x.ID == y.ID:
		return "an entry cannot be merged into itself"
	case x.Tier != y.Tier || x.Project != y.Project:
		return "entries of different stores (" + x.Tier + " " + x.Project + ", " + y.Tier + " " + y.Project + ")"
	case !x.Active():
		return "entry " + x.ID + " is " + x.Status
	case !y.Active():
		return "entry " + y.ID + " is " + y.Status
	}
	return ""
}
