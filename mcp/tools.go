package mcp

import (
	"fmt"
	"strings"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
)

// named is a curated tool: a name and schema an agent can follow, mapped
// onto lore endpoints.
type named struct {
	name, desc string
	schema     obj
	// route picks the endpoint and its args from the tool's arguments.
	route func(args obj) (group, name string, out obj, err error)
	// text puts the reply's "text" field (a ready prompt block) first.
	text bool
	// rewrites: route changes the arguments (renames, drops, picks the
	// endpoint), so the tool's own schema checks them; a tool passing
	// them unchanged leaves the check to the endpoint.
	rewrites bool
}

// fixed routes every call to one endpoint, arguments unchanged.
func fixed(group, name string) func(obj) (string, string, obj, error) {
	return func(a obj) (string, string, obj, error) { return group, name, a, nil }
}

// patternRef is the way tools name a learning pattern.
var patternRef = obj{
	"pattern_id": str("pattern id (p-...) as listed by lore; or give content"),
	"content":    str("the pattern's text, when its id is unknown (the id is derived from it)"),
}

func withProps(base obj, more obj) obj {
	out := obj{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// namedTools are the curated tools. Endpoint names are those registered in
// app/: a tool whose endpoint is missing answers with an error naming it.
func namedTools() []named {
	timeProp := str("when it happened, RFC 3339 (default: now)")
	return []named{
		{
			name: "record_outcome",
			desc: "Record how a subtask (bead) ended: success, duration, retries, errors, the criteria and strategy used. " +
				"lore scores it by implicit feedback and updates criterion weights and pattern maturity.",
			schema: mustSchema(argsSchema(app.LearningOutcomeArgs{}, "", obj{"time": timeProp, "project": projectProp, "idempotency_key": idempotencyProp})),
			route:  fixed("learning", "record_outcome"),
		},
		{
			name:   "record_error",
			desc:   "Record an error met while executing a bead; a retry asks for the bead's error context.",
			schema: mustSchema(argsSchema(app.LearningErrorArgs{}, "", obj{"time": timeProp, "project": projectProp, "idempotency_key": idempotencyProp})),
			route:  fixed("learning", "record_error"),
		},
		{
			name: "add_knowledge",
			desc: "Submit a lesson learned to the knowledge store. It is validated, deduplicated " +
				"(reinforcing an existing entry) or rejected with the reason.",
			schema: withoutProps(mustSchema(argsSchema(events.KnowledgeSubmitted{}, "", obj{"project": projectProp, "idempotency_key": idempotencyProp})), "import"),
			route:  fixed("knowledge", "add"),
		},
		{
			name: "inject_context",
			desc: "At the start of a task: the budgeted block of lessons known to help and to avoid, sized to the context headroom. " +
				"Put the returned text in your context.",
			schema: object("a task and how much of the context window is free", obj{
				"task":     str("the task about to start"),
				"headroom": obj{"type": "number", "minimum": 0, "maximum": 1, "description": "fraction of the context window free (1 = all free; smaller gives a shorter block)"},
				"scopes":   strs("scopes to include besides knowledge.scope_filter (default [\"global\"]: global lessons only), e.g. stack:go"),
				"project":  projectProp,
			}, "task"),
			route: fixed("knowledge", "inject"),
			text:  true,
		},
		{
			name: "find_patterns",
			desc: "Rank the cross-loop registry's patterns (successes, error fixes, anti-patterns) for a task, a category or a loop. " +
				"With loop_id the injection is recorded on that loop.",
			schema: object("what to rank patterns for: a task, a category or a loop id", obj{
				"task":             str("task text"),
				"category":         str("task category (e.g. debugging, feature, refactor)"),
				"loop_id":          str("a loop started with lore (its task and category are used)"),
				"top_k":            integer("patterns returned (default 5, at most 10)"),
				"min_success_rate": num("lowest success rate returned, 0..1"),
				"types":            strs("pattern types: error, success, anti, template"),
				"project":          projectProp,
			}),
			route: fixed("patterns", "inject"),
			text:  true,
		},
		{
			name: "promote",
			desc: "Promote by hand: a decomposition pattern to proven (kind pattern, refused for a deprecated one), " +
				"or a lesson to the hive (kind knowledge: entry_id of a swarm entry, or new lesson text).",
			schema: object("what to promote", withProps(patternRef, obj{
				"kind":            enum("pattern (default) or knowledge", "pattern", "knowledge"),
				"reason":          str("why (pattern)"),
				"entry_id":        str("swarm entry id or unique prefix (knowledge)"),
				"lesson":          str("new lesson text (knowledge)"),
				"project":         projectProp,
				"idempotency_key": idempotencyProp,
			})),
			route: func(a obj) (string, string, obj, error) {
				if kindOf(a, "pattern") == "knowledge" {
					return "knowledge", "promote", without(a, "kind"), nil
				}
				return "learning", "promote", without(a, "kind"), nil
			},
			rewrites: true,
		},
		{
			name:   "deprecate",
			desc:   "Deprecate a decomposition pattern by hand, with a reason; it is then excluded from prompts.",
			schema: object("the pattern and why", withProps(patternRef, obj{"reason": str("why it is deprecated"), "project": projectProp, "idempotency_key": idempotencyProp}), "reason"),
			route:  fixed("learning", "deprecate"),
		},
		{
			name:   "quarantine",
			desc:   "Hide a knowledge entry from queries and injection (kept, restorable), with a reason.",
			schema: object("the entry and why", obj{"id": str("entry id or unique prefix"), "reason": str("why"), "project": projectProp, "idempotency_key": idempotencyProp}, "id", "reason"),
			route:  fixed("knowledge", "quarantine"),
		},
		{
			name: "why",
			desc: "Explain a state: why a pattern has its maturity (or is inverted), why a criterion weighs what it does, " +
				"a knowledge entry's health, how a bead's last outcome was scored, a registry pattern's effectiveness.",
			schema: object("what to explain", obj{
				"kind":    enum("what id names", "pattern", "criterion", "knowledge", "bead", "registry_pattern"),
				"id":      str("the pattern id or content, criterion name, knowledge entry id, bead id or registry pattern id"),
				"project": projectProp,
			}, "kind", "id"),
			route:    routeWhy,
			rewrites: true,
		},
	}
}

// routeWhy maps why{kind,id} to the query explaining it.
func routeWhy(a obj) (string, string, obj, error) {
	id, _ := a["id"].(string)
	if strings.TrimSpace(id) == "" {
		return "", "", nil, fmt.Errorf("field \"id\": is required")
	}
	switch k := kindOf(a, ""); k {
	case "pattern":
		if strings.HasPrefix(id, "p-") && !strings.ContainsAny(id, " \t") {
			return "learning", "pattern", obj{"pattern_id": id}, nil
		}
		return "learning", "pattern", obj{"content": id}, nil
	case "criterion":
		return "learning", "criterion", obj{"criterion": id}, nil
	case "knowledge":
		return "knowledge", "show", obj{"id": id}, nil
	case "bead":
		return "learning", "last_outcome", obj{"bead_id": id}, nil
	case "registry_pattern":
		return "patterns", "show", obj{"id": id}, nil
	default:
		return "", "", nil, fmt.Errorf("field \"kind\": %q is not pattern, criterion, knowledge, bead or registry_pattern", k)
	}
}

func kindOf(a obj, def string) string {
	if k, ok := a["kind"].(string); ok && k != "" {
		return k
	}
	return def
}

func without(a obj, keys ...string) obj {
	out := obj{}
	for k, v := range a {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
