package crossloop

import (
	"sort"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

var _ projector.Prefetcher = (*Model)(nil)

// Prefetcher implements projector.Prefetcher: for a loop's completion, it
// reads what the completion's merge checks read (the merge lists of the
// signatures the loop's extraction gives, the signatures of their
// candidates, the heads of the patterns they match), from the committed
// state, with the loop's starts and iterations of the fold's own events
// added (the fold may not have committed them yet). Those reads are most
// of a completion's fold in a cold store, and a completion's fold is most
// of the model's.
func (m *Model) Prefetcher(r projector.Reader) func(*events.Event, events.Payload) {
	p := &prefetch{m: m, r: r, loops: map[string]*prefetchLoop{}}
	return p.event
}

// prefetchLoops bounds the loops a prefetcher keeps the events of.
const prefetchLoops = 1 << 14

type prefetch struct {
	m     *Model
	r     projector.Reader
	loops map[string]*prefetchLoop // the fold's loop events, by loop
}

// prefetchLoop is what the fold's events said of a loop so far.
type prefetchLoop struct {
	start *events.LoopStarted
	at    string // the start's source
	iters []Iteration
}

func (p *prefetch) event(ev *events.Event, data events.Payload) {
	switch d := data.(type) {
	case *events.LoopStarted:
		l := p.loop(d.LoopID)
		l.start, l.at = d, ev.Source
	case *events.LoopIteration:
		l := p.loop(d.LoopID)
		l.iters = append(l.iters, newIteration(d, ev.Time.UTC()))
	case *events.LoopCompleted:
		p.completed(d, p.loops[d.LoopID])
		delete(p.loops, d.LoopID)
	}
}

func (p *prefetch) loop(id string) *prefetchLoop {
	l := p.loops[id]
	if l == nil {
		if len(p.loops) >= prefetchLoops {
			clear(p.loops)
		}
		l = &prefetchLoop{}
		p.loops[id] = l
	}
	return l
}

// completed reads what the fold of d will read (its errors are ignored:
// the fold reports its own).
func (p *prefetch) completed(d *events.LoopCompleted, seen *prefetchLoop) {
	h, ok, err := loadLoopHead(p.r, d.LoopID)
	if err != nil {
		return
	}
	if !ok {
		h = &loopHead{Loop: Loop{ID: d.LoopID}}
	} else if loadIterations(p.r, h) != nil {
		return
	}
	if seen != nil {
		if s := seen.start; s != nil {
			h.Task, h.Category, h.Agent, h.Begun = s.Task, s.Category, s.Agent, true
			if h.Agent == "" {
				h.Agent = seen.at
			}
		}
		for _, it := range seen.iters { // by number, the later replacing (putIteration)
			i := sort.Search(len(h.Iterations), func(i int) bool { return h.Iterations[i].N >= it.N })
			if i < len(h.Iterations) && h.Iterations[i].N == it.N {
				h.Iterations[i] = it
			} else {
				h.Iterations = append(h.Iterations[:i], append([]Iteration{it}, h.Iterations[i:]...)...)
			}
		}
	}
	if !h.Begun {
		return // refused
	}
	h.Outcome, h.NIterations, h.FailureMode, h.Approach = d.Outcome, d.Iterations, d.FailureMode, d.Approach
	cfg, err := LoadConfig(p.r, p.m.cfg)
	if err != nil || !cfg.extractOn(true) {
		return
	}
	t := cfg.SimilarityThreshold
	for _, c := range Extract(&h.Loop, ExtractOptions{Templates: cfg.templates()}) {
		sig := c.Pattern.Signature()
		ms, err := mergeMatches(p.r, c.Pattern.Type, sig, t, nil)
		if err == nil && len(ms) == 0 {
			ms, err = mergeMatches(p.r, archivedType(c.Pattern.Type), sig, t, nil)
		}
		if err != nil {
			return
		}
		for _, x := range ms {
			_, _, _ = loadHead(p.r, x.id)
		}
		if len(ms) == 0 { // a new pattern: the lists it joins
			for _, k := range (*memo)(nil).signature(sig, t).keys {
				_, _, _ = p.r.Get(mergeKey(c.Pattern.Type, k))
			}
		}
	}
}
