package events

// KnowledgeRescanned asks every replica to re-check the stored knowledge
// entries (every project's swarm store and the hive) against the current
// content-safety rules: an entry they reject is quarantined with the
// reason. Being an event, replicas and replays quarantine the same entries.
type KnowledgeRescanned struct {
	// Reason is kept on the quarantined entries after the rule's reason.
	Reason string `json:"reason,omitempty"`
}

// RescanAggregate is the aggregate of rescans.
const RescanAggregate = "knowledge-rescan"

func (*KnowledgeRescanned) AggregateID() string { return RescanAggregate }

func init() {
	Register(Kind{Type: "knowledge.rescanned/v1", Aggregate: "knowledge-rescan",
		Doc: "re-check stored knowledge entries against the current safety rules; quarantine those they reject",
		New: func() Payload { return new(KnowledgeRescanned) }})
}
