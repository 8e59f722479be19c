package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// ImportOptions configure ImportKnowledge.
type ImportOptions struct {
	// Request builds the request of each knowledge.import call from its
	// arguments (default NewRequest): the project, source and idempotency
	// key a caller adds.
	Request func(args any) (Request, error)
	// Progress, when set, is called after each request with the lessons
	// sent so far, and while waiting with the lessons folded so far.
	Progress func(sent, folded, total int)
	// Wait bounds the wait for the fold without progress (default 10 s,
	// the pipeline's wait for one command): what is not folded by then is
	// reported pending.
	Wait time.Duration
	// Window is how many requests are sent ahead of the fold. 0: each
	// request waits for its fold on the server and its reply carries the
	// fold's decisions (the least CPU: the door and the fold never run at
	// once); a request the server replied to before its fold (the server's
	// wait ran out) is then waited for here, as long as the fold
	// progresses. n > 0: up to n requests are appended without waiting
	// (no_wait), so the server checks and appends one while the projector
	// folds the ones before, and the decisions are read back at the end.
	// The report is the same either way.
	Window int
}

// ImportWindow is the Window of lore knowledge import: on two cores the
// door and the fold running at once import a file about a third faster
// than requests that each wait for their fold (docs/performance.md).
const ImportWindow = 8

// ImportKnowledge is lore knowledge import of parsed submissions. They go
// in requests of app.KnowledgeImportChunk. With o.Window > 0 each is
// appended without waiting for its fold (no_wait), so the server decides
// and appends a request while the projector folds the ones before; then
// it waits once, until the fold reached the last event appended, and
// reads the fold's decision on every submission back
// (knowledge.decisions). Either way the report is the one requests that
// each waited give, read from the same decisions in the same order, and a
// slow fold is waited for as long as it progresses (o.Wait without
// progress, then the rest is reported pending).
//
// INVARIANT: a request is sent only once the requests before it holding
// one of its lessons (the same content, or the same original id) are
// folded: the server looks up what was imported before (its decision, its
// entry) when it receives a request, and must find those as it would have
// had every request waited.
func ImportKnowledge(ctx context.Context, c *Client, a app.KnowledgeImportArgs, o ImportOptions) (app.KnowledgeImportResult, error) {
	if o.Request == nil {
		o.Request = func(args any) (Request, error) { return NewRequest(args) }
	}
	if o.Wait <= 0 {
		o.Wait = 10 * time.Second
	}
	subs := a.Submissions
	total := app.KnowledgeImportResult{Items: []app.KnowledgeImportItem{}, Promoted: []knowledge.Promotion{}, Archived: []string{}}
	// Each request's report, as replied: the pending ones are resolved at
	// the end and the report put together again in request order, so the
	// promotions and archives stay in the order of the lines that caused
	// them whichever requests the server replied to before their fold.
	type answered struct {
		r    app.KnowledgeImportResult
		base int
	}
	var parts []answered
	w := foldWaiter{c: c, o: &o, total: len(subs)}
	// Lessons of the requests whose fold is not awaited yet.
	unfolded := map[string]bool{}
	const chunk = app.KnowledgeImportChunk
	for i := 0; i < len(subs) || i == 0; i += chunk {
		part := subs[i:min(i+chunk, len(subs))]
		if overlaps(part, unfolded) {
			if err := w.wait(ctx, len(w.appended)); err != nil {
				return total, err
			}
			clear(unfolded)
		}
		// At most o.Window requests ahead of the fold: the log's backlog,
		// the projector's uncommitted batch and the progress line stay
		// bounded whatever the file's size.
		if o.Window > 0 && len(w.appended) > o.Window*chunk {
			if err := w.wait(ctx, len(w.appended)-o.Window*chunk); err != nil {
				return total, err
			}
		}
		for j := range part {
			for _, k := range lessonKeys(&part[j]) {
				unfolded[k] = true
			}
		}
		args := a
		args.Submissions = part
		req, err := o.Request(args)
		if err != nil {
			return total, err
		}
		req.NoWait = o.Window > 0
		raw, err := c.CallRaw(ctx, "knowledge", "import", req)
		if err != nil {
			return total, err
		}
		var reply CommandReply
		var r app.KnowledgeImportResult
		if err := json.Unmarshal(raw, &reply); err != nil {
			return total, fmt.Errorf("decode reply of knowledge.import: %w", err)
		}
		if err := json.Unmarshal(reply.Result, &r); err != nil {
			return total, fmt.Errorf("decode result of knowledge.import: %w", err)
		}
		total.Add(r, i)
		parts = append(parts, answered{r, i})
		for _, ap := range reply.Appended {
			if !ap.Duplicate {
				w.appended = append(w.appended, ap.ID)
			}
		}
		if o.Window == 0 {
			// Each request waits for its fold: on the server, or here.
			if reply.Projected {
				w.folded = len(w.appended)
			} else if err := w.wait(ctx, len(w.appended)); err != nil {
				return total, err
			}
		}
		if w.folded == len(w.appended) {
			clear(unfolded)
		}
		w.sent = i + len(part)
		if o.Progress != nil {
			o.Progress(w.sent, w.foldedLessons(), len(subs))
		}
		if len(subs) == 0 {
			break
		}
	}
	if total.Pending == 0 {
		return total, nil
	}
	if err := w.wait(ctx, len(w.appended)); err != nil {
		return total, err
	}
	// Read back the decision on every pending submission, in order.
	var ids []string
	for _, it := range total.Items {
		if it.Outcome == app.OutcomePending {
			ids = append(ids, it.EventID)
		}
	}
	decided := make(map[string]*knowledge.Decision, len(ids))
	for i := 0; i < len(ids); i += app.MaxDecisionsPerRequest {
		ds, err := w.decisions(ctx, ids[i:min(i+app.MaxDecisionsPerRequest, len(ids))])
		if err != nil {
			return total, err
		}
		for _, d := range ds {
			if dec, ok := d.Decision(); ok {
				decided[d.EventID] = dec
			}
		}
	}
	resolved := app.KnowledgeImportResult{Items: []app.KnowledgeImportItem{}, Promoted: []knowledge.Promotion{}, Archived: []string{}}
	for _, p := range parts {
		if err := p.r.Resolve(func(id string) (*knowledge.Decision, bool, error) {
			d, ok := decided[id]
			return d, ok, nil
		}); err != nil {
			return total, err
		}
		resolved.Add(p.r, p.base)
	}
	return resolved, nil
}

