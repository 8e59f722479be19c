package projector

import (
	"sync"

	"github.com/loredev/lore/events"
)

// Prefetcher is a Model that can read ahead what its fold of the next
// events will read, on a goroutine of its own, so that the blocks of a
// cold store (an audit's copy of a checkpoint: its cache starts empty) are
// in the store's cache when the model's lane asks for them.
type Prefetcher interface {
	Model
	// Prefetcher returns a function called with the events of one fold,
	// in order, before or while the model folds them; it reads from r
	// (the store's committed state, under the model's prefix) what
	// folding each is likely to read, and discards it. It writes nothing,
	// changes nothing the model's Fold reads and ignores its errors: the
	// fold's result does not depend on it, only its reads' speed.
	Prefetcher(r Reader) func(ev *events.Event, data events.Payload)
}

// prefetchAhead is the most events a model's prefetcher may be handed and
// not have read ahead yet; past it events are not handed to it (it is
// behind the lane, where reading ahead is moot).
const prefetchAhead = 4096

// prefetchers are a folder's read-ahead goroutines (Folder.Prefetch).
type prefetchers struct {
	in   []chan prefetchWork
	done sync.WaitGroup
}

type prefetchWork struct {
	ev   *events.Event
	data events.Payload
}

// Prefetch makes each Prefetcher among the folder's models read ahead of
// its lane (Parallel) on a goroutine of its own, which is worth it where
// a core is idle while the folder's lanes read a cold store: an audit
// that folds one model or a few. Call it after Parallel, before the first
// Fold.
func (f *Folder) Prefetch() {
	if !f.parallel || f.prefetch != nil {
		return
	}
	f.prefetch = &prefetchers{}
	for _, l := range f.lanes {
		p, ok := l.model.(Prefetcher)
		if !ok {
			continue
		}
		read := p.Prefetcher(f.store.Model(l.model.Name()))
		in := make(chan prefetchWork, prefetchAhead)
		f.prefetch.in = append(f.prefetch.in, in)
		f.prefetch.done.Add(1)
		go func() {
			defer f.prefetch.done.Done()
			for w := range in {
				read(w.ev, w.data)
			}
		}()
	}
}

// readAhead hands an event handed to the lanes to the prefetchers that
// are not too far behind.
func (p *prefetchers) readAhead(ev *events.Event, data events.Payload) {
	if p == nil {
		return
	}
	for _, in := range p.in {
		select {
		case in <- prefetchWork{ev, data}:
		default:
		}
	}
}

// stop ends the prefetchers and waits for them.
func (p *prefetchers) stop() {
	if p == nil {
		return
	}
	for _, in := range p.in {
		close(in)
	}
	p.done.Wait()
}
