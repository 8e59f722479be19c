package app

import (
	"context"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

func init() {
	Register(Endpoint{Group: "knowledge", Name: "rescan",
		Doc:     "re-check every stored knowledge entry against the current safety rules; quarantine those they reject, with the reason, and report counts",
		Command: knowledgeRescan, Args: KnowledgeRescanArgs{}})
}

// KnowledgeRescanArgs are the arguments of knowledge.rescan.
type KnowledgeRescanArgs struct {
	// Reason is recorded with each quarantine (default: the rule's own).
	Reason string `json:"reason,omitempty"`
}

// knowledgeRescan reports what the rescan quarantines (from the view) and
// appends knowledge.rescanned/v1, whose fold quarantines the same entries
// on every replica.
func knowledgeRescan(_ context.Context, v View, req Request) ([]*events.Event, any, error) {
	var a KnowledgeRescanArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	if err := kWritable(v, "knowledge.rescanned/v1"); err != nil {
		return nil, nil, err
	}
	rep, _, err := knowledge.Rescan(kreader(v))
	if err != nil {
		return nil, nil, err
	}
	ev, err := kEvent(req, "knowledge.rescanned/v1", kProject(req, ""), &events.KnowledgeRescanned{Reason: knowledge.CleanReason(a.Reason)})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, rep, nil
}
