package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// knowledge.curate: the rule-based curation pass of a project and, with
// llm, the LLM curator's recommendations (knowledge_llm.go). Each
// recommendation the current state accepts becomes the event a user's
// command would append (knowledge.promoted/v1, knowledge.quarantined/v1,
// knowledge.merged/v1), validated and appended by the pipeline like any
// other; the reply reads back what the fold made of each. A failing, slow
// or malformed answer appends nothing.

func init() {
	Register(Endpoint{Group: "knowledge", Name: "curate",
		Doc: "curation pass of a project: lifecycle steps, hive promotion checks, health report; with llm, also the LLM curator's " +
			"promote / quarantine / merge recommendations (LORE_CURATOR_URL), each recorded as an event when the state accepts it",
		Args: KnowledgeCurateArgs{}, Command: knowledgeCurate, Reply: knowledgeCurateReply})
}

// KnowledgeCurateArgs are the arguments of knowledge.curate.
type KnowledgeCurateArgs struct {
	Project string `json:"project,omitempty"`
	// LLM asks the configured LLM curator too.
	LLM bool `json:"llm,omitempty" jsonschema:"also ask the LLM curator configured where lore serves (LORE_CURATOR_URL) for promote, quarantine and merge recommendations"`
	// MaxEntries bounds the candidates sent (default 50, at most 200).
	MaxEntries int `json:"max_entries,omitempty" jsonschema:"most candidate entries sent to the LLM curator (default 50, at most 200)"`
}

// Bounds of the candidates sent to the LLM curator.
const (
	DefaultCuratorEntries = 50
	MaxCuratorEntries     = 200
)

// KnowledgeCurateResult is the curation report, with the LLM curator's
// recommendations when asked.
type KnowledgeCurateResult struct {
	knowledge.CurationReport
	LLM *CuratorReport `json:"llm,omitempty"`
}

// CuratorReport is what the LLM curator recommended and what came of it.
type CuratorReport struct {
	Model           string                  `json:"model,omitempty"`
	Candidates      int                     `json:"candidates"`
	Accepted        int                     `json:"accepted"`
	Refused         int                     `json:"refused"`
	Recommendations []CuratorRecommendation `json:"recommendations"`
}

// CuratorRecommendation is one recommendation: accepted (recorded as
// EventID; Result says what the fold made of it) or refused by the current
// state (Refused says why; nothing recorded).
type CuratorRecommendation struct {
	CuratorAdvice
	Accepted bool   `json:"accepted"`
	EventID  string `json:"event_id,omitempty"`
	Refused  string `json:"refused,omitempty"`
	Result   string `json:"result,omitempty"`
}

// curatorBy names the curator in the events it causes.
func curatorBy(model string) string {
	if model == "" {
		return "curator-llm"
	}
	return "curator-llm:" + model
}

func knowledgeCurate(ctx context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeCurateArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if a.MaxEntries < 0 || a.MaxEntries > MaxCuratorEntries {
		return nil, nil, fmt.Errorf("%w: field \"max_entries\": %d must be in [0, %d]", ErrBadRequest, a.MaxEntries, MaxCuratorEntries)
	}
	if a.MaxEntries > 0 && !a.LLM {
		return nil, nil, fmt.Errorf("%w: field \"max_entries\": only with llm", ErrBadRequest)
	}
	if err := kWritable(v, "knowledge.curated/v1"); err != nil {
		return nil, nil, err
	}
	p := kProject(req, a.Project)
	rep, err := knowledge.Curation(kreader(v), knowledge.DefaultConfig(), p, req.Now)
	if err != nil {
		return nil, nil, err
	}
	ev, err := kEvent(req, "knowledge.curated/v1", p, &events.KnowledgeCurated{Project: p})
	if err != nil {
		return nil, nil, err
	}
	out := KnowledgeCurateResult{CurationReport: rep}
	evs := []*events.Event{ev}
	if !a.LLM {
		return evs, out, nil
	}
	more, llm, err := kCurateLLM(ctx, v, req, p, a.MaxEntries)
	if err != nil {
		return nil, nil, err
	}
	out.LLM = llm
	return append(evs, more...), out, nil
}

