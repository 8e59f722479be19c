package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// knowledge.import: parsed entries (the CLI reads the files) become
// knowledge.submitted/v1 events named by their content; the reply is read
// back from the fold's decision on each (d/<event id>), never predicted.

func init() {
	Register(Endpoint{Group: "knowledge", Name: "import",
		Doc:  "import parsed entries (knowledge.jsonl, shared-learnings.jsonl, rejected files, context.md); idempotent; replies what the fold made of each: added, rejected (reason), merged (into which entry), promoted as a consequence",
		Args: KnowledgeImportArgs{}, Command: knowledgeImport, Reply: knowledgeImportReply})
	Register(Endpoint{Group: "knowledge", Name: "decisions",
		Doc:  fmt.Sprintf("what the fold decided for many submissions (1-%d event ids, as knowledge.import with no_wait lists them): each as knowledge.submission answers, or outcome pending while not folded", MaxDecisionsPerRequest),
		Args: KnowledgeDecisionsArgs{}, Query: knowledgeDecisions})
}

// MaxDecisionsPerRequest bounds one knowledge.decisions request.
const MaxDecisionsPerRequest = 1000

// KnowledgeDecisionsArgs name submissions by their event ids.
type KnowledgeDecisionsArgs struct {
	EventIDs []string `json:"event_ids"`
}

// KnowledgeDecisionsResult lists the fold's decision on each submission
// asked for, in the order asked (outcome pending: not folded, or
// dead-lettered).
type KnowledgeDecisionsResult struct {
	Decisions []KnowledgeAddResult `json:"decisions"`
}

func knowledgeDecisions(_ context.Context, v View, req Request) (any, error) {
	var a KnowledgeDecisionsArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	switch n := len(a.EventIDs); {
	case n == 0:
		return nil, fmt.Errorf("%w: field \"event_ids\": give at least one event id", ErrBadRequest)
	case n > MaxDecisionsPerRequest:
		return nil, fmt.Errorf("%w: field \"event_ids\": %d event ids, at most %d per request", ErrBadRequest, n, MaxDecisionsPerRequest)
	}
	r := kreader(v)
	out := KnowledgeDecisionsResult{Decisions: make([]KnowledgeAddResult, len(a.EventIDs))}
	for i, id := range a.EventIDs {
		if err := events.CheckID(id); err != nil {
			return nil, fmt.Errorf("%w: field \"event_ids[%d]\": %v", ErrBadRequest, i, err)
		}
		d, ok, err := knowledge.DecisionOf(r, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			out.Decisions[i] = KnowledgeAddResult{EventID: id, Outcome: OutcomePending}
			continue
		}
		out.Decisions[i] = kAddResult(d)
	}
	return out, nil
}

// Decision is the fold's decision r reports (ok false: pending).
func (r KnowledgeAddResult) Decision() (*knowledge.Decision, bool) {
	if r.Outcome == OutcomePending || r.Outcome == "" {
		return nil, false
	}
	return &knowledge.Decision{EventID: r.EventID, Outcome: r.Outcome, ID: r.ID, DuplicateOf: r.DuplicateOf,
		Layer: r.Layer, Reason: r.Reason, Warnings: r.Warnings, Promoted: r.Promoted, Archived: r.Archived}, true
}

// KnowledgeImportArgs are parsed entries to import (the CLI reads the files).
type KnowledgeImportArgs struct {
	Format      string                      `json:"format"`
	Project     string                      `json:"project"`
	Submissions []events.KnowledgeSubmitted `json:"submissions"`
}

// KnowledgeImportChunk is how many submissions a client sends in one
// knowledge.import request (the CLI's size: a request stays well under
// NATS's payload limit).
const KnowledgeImportChunk = 200

// KnowledgeImportResult reports an import: how many submissions were sent,
// what the fold decided for each (counts and Items, in the order sent),
// and the hive promotions and cap archives they caused.
type KnowledgeImportResult struct {
	Sent int `json:"sent"`
	// Existing: imported (or rejected, or merged) before; nothing sent.
	Existing   int `json:"existing"`
	Added      int `json:"added"`
	Rejected   int `json:"rejected"`
	Merged     int `json:"merged"`
	Reinforced int `json:"reinforced"`
	// Pending: sent, the fold's decision not read back yet.
	Pending  int                   `json:"pending"`
	Promoted []knowledge.Promotion `json:"promoted"`
	Archived []string              `json:"archived"`
	Items    []KnowledgeImportItem `json:"items"`
}

