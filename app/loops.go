package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/loredev/lore/projector/crossloop"
)

func init() {
	Register(Endpoint{Group: "loop", Name: "list", Doc: "running and recent loops with their iteration counts (running: only those; limit: newest first, default 50)",
		Args: crossloop.LoopFilter{}, Query: loopList})
	Register(Endpoint{Group: "loop", Name: "show", Doc: "one loop's state: injected patterns (applied, successful, iteration used), extracted patterns, improvement estimate",
		Args: LoopIDArgs{}, Query: loopShow})
}

// LoopIDArgs name a loop.
type LoopIDArgs struct {
	ID string `json:"id"`
}

// LoopShowResult is loop.show's answer: the state and its text.
type LoopShowResult struct {
	*crossloop.LoopState
	Text string `json:"text"`
}

func loopShow(_ context.Context, v View, req Request) (any, error) {
	var a LoopIDArgs
	if err := req.Bind(&a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, badField("id", errors.New("is required"))
	}
	s, ok, err := crossloop.ShowLoop(clReader(v), a.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: loop %q", ErrNotFound, a.ID)
	}
	return LoopShowResult{LoopState: s, Text: crossloop.FormatLoopState(s)}, nil
}

func loopList(_ context.Context, v View, req Request) (any, error) {
	var f crossloop.LoopFilter
	if err := req.Bind(&f); err != nil {
		return nil, err
	}
	if f.Limit < 0 {
		return nil, badField("limit", errNegative)
	}
	ls, err := crossloop.ListLoops(clReader(v), f)
	if ls == nil {
		ls = []crossloop.LoopSummary{}
	}
	return ls, err
}
