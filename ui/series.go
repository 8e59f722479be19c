package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Plots over time ask a query at several past points (as_of audits
// through the pipeline, as `--as-of` does). Answers are cached per live
// log sequence: the same question at the same point of the same log has
// the same answer.

type seriesCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]any
	order []string
}

func newSeriesCache(max int) *seriesCache {
	return &seriesCache{max: max, m: map[string]any{}}
}

func (c *seriesCache) get(k string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *seriesCache) put(k string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = v
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// sampled is one answer at one point (Err set when that point has none,
// e.g. the pattern did not exist yet).
type sampled struct {
	At  time.Time
	Res any
	Err error
}

// samples asks group.name at n points from `from` to the view's point
// (its as_of, else the clock), each an audit at that time (and the view's
// at_seq, when set).
func (s *Server) samples(ctx context.Context, v view, group, name string, args any, from time.Time, n int) []sampled {
	to := s.cfg.Clock().UTC()
	if v.AsOf != nil {
		to = *v.AsOf
	}
	if !from.Before(to) {
		from = to.Add(-24 * time.Hour)
	}
	argKey, _ := json.Marshal(args)
	live := s.cfg.Backend.Live().Seq()
	out := make([]sampled, 0, n)
	for i := range n {
		at := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / float64(n-1))).Truncate(time.Second)
		if i == n-1 {
			at = to
		}
		key := fmt.Sprintf("%s.%s|%s|%s|%d|%d|%d", group, name, argKey, v.Project, at.UnixNano(), v.AtSeq, live)
		if r, ok := s.cache.get(key); ok {
			out = append(out, r.(sampled))
			continue
		}
		pv := v
		pv.AsOf = &at
		res, err := s.query(ctx, pv, group, name, args)
		smp := sampled{At: at, Res: res, Err: err}
		if ctx.Err() == nil {
			s.cache.put(key, smp)
		}
		out = append(out, smp)
	}
	return out
}