// KnowledgeImportItem is what became of one submission.
type KnowledgeImportItem struct {
	// Index is the submission's position in the request.
	Index   int    `json:"index"`
	ID      string `json:"id"`
	EventID string `json:"event_id,omitempty"`
	// Outcome: added, rejected, merged (an imported near-duplicate of
	// MergedInto, dropped; its id leads there), reinforced, existing or
	// pending.
	Outcome    string `json:"outcome"`
	MergedInto string `json:"merged_into,omitempty"`
	Layer      int    `json:"layer,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// OutcomeMerged is how an import reports a near-duplicate dropped for an
// existing entry (the fold's knowledge.OutcomeDropped).
const OutcomeMerged = "merged"

// Add merges another chunk's report into r (indexes offset by base).
func (r *KnowledgeImportResult) Add(o KnowledgeImportResult, base int) {
	r.Sent += o.Sent
	r.Existing += o.Existing
	r.Added += o.Added
	r.Rejected += o.Rejected
	r.Merged += o.Merged
	r.Reinforced += o.Reinforced
	r.Pending += o.Pending
	r.Promoted = append(r.Promoted, o.Promoted...)
	r.Archived = append(r.Archived, o.Archived...)
	for _, it := range o.Items {
		it.Index += base
		r.Items = append(r.Items, it)
	}
}

func knowledgeImport(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeImportArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if a.Format != "" && !slices.Contains(knowledge.Formats, a.Format) {
		return nil, nil, badField("format", fmt.Errorf("%q must be one of %s", a.Format, strings.Join(knowledge.Formats, ", ")))
	}
	if err := kWritable(v, "knowledge.submitted/v1"); err != nil {
		return nil, nil, err
	}
	a.Project = kProject(req, a.Project)
	// Each submission is validated as sent (see dataEvent).
	var raw struct {
		Submissions []map[string]json.RawMessage `json:"submissions"`
	}
	if err := json.Unmarshal(req.Args, &raw); err != nil {
		return nil, nil, fmt.Errorf("%w: field \"submissions\": %v", ErrBadRequest, err)
	}
	r := kreader(v)
	var evs []*events.Event
	res := KnowledgeImportResult{Items: []KnowledgeImportItem{}, Promoted: []knowledge.Promotion{}, Archived: []string{}}
	// The event ids this request sends: a line repeating an earlier one
	// of the request is that one's event (the log keeps it once), so it
	// is reported existing, as it is when the earlier line came in an
	// earlier request, never a second time with the earlier line's fate.
	sending := map[string]bool{}
	for i := range a.Submissions {
		d := &a.Submissions[i]
		if d.Import == nil || d.Import.Digest == "" {
			return nil, nil, fmt.Errorf("%w: field \"submissions[%d].import.digest\": is required", ErrBadRequest, i)
		}
		if a.Format != "" && d.Import.Format != a.Format {
			return nil, nil, fmt.Errorf("%w: field \"submissions[%d].import.format\": %q, want %q", ErrBadRequest, i, d.Import.Format, a.Format)
		}
		if d.Project == "" {
			d.Project = a.Project
		}
		id := knowledge.SubmissionID("", d.Project, d)
		evID := knowledge.ImportEventID(d.Import.Format, d.Project, d.Import.Digest)
		if sending[evID] {
			res.Existing++
			res.Items = append(res.Items, KnowledgeImportItem{Index: i, ID: id, EventID: evID, Outcome: knowledge.OutcomeExisting})
			continue
		}
		// Folded before (this content, or an entry with this id): nothing
		// is sent again.
		if prior, ok, err := knowledge.DecisionOf(r, evID); err != nil {
			return nil, nil, err
		} else if ok {
			res.Existing++
			it := KnowledgeImportItem{Index: i, ID: id, EventID: evID, Outcome: knowledge.OutcomeExisting}
			if prior.Outcome == knowledge.OutcomeDropped || prior.Outcome == knowledge.OutcomeReinforced {
				it.MergedInto = prior.DuplicateOf
			}
			res.Items = append(res.Items, it)
			continue
		}
		if taken, err := knowledge.IDTaken(r, id); err != nil {
			return nil, nil, err
		} else if taken {
			res.Existing++
			res.Items = append(res.Items, KnowledgeImportItem{Index: i, ID: id, Outcome: knowledge.OutcomeExisting})
			continue
		}
		data := raw.Submissions[i]
		if err := setDefault(data, "project", d.Project); err != nil {
			return nil, nil, err
		}
		ev, _, err := dataEvent(req, "knowledge.submitted/v1", d.Project, req.Now, data)
		if err != nil {
			return nil, nil, fmt.Errorf("submissions[%d]: %w", i, err)
		}
		// Named by content: importing the same entry again appends nothing.
		ev.ID = evID
		sending[evID] = true
		evs = append(evs, ev)
		res.Items = append(res.Items, KnowledgeImportItem{Index: i, ID: id, EventID: ev.ID, Outcome: OutcomePending})
	}
	res.Sent = len(evs)
	res.Pending = len(evs)
	return evs, res, nil
}

// knowledgeImportReply reads the fold's decision on every submission sent.
// A re-sent call (idempotency key) has no pre-append result: its report is
// rebuilt from the stored events' decisions.
func knowledgeImportReply(_ context.Context, v View, _ Request, evs []*events.Event, result any) (any, error) {
	res, ok := result.(KnowledgeImportResult)
	if !ok {
		res = KnowledgeImportResult{Items: []KnowledgeImportItem{}, Promoted: []knowledge.Promotion{}, Archived: []string{},
			Sent: len(evs), Pending: len(evs)}
		for i, ev := range evs {
			res.Items = append(res.Items, KnowledgeImportItem{Index: i, EventID: ev.ID, Outcome: OutcomePending})
		}
	}
	r := kreader(v)
	err := res.Resolve(func(eventID string) (*knowledge.Decision, bool, error) {
		return knowledge.DecisionOf(r, eventID)
	})
	return res, err
}

// Resolve reads the fold's decision on every item still pending, in item
// order: decision reports ok false while an event is not folded (or was
// dead-lettered), and its item stays pending. The one place an import's
// report is read back, on the server (knowledge.import's reply) and on a
// client that did not wait for each request (knowledge.decisions).
func (res *KnowledgeImportResult) Resolve(decision func(eventID string) (*knowledge.Decision, bool, error)) error {
	for i := range res.Items {
		it := &res.Items[i]
		if it.Outcome != OutcomePending {
			continue
		}
		d, ok, err := decision(it.EventID)
		if err != nil {
			return err
		}
		if !ok {
			continue // not folded yet (or dead-lettered): stays pending
		}
		res.Pending--
		it.ID, it.Layer, it.Reason = d.ID, d.Layer, d.Reason
		switch d.Outcome {
		case knowledge.OutcomeAdded:
			res.Added++
			it.Outcome = d.Outcome
		case knowledge.OutcomeRejected, knowledge.OutcomeDisabled:
			res.Rejected++
			it.Outcome, it.MergedInto = knowledge.OutcomeRejected, ""
		case knowledge.OutcomeDropped:
			res.Merged++
			it.Outcome, it.MergedInto = OutcomeMerged, d.DuplicateOf
		case knowledge.OutcomeReinforced:
			res.Reinforced++
			it.Outcome, it.MergedInto = d.Outcome, d.DuplicateOf
		default: // existing: folded before under another event
			res.Existing++
			it.Outcome = d.Outcome
		}
		res.Promoted = append(res.Promoted, d.Promoted...)
		res.Archived = append(res.Archived, d.Archived...)
	}
	// A line repeating an earlier one of its request was reported existing
	// when it came (one event for both); it leads where the earlier line
	// was merged, as a line repeating one folded before does.
	first := map[string]int{}
	for i := range res.Items {
		it := &res.Items[i]
		if it.EventID == "" {
			continue
		}
		j, seen := first[it.EventID]
		if !seen {
			first[it.EventID] = i
			continue
		}
		if e := res.Items[j]; it.Outcome == knowledge.OutcomeExisting && it.MergedInto == "" &&
			(e.Outcome == OutcomeMerged || e.Outcome == knowledge.OutcomeReinforced) {
			it.MergedInto = e.MergedInto
		}
	}
	return nil
}
