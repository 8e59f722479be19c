package mcp

import (
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/knowledge"
)

// endpointArgs is the zero value of the argument struct e's handler decodes
// into (nil: e takes no arguments); known is false when this lore does not
// say, and the tool then takes any object.
func endpointArgs(e app.Endpoint) (args any, known bool) {
	args, known = argTypes[e.Subject()]
	return args, known
}

// argTypes are the argument structs of the endpoints whose handlers decode
// into a named type; the others are not known here.
var argTypes = map[string]any{
	"lore.api.audit.stats":                   nil,
	"lore.api.audit.types":                   nil,
	"lore.api.knowledge.add":                 events.KnowledgeSubmitted{},
	"lore.api.knowledge.config":              nil,
	"lore.api.knowledge.import":              app.KnowledgeImportArgs{},
	"lore.api.knowledge.inject":              app.KnowledgeInjectArgs{},
	"lore.api.knowledge.list":                knowledge.ListOptions{},
	"lore.api.knowledge.promote":             events.KnowledgePromoted{},
	"lore.api.learning.anti_patterns":        nil,
	"lore.api.learning.criterion":            app.LearningCriterionArgs{},
	"lore.api.learning.decomposition_prompt": nil,
	"lore.api.learning.deprecate":            app.LearningManualArgs{},
	"lore.api.learning.error_context":        app.LearningBeadArgs{},
	"lore.api.learning.error_stats":          app.LearningBeadArgs{},
	"lore.api.learning.last_outcome":         app.LearningBeadArgs{},
	"lore.api.learning.observe_pattern":      app.LearningObserveArgs{},
	"lore.api.learning.pattern":              app.LearningPatternArgs{},
	"lore.api.learning.patterns":             app.LearningPatternsArgs{},
	"lore.api.learning.promote":              app.LearningManualArgs{},
	"lore.api.learning.record_error":         app.LearningErrorArgs{},
	"lore.api.learning.record_feedback":      app.LearningFeedbackArgs{},
	"lore.api.learning.record_outcome":       app.LearningOutcomeArgs{},
	"lore.api.learning.reset":                app.LearningManualArgs{},
	"lore.api.learning.resolve_error":        app.LearningResolveArgs{},
	"lore.api.learning.weights":              app.LearningWeightsArgs{},
	"lore.api.loop.apply":                    events.PatternApplied{},
	"lore.api.loop.complete":                 events.LoopCompleted{},
	"lore.api.loop.iterate":                  events.LoopIteration{},
	"lore.api.loop.start":                    events.LoopStarted{},
	"lore.api.patterns.export":               nil,
	"lore.api.patterns.extract":              events.ExtractRequested{},
	"lore.api.patterns.inject":               app.InjectArgs{},
	"lore.api.patterns.list":                 crossloop.ListFilter{},
	"lore.api.patterns.metrics":              nil,
	"lore.api.patterns.prune":                app.PruneArgs{},
	"lore.api.phase.complete":                events.PhaseCompleted{},
}

// endpointSchema is the input schema of e's tool: its exact arguments plus
// the common extras, or any object when its arguments are not known.
func endpointSchema(e app.Endpoint) (obj, error) {
	args, known := endpointArgs(e)
	if !known {
		return freeForm(e.Doc), nil
	}
	return argsSchema(args, e.Doc, commonExtras(e))
}

// commonExtras are the properties every endpoint tool takes besides the
// endpoint's arguments.
func commonExtras(app.Endpoint) obj {
	return obj{"project": projectProp}
}
