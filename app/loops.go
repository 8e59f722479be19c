package app

import (
	"context"
	"errors"

	"github.com/loredev/lore/projector/crossloop"
)

func init() {
	Register(Endpoint{Group: "loop", Name: "list", Doc: "running and recent loops with their iteration counts (running: only those; limit: newest first, default 50)",
		Args: crossloop.LoopFilter{}, Query: loopList})
}

func loopList(_ context.Context, v View, req Request) (any, error) {
	var f crossloop.LoopFilter
	if err := req.Bind(&f); err != nil {
		return nil, err
	}
	if f.Limit < 0 {
		return nil, badField("limit", errors.New("must be >= 0"))
	}
	ls, err := crossloop.ListLoops(clReader(v), f)
	if ls == nil {
		ls = []crossloop.LoopSummary{}
	}
	return ls, err
}