// lessonKeys are what the server's look-up of an earlier import of d
// compares: its content and its original id.
func lessonKeys(d *events.KnowledgeSubmitted) []string {
	if d.Import == nil {
		return nil
	}
	ks := []string{"digest:" + d.Import.Digest}
	if d.Import.OriginalID != "" {
		ks = append(ks, "id:"+d.Import.OriginalID)
	}
	return ks
}

func overlaps(part []events.KnowledgeSubmitted, keys map[string]bool) bool {
	for i := range part {
		for _, k := range lessonKeys(&part[i]) {
			if keys[k] {
				return true
			}
		}
	}
	return false
}

// foldWaiter waits for the fold of the events an import appended.
type foldWaiter struct {
	c           *Client
	o           *ImportOptions
	appended    []string // ids of the events appended, in stream order
	folded      int      // appended[:folded] are folded
	sent, total int
}

// foldedLessons estimates the lessons folded for progress: the sent ones
// in the proportion of the events folded.
func (w *foldWaiter) foldedLessons() int {
	if len(w.appended) == 0 {
		return w.sent
	}
	return w.sent * w.folded / len(w.appended)
}

// wait returns once the first n events appended are folded, or after
// o.Wait without progress (then the rest is reported pending). The fold
// follows the stream's order and commits in order, so an event decided
// means every event before it is folded: wait probes ahead and advances.
// A dead-lettered event is never decided; the probes pass over it.
func (w *foldWaiter) wait(ctx context.Context, n int) error {
	const stride = 256
	pause := time.Millisecond
	lastProgress := time.Now()
	for w.folded < n {
		probe := min(n, w.folded+stride) - 1
		ds, err := w.decisions(ctx, []string{w.appended[probe]})
		if err != nil {
			return err
		}
		if _, ok := ds[0].Decision(); ok {
			w.folded, pause, lastProgress = probe+1, time.Millisecond, time.Now()
			if w.o.Progress != nil {
				w.o.Progress(w.sent, w.foldedLessons(), w.total)
			}
			continue
		}
		if time.Since(lastProgress) > w.o.Wait {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
	return nil
}

func (w *foldWaiter) decisions(ctx context.Context, ids []string) ([]app.KnowledgeAddResult, error) {
	req, err := NewRequest(app.KnowledgeDecisionsArgs{EventIDs: ids})
	if err != nil {
		return nil, err
	}
	var r app.KnowledgeDecisionsResult
	if err := w.c.Call(ctx, "knowledge", "decisions", req, &r); err != nil {
		return nil, err
	}
	if len(r.Decisions) != len(ids) {
		return nil, fmt.Errorf("knowledge.decisions: %d decisions for %d event ids", len(r.Decisions), len(ids))
	}
	return r.Decisions, nil
}
