package knowledge

import (
	"sort"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/safety"
)

// RescanReasonPrefix starts the quarantine reason of a rescan.
const RescanReasonPrefix = "rescan: "

// RescanHit is one entry a rescan quarantines.
type RescanHit struct {
	ID      string `json:"id"`
	Tier    string `json:"tier"`
	Project string `json:"project,omitempty"`
	Reason  string `json:"reason"`
}

// RescanReport counts what a rescan checked and what it quarantines.
type RescanReport struct {
	Scanned     int            `json:"scanned"`
	Quarantined int            `json:"quarantined"`
	ByReason    map[string]int `json:"by_reason"`
	Entries     []RescanHit    `json:"entries"`
}

// RescanCheck is the verdict of the current content-safety rules (layer 2)
// on a stored entry: the rule's reason, or "" when the entry passes.
// Structural and semantic findings are not a rescan's business.
func RescanCheck(e *Entry) string {
	res := Validate(e.Lesson, nil, Meta{Category: e.Category, Scope: e.Scope, Confidence: e.Confidence})
	if !res.Valid && res.Layer == LayerSafety {
		return res.Reason
	}
	return ""
}

// Rescan checks every stored entry that is not quarantined (every
// project's swarm store and the hive, archived ones included: they can come
// back) and reports those the current rules reject, in id order. It is
// pure: the fold of knowledge.rescanned/v1 quarantines exactly these.
func Rescan(r projector.Reader) (RescanReport, []*Entry, error) {
	rep := RescanReport{ByReason: map[string]int{}, Entries: []RescanHit{}}
	var hits []*Entry
	for _, load := range []func(projector.Reader) ([]*Entry, error){AllSwarmEntries, HiveEntries} {
		es, err := load(r)
		if err != nil {
			return rep, nil, err
		}
		for _, e := range es {
			if e.Status == StatusQuarantined {
				continue
			}
			rep.Scanned++
			if reason := RescanCheck(e); reason != "" {
				hits = append(hits, e)
				rep.Quarantined++
				rep.ByReason[reason]++
				rep.Entries = append(rep.Entries, RescanHit{ID: e.ID, Tier: e.Tier, Project: e.Project, Reason: reason})
			}
		}
	}
	sort.Slice(rep.Entries, func(i, j int) bool { return rep.Entries[i].ID < rep.Entries[j].ID })
	sort.Slice(hits, func(i, j int) bool { return hits[i].ID < hits[j].ID })
	return rep, hits, nil
}

// rescanned quarantines the entries the current rules reject. A lesson
// holding a credential is redacted in the entry too, so the store keeps no
// secret from before the rules existed.
func (f *fold) rescanned(d *events.KnowledgeRescanned) error {
	_, hits, err := Rescan(f.tx)
	if err != nil {
		return err
	}
	for _, e := range hits {
		reason := RescanReasonPrefix + RescanCheck(e)
		if d.Reason != "" {
			reason += " (" + d.Reason + ")"
		}
		e.Lesson, _ = safety.Redact(e.Lesson)
		rec, changed := Quarantine(e, reason, "rescan", f.t)
		if !changed {
			continue
		}
		rec.EventID = f.ev.ID
		if err := saveEntry(f.tx, e); err != nil {
			return err
		}
		if err := putJSON(f.tx, pfxReject+e.ID, &rec); err != nil {
			return err
		}
	}
	return nil
}
