package app

import (
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/eventlog"
	"github.com/loredev/lore/projector/feedbacklog"
	"github.com/loredev/lore/projector/imported"
)

// Models returns the read models every projector folds, listed here and
// nowhere else.
//
// NB: the order is part of the store format (projector.FormatVersion joins
// the models' names and versions in this order, and events are folded into
// them in this order): a reorder rebuilds every read model and invalidates
// every snapshot. Add a new model at the end; never reorder or rename.
func Models() []projector.Model {
	return []projector.Model{
		eventlog.Model{},
		crossloopModel,
		knowledgeModel,
		learningModel,
		imported.Model{},
		feedbacklog.Model{},
	}
}
