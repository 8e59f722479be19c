package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/learning"
)

// The learning configuration as events: learning.config answers the
// configuration in force (at --as-of, the one in force then);
// learning.configure appends learning.configured/v1, which every replica
// and replay folds from that point of the log on.

func init() {
	Register(Endpoint{Group: "learning", Name: "config", Doc: "the learning configuration in force: learning (learningConfig), anti_pattern, maturity, criterion_half_life_days, min_success_rate, evidence",
		Query: learnQueryConfig})
	Register(Endpoint{Group: "learning", Name: "configure", Doc: "set the learning configuration (keys over the defaults) for every replica; re-evaluates criteria and patterns under it and announces the transitions it causes",
		Args: LearningConfigureArgs{}, Command: learnCmdConfigure, Reply: learnReplyConfigured})
}

// LearningConfigureArgs are the arguments of learning.configure: a
// configuration document (Config's JSON keys, or the reference's
// learningConfig, antiPatternConfig, maturityConfig sections).
type LearningConfigureArgs struct {
	Config json.RawMessage `json:"config"`
}

func learnQueryConfig(_ context.Context, v View, _ Request) (any, error) {
	return learningModel.ConfigAt(v.Model(learning.ModelName))
}

// learnConfig applies the one configuration rule (learning.ParseConfig)
// and maps its refusal to a bad request naming the key.
func learnConfig(raw json.RawMessage) (learning.Config, error) {
	if len(raw) == 0 {
		return learning.Config{}, fmt.Errorf("%w: field \"config\": is required", ErrBadRequest)
	}
	cfg, err := learning.ParseConfig(raw)
	if err != nil {
		return cfg, fmt.Errorf("%w: field \"config\": %v", ErrBadRequest, err)
	}
	return cfg, nil
}

func learnCmdConfigure(_ context.Context, _ View, req Request) ([]*events.Event, any, error) {
	var a LearningConfigureArgs
	if err := req.Bind(&a); err != nil {
		return nil, nil, err
	}
	cfg, err := learnConfig(a.Config)
	if err != nil {
		return nil, nil, err
	}
	full, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("encode learning config: %w", err)
	}
	ev, err := req.newEvent("learning.configured/v1", req.Project, req.Now, &events.LearningConfigured{Config: full})
	if err != nil {
		return nil, nil, err
	}
	return []*events.Event{ev}, cfg, nil
}

// learnReplyConfigured is the configuration the stored event sets.
func learnReplyConfigured(_ context.Context, _ View, _ Request, evs []*events.Event, _ any) (any, error) {
	d, err := payload[events.LearningConfigured](evs[0])
	if err != nil {
		return nil, err
	}
	return learnConfig(d.Config)
}