// kCurateLLM asks the LLM curator about the project's active swarm
// entries and turns each recommendation the state accepts into its event.
func kCurateLLM(ctx context.Context, v View, req Request, project string, maxEntries int) ([]*events.Event, *CuratorReport, error) {
	cc, ok, err := curatorFromEnv()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrConflict, err)
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: the LLM curator is not configured: set LORE_CURATOR_URL (an OpenAI-compatible server; "+
			"LORE_CURATOR_MODEL, LORE_CURATOR_API_KEY, LORE_CURATOR_TIMEOUT optional) where lore serves; nothing was sent", ErrConflict)
	}
	if maxEntries == 0 {
		maxEntries = DefaultCuratorEntries
	}
	r := kreader(v)
	cands, err := knowledge.List(r, knowledge.ListOptions{Tier: knowledge.TierSwarm, Project: project})
	if err != nil {
		return nil, nil, err
	}
	if len(cands) > maxEntries {
		cands = cands[len(cands)-maxEntries:] // the newest
	}
	rep := &CuratorReport{Model: cc.Model, Candidates: len(cands), Recommendations: []CuratorRecommendation{}}
	if len(cands) == 0 {
		return nil, rep, nil // nothing to ask about: nothing sent
	}
	byID := map[string]*knowledge.Entry{}
	known := map[string]bool{}
	for _, e := range cands {
		byID[e.ID], known[e.ID] = e, true
	}
	user, err := curatorUserPrompt(project, cands)
	if err != nil {
		return nil, nil, err
	}
	content, err := cc.complete(ctx, curatorSystemPrompt, user)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; nothing was recorded", err)
	}
	advice, err := ParseCuratorAnswer(content, known)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s answered outside the shape asked for (%v); nothing was recorded", errCurator, cc.shown(), err)
	}
	cfg, err := kconfig(v)
	if err != nil {
		return nil, nil, err
	}
	hive, err := knowledge.HiveEntries(r)
	if err != nil {
		return nil, nil, err
	}
	by := curatorBy(cc.Model)
	gone := map[string]string{} // entries an accepted recommendation removes, and why
	var evs []*events.Event
	for _, ad := range advice {
		rec := CuratorRecommendation{CuratorAdvice: ad}
		rec.Reason = knowledge.CleanReason(strings.TrimSpace(ad.Reason))
		e := byID[ad.ID]
		var typ string
		var payload events.Payload
		why := gone[ad.ID]
		switch ad.Action {
		case CuratorPromote:
			if why == "" {
				why = kPromoteRefusal(e, hive, cfg)
			}
			typ, payload = "knowledge.promoted/v1", &events.KnowledgePromoted{EntryID: e.ID, Reason: by + ": " + rec.Reason}
		case CuratorQuarantine:
			typ, payload = "knowledge.quarantined/v1", &events.KnowledgeQuarantined{EntryID: e.ID, Reason: "curator: " + rec.Reason, ReportedBy: by}
		case CuratorMerge:
			if why == "" {
				why = gone[ad.Into]
			}
			if why == "" {
				why = knowledge.MergeRefusal(e, byID[ad.Into])
			}
			typ, payload = "knowledge.merged/v1", &events.KnowledgeMerged{EntryID: e.ID, Into: ad.Into, Reason: rec.Reason, By: by}
		}
		if why != "" {
			rec.Refused = why
			rep.Refused++
			rep.Recommendations = append(rep.Recommendations, rec)
			continue
		}
		ev, err := kEvent(req, typ, project, payload)
		if err != nil {
			return nil, nil, fmt.Errorf("recommendation %s %s: %w", ad.Action, ad.ID, err)
		}
		if ad.Action != CuratorPromote {
			gone[ad.ID] = fmt.Sprintf("entry %s is %s by an earlier recommendation", ad.ID, map[string]string{
				CuratorQuarantine: "quarantined", CuratorMerge: "merged away"}[ad.Action])
		}
		rec.Accepted, rec.EventID = true, ev.ID
		rep.Accepted++
		rep.Recommendations = append(rep.Recommendations, rec)
		evs = append(evs, ev)
	}
	return evs, rep, nil
}

