package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/loredev/lore/events"
)

// The live page: announcements from LORE_DERIVED as they are published
// (server-sent events), event rates, the projector's lag and the dead
// letters with their reasons.

// announcement is one derived event as the live page shows it.
type announcement struct {
	Seq     uint64 `json:"seq"` // in LORE_DERIVED
	Type    string `json:"type"`
	Project string `json:"project"`
	Subject string `json:"subject"`
	Time    string `json:"time"`
	Summary string `json:"summary"`
}

// liveStats is what the stream sends every few seconds.
type liveStats struct {
	FoldedSeq       uint64  `json:"folded_seq"`
	LogLastSeq      uint64  `json:"log_last_seq"`
	LagEvents       uint64  `json:"lag_events"`
	DeadLetterTotal uint64  `json:"dead_letter_total"`
	FoldedPerSec    float64 `json:"folded_per_sec"`
	AppendedPerSec  float64 `json:"appended_per_sec"`
	Error           string  `json:"error,omitempty"`
}

// recentMax bounds the announcements the live page starts with.
const recentMax = 50

// hub reads the announcements and the projector's figures once for every
// open live page.
type hub struct {
	js  jetstream.JetStream
	log *slog.Logger

	mu      sync.Mutex
	recent  []announcement // oldest first, at most recentMax
	subs    map[chan any]struct{}
	samples []sample // the last minute, oldest first
	stats   liveStats
}

type sample struct {
	at             time.Time
	folded, logged uint64
}

func newHub(js jetstream.JetStream, log *slog.Logger) *hub {
	return &hub{js: js, log: log, subs: map[chan any]struct{}{}}
}

// run follows LORE_DERIVED from its last recentMax announcements on, and
// samples the projector's figures every 2 s, until ctx ends.
func (h *hub) run(ctx context.Context, s *Server) {
	var wg sync.WaitGroup
	if h.js != nil {
		wg.Add(1)
		go func() { defer wg.Done(); h.follow(ctx) }()
	}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		h.sample(ctx, s)
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
	}
}

func (h *hub) follow(ctx context.Context) {
	for ctx.Err() == nil {
		if err := h.consume(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("dashboard: announcements", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// consume reads announcements with an ordered consumer (no state on the
// server), starting after the newest one seen.
func (h *hub) consume(ctx context.Context) error {
	st, err := h.js.Stream(ctx, events.DerivedStream)
	if err != nil {
		return fmt.Errorf("derived stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("derived stream info: %w", err)
	}
	start := uint64(1)
	h.mu.Lock()
	if n := len(h.recent); n > 0 {
		start = h.recent[n-1].Seq + 1
	} else if info.State.LastSeq > recentMax {
		start = info.State.LastSeq - recentMax + 1
	}
	h.mu.Unlock()
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start})
	if err != nil {
		return fmt.Errorf("derived consumer: %w", err)
	}
	it, err := c.Messages()
	if err != nil {
		return fmt.Errorf("derived messages: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("derived next: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		ev, err := events.Decode(m.Data())
		if err != nil {
			continue // not an envelope: nothing to show
		}
		h.publish(announce(meta.Sequence.Stream, ev))
	}
}

func announce(seq uint64, ev *events.Event) announcement {
	sum := string(ev.Data)
	var data map[string]any
	if json.Unmarshal(ev.Data, &data) == nil {
		// The payload's prose, when it has some, reads best.
		for _, k := range []string{"text", "anti_pattern", "reason", "lesson", "content", "title"} {
			if s, ok := data[k].(string); ok && s != "" {
				sum = s
				break
			}
		}
	}
	if len(sum) > 240 {
		sum = sum[:240] + "…"
	}
	return announcement{Seq: seq, Type: ev.Type, Project: ev.Project, Subject: ev.Subject,
		Time: ev.Time.UTC().Format(time.RFC3339), Summary: sum}
}

func (h *hub) publish(a announcement) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recent = append(h.recent, a)
	if len(h.recent) > recentMax {
		h.recent = append(h.recent[:0], h.recent[len(h.recent)-recentMax:]...)
	}
	h.fanout(a)
}

// fanout hands v to every open stream. REQUIRES: h.mu held. A stream that
// does not keep up misses it (the page reloads to catch up).
func (h *hub) fanout(v any) {
	for ch := range h.subs {
		select {
		case ch <- v:
		default:
		}
	}
}

// sample reads the projector's figures through audit.dead_letters.
func (h *hub) sample(ctx context.Context, s *Server) {
	st := liveStats{}
	res, err := s.query(ctx, view{Project: s.cfg.Project}, "audit", "dead_letters", map[string]any{"limit": 1})
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		st = h.stats
		st.Error = err.Error()
	} else {
		st.FoldedSeq, st.LogLastSeq = uint64(fnum(res, "folded_seq")), uint64(fnum(res, "log_last_seq"))
		st.LagEvents, st.DeadLetterTotal = uint64(fnum(res, "lag_events")), uint64(fnum(res, "dead_letter_total"))
		h.samples = append(h.samples, sample{at: now, folded: st.FoldedSeq, logged: st.LogLastSeq})
		for len(h.samples) > 1 && now.Sub(h.samples[0].at) > time.Minute {
			h.samples = h.samples[1:]
		}
		if n := len(h.samples); n > 1 {
			first, last := h.samples[0], h.samples[n-1]
			if dt := last.at.Sub(first.at).Seconds(); dt > 0 {
				st.FoldedPerSec = float64(last.folded-first.folded) / dt
				st.AppendedPerSec = float64(last.logged-first.logged) / dt
			}
		}
	}
	h.stats = st
	h.fanout(st)
}

func (h *hub) snapshot() ([]announcement, liveStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]announcement, len(h.recent))
	for i, a := range h.recent {
		out[len(out)-1-i] = a // newest first
	}
	return out, h.stats
}

