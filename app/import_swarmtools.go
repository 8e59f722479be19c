package app

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/importer/swarmtools"
	"github.com/loredev/lore/projector/imported"
	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/projector/learning"
)

// The swarm-tools importer: lore.api.import.swarm_tools takes the rows a
// client read from swarm-tools' database and memories.jsonl (the files are
// on the client's machine) and converts them here, so every door converts
// and validates alike (importer/swarmtools.Convert, then each event's
// schema, then the folds: a memory goes through the knowledge validator).

func init() {
	Register(Endpoint{Group: "import", Name: "swarm_tools",
		Doc:  "import swarm-tools rows (events table: subtask_outcome, human_feedback, decomposition_generated, memory_*; memories table and .hive/memories.jsonl) with their original times; idempotent: a row imported before is skipped; replies counts, rejections and bad rows",
		Args: ImportSwarmToolsArgs{}, Command: importSwarmTools, Reply: importSwarmToolsReply})
}

// ImportSwarmToolsArgs are rows read from swarm-tools' files.
type ImportSwarmToolsArgs struct {
	// Project, when set, is the project of every event; otherwise an event
	// row's project is its project_key's base name and memories go to the
	// request's project.
	Project  string                 `json:"project,omitempty"`
	Events   []swarmtools.EventRow  `json:"events,omitempty"`
	Memories []swarmtools.MemoryRow `json:"memories,omitempty"`
	// DryRun converts and validates, appends nothing, and reports what an
	// import would do.
	DryRun bool `json:"dry_run,omitempty"`
}

// SwarmToolsRejected is a memory the knowledge validator refused.
type SwarmToolsRejected struct {
	Row     string `json:"row"`
	EventID string `json:"event_id"`
	ID      string `json:"id"`
	Layer   int    `json:"layer,omitempty"`
	Reason  string `json:"reason"`
}

// SwarmToolsMerged is a memory that confirmed an existing entry instead of
// adding one.
type SwarmToolsMerged struct {
	Row  string `json:"row"`
	Into string `json:"into"`
}

// SwarmToolsReport says what an import did with every row.
type SwarmToolsReport struct {
	DryRun bool `json:"dry_run,omitempty"`
	// Read counts rows read, by source kind (event type, "memories").
	Read map[string]int `json:"read"`
	// Imported counts rows imported, by lore kind (outcome, feedback,
	// decomposition, knowledge); a dry run counts what it would import.
	Imported map[string]int `json:"imported"`
	// Skipped counts rows imported before (nothing appended), by kind.
	Skipped map[string]int `json:"skipped"`
	// Rejected are memories the knowledge validator refused (kept in the
	// rejected read model, as any lesson).
	Rejected []SwarmToolsRejected `json:"rejected"`
	// Merged are memories that reinforced an existing entry.
	Merged []SwarmToolsMerged `json:"merged,omitempty"`
	// Bad are rows that could not be imported, with the reason.
	Bad []swarmtools.Note `json:"bad"`
	// NotImported are rows read that by design give no event, with the reason.
	NotImported []swarmtools.Note `json:"not_imported"`
	// Pending is set when the folds' decisions (rejections, merges) are
	// not read back yet.
	Pending bool `json:"pending,omitempty"`

	// refs maps an appended event id to its row and kind (for the reply).
	refs map[string][2]string
}

// NewSwarmToolsReport is an empty report.
func NewSwarmToolsReport() SwarmToolsReport {
	return SwarmToolsReport{Read: map[string]int{}, Imported: map[string]int{}, Skipped: map[string]int{},
		Rejected: []SwarmToolsRejected{}, Bad: []swarmtools.Note{}, NotImported: []swarmtools.Note{}}
}

// Add adds another chunk's report to r.
func (r *SwarmToolsReport) Add(o SwarmToolsReport) {
	for k, n := range o.Read {
		r.Read[k] += n
	}
	for k, n := range o.Imported {
		r.Imported[k] += n
	}
	for k, n := range o.Skipped {
		r.Skipped[k] += n
	}
	r.Rejected = append(r.Rejected, o.Rejected...)
	r.Merged = append(r.Merged, o.Merged...)
	r.Bad = append(r.Bad, o.Bad...)
	r.NotImported = append(r.NotImported, o.NotImported...)
	r.Pending = r.Pending || o.Pending
	r.DryRun = r.DryRun || o.DryRun
}

