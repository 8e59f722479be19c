package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Plots over time ask a query at several past points (as_of audits
// through the pipeline, as `--as-of` does). Each audit folds from the
// nearest audit checkpoint, so they are bounded: at most auditSlots run at
// once, and answers are cached. The last point (the view's own) is keyed by
// the live log sequence and always exact; earlier points on a grid of whole
// minutes are kept for seriesTTL, so a busy log does not re-audit them on
// every view (an event backfilled before such a point shows within that
// time).

const (
	auditSlots = 2
	seriesTTL  = 5 * time.Minute
)

type cached struct {
	v  any
	at time.Time
}

type seriesCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]cached
	order []string
	slots chan struct{}
}

func newSeriesCache(max int) *seriesCache {
	return &seriesCache{max: max, m: map[string]cached{}, slots: make(chan struct{}, auditSlots)}
}

func (c *seriesCache) get(k string, now time.Time) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	if !ok || now.Sub(v.at) > seriesTTL {
		return nil, false
	}
	return v.v, true
}

func (c *seriesCache) put(k string, v any, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = cached{v: v, at: now}
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
	wall := s.cfg.Clock()
	for i := range n {
		at := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / float64(n-1))).Truncate(time.Minute)
		seq := uint64(0) // earlier points: kept for seriesTTL
		if i == n-1 {
			at, seq = to, live
		}
		key := fmt.Sprintf("%s.%s|%s|%s|%d|%d|%d", group, name, argKey, v.Project, at.UnixNano(), v.AtSeq, seq)
		if r, ok := s.cache.get(key, wall); ok {
			out = append(out, r.(sampled))
			continue
		}
		pv := v
		if pv.AsOf = &at; i == n-1 && !v.Audit() {
			pv.AsOf = nil // the present: the live read models answer
		}
		select {
		case s.cache.slots <- struct{}{}:
		case <-ctx.Done():
			return out
		}
		res, err := s.query(ctx, pv, group, name, args)
		<-s.cache.slots
		smp := sampled{At: at, Res: res, Err: err}
		if ctx.Err() == nil {
			s.cache.put(key, smp, wall)
		}
		out = append(out, smp)
	}
	return out
}
