package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/loredev/lore/projector"
)

// Plots over time ask a query at several past points (as_of audits
// through the pipeline, as `--as-of` does). Each audit folds from the
// nearest audit checkpoint, so they are bounded: at most auditSlots run at
// once, and answers are cached. The earlier points lie on a grid of round
// steps (grid), each moved to the latest event time of an audit checkpoint
// within half a step when there is one (an audit there folds at most one
// block of the time index, where one elsewhere may fold up to an interval
// of checkpoints: seconds on a log of a million events); they stay put as
// time goes on and are kept for seriesTTL, so a busy log does not re-audit
// them on every view (an event backfilled before such a point shows within
// that time). The last point (the view's own) is keyed by the live log
// sequence and always exact.

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
	points := grid(from, to, n, s.markTimes(from, to))
	for i, at := range points {
		seq := uint64(0) // earlier points: kept for seriesTTL
		if i == len(points)-1 {
			seq = live
		}
		key := fmt.Sprintf("%s.%s|%s|%s|%d|%d|%d", group, name, argKey, v.Project, at.UnixNano(), v.AtSeq, seq)
		if r, ok := s.cache.get(key, wall); ok {
			out = append(out, r.(sampled))
			continue
		}
		pv := v
		if pv.AsOf = &at; i == len(points)-1 && !v.Audit() {
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

// auditMarks is what a backend with audit checkpoints tells (node.Node).
type auditMarks interface {
	AuditCheckpoints() []projector.AuditMark
}

// markTimes returns the latest event times of the backend's audit
// checkpoints in [from, to), sorted (none without checkpoints).
func (s *Server) markTimes(from, to time.Time) []time.Time {
	b, ok := s.cfg.Backend.(auditMarks)
	if !ok {
		return nil
	}
	var ts []time.Time
	for _, m := range b.AuditCheckpoints() {
		if m.Complete && m.Seq > 0 && !m.MaxTime.Before(from) && m.MaxTime.Before(to) {
			ts = append(ts, m.MaxTime)
		}
	}
	slices.SortFunc(ts, time.Time.Compare)
	return ts
}

// grid returns the times a plot from `from` to `to` samples, at most
// n+1, the last one `to`: multiples of a round step (steps), so they stay
// put as `to` moves on and earlier points are answered from the cache,
// each moved to the nearest mark within half a step (snap).
func grid(from, to time.Time, n int, marks []time.Time) []time.Time {
	want := to.Sub(from) / time.Duration(max(n-1, 1))
	step := steps[len(steps)-1]
	for _, s := range steps {
		if s >= want {
			step = s
			break
		}
	}
	for step < want { // beyond the longest round step: whole multiples of it
		step += steps[len(steps)-1]
	}
	var out []time.Time
	for at := from.Truncate(step); at.Before(to); at = at.Add(step) {
		out = append(out, snap(at, step/2, marks))
	}
	return append(out, to)
}

// steps are the round spacings of a plot's points.
var steps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour}

// snap returns the time of marks nearest to t within within, else t to the
// minute.
func snap(t time.Time, within time.Duration, marks []time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(marks, t, time.Time.Compare)
	var at time.Time
	best := within
	for _, j := range []int{i - 1, i} {
		if j < 0 || j >= len(marks) {
			continue
		}
		if d := max(marks[j].Sub(t), t.Sub(marks[j])); d <= best {
			best, at = d, marks[j]
		}
	}
	if !at.IsZero() {
		return at
	}
	return t.Truncate(time.Minute)
}