func importSwarmTools(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a ImportSwarmToolsArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	conv := swarmtools.Convert(swarmtools.Rows{Events: a.Events, Memories: a.Memories},
		swarmtools.Options{Project: a.Project, MemoryProject: req.Project})
	rep := NewSwarmToolsReport()
	rep.DryRun, rep.refs = a.DryRun, map[string][2]string{}
	for k, n := range conv.Read {
		rep.Read[k] = n
	}
	rep.Bad = append(rep.Bad, conv.Bad...)
	rep.NotImported = append(rep.NotImported, conv.NotImported...)
	idx := v.Model(imported.Name)
	var evs []*events.Event
	// A decomposition counts as imported with the first outcome it joins.
	joined := map[string]string{} // decomposition ref -> "imported" | "skipped"
	seen := map[string]bool{}
	for _, it := range conv.Items {
		project := it.Project
		if project == "" {
			project = req.Project
		}
		done, err := imported.Has(idx, it.ID)
		if err != nil {
			return nil, nil, err
		}
		if done || seen[it.ID] {
			rep.Skipped[it.Kind]++
			for _, d := range it.Joins {
				if joined[d] == "" {
					joined[d] = "skipped"
				}
			}
			continue
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal(it.Data, &data); err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", it.Ref, err)
		}
		// The event's own schema, as every door applies it.
		ev, _, err := dataEvent(req, it.Type, project, it.Time, data)
		if err != nil {
			rep.Bad = append(rep.Bad, swarmtools.Note{Ref: it.Ref, Reason: err.Error()})
			continue
		}
		ev.ID, ev.Source = it.ID, swarmtools.Source
		seen[it.ID] = true
		if a.DryRun && it.Kind == swarmtools.KindKnowledge {
			// The fold validates against the live pool; a dry run applies
			// the layers that refuse (structure and safety) to the lesson alone.
			if res, err := swarmToolsValidate(v, ev); err != nil {
				return nil, nil, err
			} else if !res.Valid {
				rep.Rejected = append(rep.Rejected, SwarmToolsRejected{Row: it.Ref, EventID: ev.ID, Layer: res.Layer, Reason: res.Reason})
				continue
			}
		}
		evs = append(evs, ev)
		rep.refs[ev.ID] = [2]string{it.Ref, it.Kind}
		rep.Imported[it.Kind]++
		for _, d := range it.Joins {
			joined[d] = "imported"
		}
	}
	for _, d := range conv.Decompositions {
		switch joined[d] {
		case "imported":
			rep.Imported[swarmtools.KindDecomposition]++
		case "skipped":
			rep.Skipped[swarmtools.KindDecomposition]++
		default:
			rep.NotImported = append(rep.NotImported, swarmtools.Note{Ref: d,
				Reason: "no subtask outcome of its epic was imported or read: a decomposition is learned from through its outcomes (strategy and text)"})
		}
	}
	if a.DryRun {
		return nil, rep, nil
	}
	if rep.Imported[swarmtools.KindKnowledge] > 0 {
		rep.Pending = true
	}
	return evs, rep, nil
}

// importSwarmToolsReply reads back what the folds decided: the knowledge
// validator's rejections and merges, and events a fold refused.
func importSwarmToolsReply(_ context.Context, v View, _ Request, evs []*events.Event, result any) (any, error) {
	rep, ok := result.(SwarmToolsReport)
	if !ok {
		// A call re-sent with its idempotency key: its events are stored
		// already; the report says so.
		rep = NewSwarmToolsReport()
		for _, ev := range evs {
			rep.Skipped[swarmToolsKind(ev.Type)]++
		}
		return rep, nil
	}
	rep.Pending = false
	kr, lr := kreader(v), v.Model(learning.ModelName)
	for _, ev := range evs {
		ref := rep.refs[ev.ID]
		switch ev.Type {
		case "knowledge.submitted/v1":
			d, ok, err := knowledge.DecisionOf(kr, ev.ID)
			if err != nil {
				return nil, err
			}
			if !ok {
				rep.Pending = true
				continue
			}
			switch d.Outcome {
			case knowledge.OutcomeRejected:
				rep.Imported[ref[1]]--
				rep.Rejected = append(rep.Rejected, SwarmToolsRejected{Row: ref[0], EventID: ev.ID, ID: d.ID, Layer: d.Layer, Reason: d.Reason})
			case knowledge.OutcomeReinforced, knowledge.OutcomeDropped:
				rep.Merged = append(rep.Merged, SwarmToolsMerged{Row: ref[0], Into: d.DuplicateOf})
			}
		case "outcome.recorded/v1":
			if _, ok, err := learningModel.Outcome(lr, ev.Project, ev.ID); err != nil {
				return nil, err
			} else if !ok {
				ok2, err := imported.Has(v.Model(imported.Name), ev.ID)
				if err != nil {
					return nil, err
				}
				if !ok2 {
					rep.Imported[ref[1]]--
					rep.Bad = append(rep.Bad, swarmtools.Note{Ref: ref[0], Reason: "refused by the learning fold (see the dead-letter stream)"})
				}
			}
		}
	}
	sort.SliceStable(rep.Rejected, func(i, j int) bool { return rep.Rejected[i].Row < rep.Rejected[j].Row })
	return rep, nil
}

// swarmToolsValidate runs the knowledge validator on a submission alone
// (for a dry run), with the defaults the fold applies.
func swarmToolsValidate(v View, ev *events.Event) (knowledge.Result, error) {
	cfg, err := kconfig(v)
	if err != nil || !cfg.ValidationEnabled {
		return knowledge.Result{Valid: true}, err
	}
	d, err := payload[events.KnowledgeSubmitted](ev)
	if err != nil {
		return knowledge.Result{}, err
	}
	scope, conf := d.Scope, 0.5
	if scope == "" {
		scope = "global"
	}
	if d.Confidence != nil {
		conf = *d.Confidence
	}
	return knowledge.Validate(d.Lesson, nil, knowledge.Meta{Category: d.Category, Scope: scope, Confidence: conf, Tags: d.Tags}), nil
}

// swarmToolsKind is the report kind of an imported event's type.
func swarmToolsKind(typ string) string {
	switch typ {
	case "outcome.recorded/v1":
		return swarmtools.KindOutcome
	case "feedback.recorded/v1":
		return swarmtools.KindFeedback
	case "knowledge.submitted/v1":
		return swarmtools.KindKnowledge
	}
	return typ
}