func (h *hub) subscribe() (chan any, func()) {
	ch := make(chan any, 64)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// liveStream is the server-sent event stream of the live page: event
// "announcement" per announcement, "stats" every few seconds.
func (s *Server) liveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, unsubscribe := s.live.subscribe()
	defer unsubscribe()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case v := <-ch:
			name, id := "stats", ""
			if a, ok := v.(announcement); ok {
				name, id = "announcement", strconv.FormatUint(a.Seq, 10)
			}
			b, err := json.Marshal(v)
			if err != nil {
				continue
			}
			if id != "" {
				fmt.Fprintf(w, "id: %s\n", id)
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			fl.Flush()
		}
	}
}

type livePageData struct {
	Announcements []announcement
	Stats         liveStats
	// Counts are audit.stats (at the audit point when one is set).
	Counts  any
	Types   []typeCount
	Status  any // audit.dead_letters (live only)
	DLError string
}

type typeCount struct {
	Type  string
	Count float64
}

func (s *Server) livePage(w http.ResponseWriter, r *http.Request) {
	v, err := s.parseView(r)
	if err != nil {
		s.fail(w, r, "Live", v, err)
		return
	}
	d := livePageData{}
	d.Announcements, d.Stats = s.live.snapshot()
	p := page{Title: "Live", Nav: "Live", View: v, Data: &d}
	code := http.StatusOK
	if d.Counts, err = s.query(r.Context(), v, "audit", "stats", nil); err != nil {
		p.Error, code = err.Error(), status(err)
	}
	byType, _ := field(d.Counts, "by_type").(map[string]any)
	for t, n := range byType {
		f, _ := n.(float64)
		d.Types = append(d.Types, typeCount{t, f})
	}
	sort.Slice(d.Types, func(i, j int) bool {
		if d.Types[i].Count != d.Types[j].Count {
			return d.Types[i].Count > d.Types[j].Count
		}
		return d.Types[i].Type < d.Types[j].Type
	})
	if !v.Audit() {
		if d.Status, err = s.query(r.Context(), v, "audit", "dead_letters", map[string]any{"limit": 50}); err != nil {
			d.DLError = err.Error()
		} else {
			// Fresher than the last sample; the stream updates them.
			d.Stats.FoldedSeq, d.Stats.LogLastSeq = uint64(fnum(d.Status, "folded_seq")), uint64(fnum(d.Status, "log_last_seq"))
			d.Stats.LagEvents, d.Stats.DeadLetterTotal = uint64(fnum(d.Status, "lag_events")), uint64(fnum(d.Status, "dead_letter_total"))
		}
	}
	s.render(w, r, code, "live", p)
}
