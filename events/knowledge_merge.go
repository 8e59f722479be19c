package events

import "fmt"

// KnowledgeMerged merges a knowledge entry into another of the same store
// (a curator's recommendation): the entry is archived (reason merged) and
// the one it went into takes its confirmations and retrieval outcomes.
type KnowledgeMerged struct {
	EntryID string `json:"entry_id"`
	Into    string `json:"into"`
	Reason  string `json:"reason,omitempty"`
	// By names who recommended it (e.g. curator-llm:<model>).
	By string `json:"by,omitempty"`
}

func (k *KnowledgeMerged) AggregateID() string { return k.EntryID }

// Check refuses an entry merged into itself.
func (k *KnowledgeMerged) Check() error {
	if k.EntryID == k.Into {
		return fmt.Errorf("field \"data.into\": an entry cannot be merged into itself")
	}
	return nil
}

func init() {
	Register(Kind{Type: "knowledge.merged/v1", Aggregate: "knowledge-entry",
		Doc: "a knowledge entry merged into another of its store: archived, its confirmations and outcomes carried over",
		New: func() Payload { return new(KnowledgeMerged) }})
}