// curatorEntry is what the model is shown of an entry.
type curatorEntry struct {
	ID         string   `json:"id"`
	Lesson     string   `json:"lesson"`
	Category   string   `json:"category"`
	Tags       []string `json:"tags,omitempty"`
	Scope      string   `json:"scope"`
	Confidence float64  `json:"confidence"`
	Status     string   `json:"status"`
	Phases     int      `json:"confirming_phases"`
	InHive     bool     `json:"in_hive,omitempty"`
	Shown      int      `json:"shown"`
	Helpful    int      `json:"helpful"`
	Harmful    int      `json:"harmful"`
	Warnings   []string `json:"warnings,omitempty"`
	Conflicts  []string `json:"possibly_contradicts,omitempty"`
}

func curatorUserPrompt(project string, es []*knowledge.Entry) (string, error) {
	out := struct {
		Project string         `json:"project"`
		Entries []curatorEntry `json:"entries"`
	}{Project: project}
	for _, e := range es {
		ce := curatorEntry{ID: e.ID, Lesson: e.Lesson, Category: e.Category, Tags: e.Tags, Scope: e.Scope, Confidence: e.Confidence,
			Status: e.Status, Phases: e.DistinctPhases(), InHive: e.PromotedTo != "", Shown: e.Outcomes.Shown,
			Helpful: e.Outcomes.Helpful, Harmful: e.Outcomes.Harmful, Conflicts: e.Conflicts}
		for _, w := range e.Warnings {
			ce.Warnings = append(ce.Warnings, w.Reason)
		}
		out.Entries = append(out.Entries, ce)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("llm curator: encode the entries: %w", err)
	}
	return "Entries of project " + project + " (JSON):\n" + string(b), nil
}

// knowledgeCurateReply reads back what the fold made of each accepted
// recommendation. A re-sent call (idempotency key) has no result: the
// report is computed again from the live view, without asking the model.
func knowledgeCurateReply(_ context.Context, v View, req Request, evs []*events.Event, result any) (any, error) {
	res, ok := result.(KnowledgeCurateResult)
	if !ok {
		p := req.Project
		if len(evs) > 0 {
			if d, err := payload[events.KnowledgeCurated](evs[0]); err == nil && d.Project != "" {
				p = d.Project
			}
		}
		rep, err := knowledge.Curation(kreader(v), knowledge.DefaultConfig(), p, req.Now)
		if err != nil {
			return nil, err
		}
		return KnowledgeCurateResult{CurationReport: rep}, nil
	}
	if res.LLM == nil {
		return res, nil
	}
	for i := range res.LLM.Recommendations {
		rec := &res.LLM.Recommendations[i]
		if !rec.Accepted {
			continue
		}
		e, err := knowledge.Find(kreader(v), rec.ID)
		if errors.Is(err, knowledge.ErrUnknown) {
			rec.Result = "entry not found"
			continue
		} else if err != nil {
			return nil, err
		}
		rec.Result = curatorResult(rec, e)
	}
	return res, nil
}

// curatorResult says what became of an accepted recommendation's entry.
func curatorResult(rec *CuratorRecommendation, e *knowledge.Entry) string {
	switch rec.Action {
	case CuratorPromote:
		if e.PromotedTo != "" {
			return "promoted to hive " + e.PromotedTo
		}
		return "not promoted: the hive's validation refused it (lore knowledge rejected)"
	case CuratorQuarantine:
		if e.Status == knowledge.StatusQuarantined {
			return "quarantined"
		}
	case CuratorMerge:
		if e.MergedInto != "" {
			return "merged into " + e.MergedInto
		}
	}
	return "unchanged (status " + e.Status + ")"
}
