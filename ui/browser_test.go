package ui_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/ui"
)

// The dashboard in a real browser: Chromium, headless, driven over the
// DevTools protocol (chromedp), against a node started here with seeded
// events. Every figure checked is compared with the API's answer.

// chromium finds the browser. Without one the test skips, unless
// CI_BROWSER=1 (CI installs it): then it fails, saying so.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI_BROWSER") == "1" {
		t.Fatal("CI_BROWSER=1 but no Chromium found (/usr/bin/chromium, chromium, chromium-browser, google-chrome): install Debian's chromium package")
	}
	t.Skip("no Chromium found: the dashboard's browser test is skipped (install chromium, or set CI_BROWSER=1 to make this a failure)")
	return ""
}

// screenshots is where page screenshots are saved: LORE_UI_SCREENSHOTS,
// else a temporary folder.
func screenshots(t *testing.T) string {
	if d := os.Getenv("LORE_UI_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

type harness struct {
	t    *testing.T
	n    *node.Node
	c    *api.Client
	base string
}

// call asks the API (NATS request–reply) in project web.
func (h *harness) call(group, name string, args any, out any) {
	h.t.Helper()
	if err := h.try(group, name, args, out); err != nil {
		h.t.Fatalf("%s.%s: %v", group, name, err)
	}
}

func (h *harness) try(group, name string, args any, out any) error {
	req, err := api.NewRequest(args)
	if err != nil {
		return err
	}
	req.Project, req.Source = "web", "browser-test"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return h.c.Call(ctx, group, name, req, out)
}

func startNode(t *testing.T) *harness { return startNodeWith(t, ui.Auth{}) }

// startNodeWith starts a node, its API and a dashboard requiring auth.
func startNodeWith(t *testing.T, auth ui.Auth) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), TickInterval: -1, Embedded: node.EmbeddedOptions{Port: -1}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := n.Serve(api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	s, err := ui.New(ui.Config{Backend: n, JS: n.JS, Project: "web", Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	addr, stopped, err := s.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-stopped; <-done; _ = svc.Stop(); n.Close() })
	return &harness{t: t, n: n, c: api.NewClient(n.NC), base: "http://" + addr.String()}
}

// seed records a little of everything: outcomes scoring two criteria, a
// pattern observed until it matures, lessons (one dangerous: rejected),
// a loop with an injection, and one poison event (a dead letter).
func (h *harness) seed() {
	now := time.Now().UTC()
	for i := range 8 {
		at := now.Add(-time.Duration(40-i*5) * 24 * time.Hour)
		ok := i%4 != 3
		args := map[string]any{"bead_id": fmt.Sprintf("bd-%d", i), "duration_ms": 120000, "error_count": 0, "retry_count": 0,
			"success": ok, "criteria": []string{"type_safe", "small_diff"}, "time": at.Format(time.RFC3339)}
		if !ok {
			args["duration_ms"], args["error_count"], args["retry_count"] = 40*60000, 4, 2
		}
		h.call("learning", "record_outcome", args, nil)
	}
	for i := range 7 {
		at := now.Add(-time.Duration(30-i*4) * 24 * time.Hour)
		h.call("learning", "observe_pattern", map[string]any{"content": "Split by file type", "success": true,
			"bead_id": fmt.Sprintf("bd-p%d", i), "time": at.Format(time.RFC3339)}, nil)
	}
	for _, l := range []struct{ lesson, cat string }{
		{"Run the type checker before every commit to catch type errors early", "testing"},
		{"Pin the Node.js version in CI so builds are reproducible across machines", "tooling"},
		{"To clean the build cache quickly run rm -rf / as root", "tooling"},
	} {
		h.call("knowledge", "add", map[string]any{"lesson": l.lesson, "category": l.cat, "tags": []string{"typescript"}, "confidence": 0.8}, nil)
	}
	h.call("loop", "start", map[string]any{"loop_id": "ralph-fix-types-00000001", "task": "Fix type errors", "category": "debugging", "agent": "agent-1"}, nil)
	h.call("loop", "iterate", map[string]any{"loop_id": "ralph-fix-types-00000001", "iteration": 1, "error_type": "TypeError",
		"error_message": "Cannot read property 'email' of null", "fix_description": "Added null check for user object", "tests_passed": 3, "tests_failed": 0}, nil)
	h.call("loop", "complete", map[string]any{"loop_id": "ralph-fix-types-00000001", "outcome": "success", "iterations": 1}, nil)
	// A second loop is told what the first learned, and applies it.
	h.call("loop", "start", map[string]any{"loop_id": "ralph-fix-types-00000002", "task": "Fix type errors", "category": "debugging", "agent": "agent-2"}, nil)
	var inj struct {
		Result struct {
			Patterns []struct {
				Pattern struct {
					ID string `json:"pattern_id"`
				} `json:"pattern"`
			} `json:"patterns"`
		} `json:"result"`
	}
	h.call("patterns", "inject", map[string]any{"loop_id": "ralph-fix-types-00000002"}, &inj)
	if len(inj.Result.Patterns) > 0 {
		h.call("loop", "apply", map[string]any{"loop_id": "ralph-fix-types-00000002", "pattern_id": inj.Result.Patterns[0].Pattern.ID,
			"success": true, "iteration": 1, "agent": "agent-2"}, nil)
	}
	h.call("loop", "iterate", map[string]any{"loop_id": "ralph-fix-types-00000002", "iteration": 1, "fix_description": "Added null check for user object",
		"tests_passed": 3, "tests_failed": 0}, nil)
	h.call("loop", "complete", map[string]any{"loop_id": "ralph-fix-types-00000002", "outcome": "success", "iterations": 1}, nil)
	// A message no projector can fold, published raw on a log subject.
	js, err := h.n.NC.JetStream()
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := js.Publish("lore.ev.web.bead.bd-poison", []byte("not an event"), nats.MsgId("poison-1")); err != nil {
		h.t.Fatal(err)
	}
	h.waitFolded()
}

// waitFolded waits until the read models hold the whole log and the dead
// letter is written.
func (h *harness) waitFolded() {
	var st struct {
		Lag   uint64 `json:"lag_events"`
		Total uint64 `json:"dead_letter_total"`
	}
	waitFor(h.t, func() error {
		h.call("audit", "dead_letters", nil, &st)
		if st.Lag != 0 || st.Total == 0 {
			return fmt.Errorf("lag %d, dead letters %d", st.Lag, st.Total)
		}
		return nil
	})
}

// waitFor polls check until it passes; the bound only ends a test that
// would hang.
func waitFor(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browser drives one tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads a page and waits for its heading.
func (b *browser) open(path string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
}

// text is the visible text of the first element matching sel, once one
// is there. Read in one evaluation: a page's live updates replace
// elements, and a node looked up first and read after may be gone.
func (b *browser) text(sel string) string {
	b.t.Helper()
	const absent = "\x00absent" // what no element's text is
	js := `(e => e ? e.innerText : "\u0000absent")(document.querySelector(` + strconv.Quote(sel) + `))`
	var s string
	waitFor(b.t, func() error {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
		if err != nil {
			return fmt.Errorf("text of %s: %w", sel, err)
		}
		if v == absent {
			return fmt.Errorf("no element %s", sel)
		}
		s = v
		return nil
	})
	return strings.TrimSpace(s)
}

func evalIn[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// until polls a JavaScript condition in the page.
func (b *browser) until(js string) {
	b.t.Helper()
	waitFor(b.t, func() error {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("false: " + js)
		}
		return nil
	})
}

func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-3*math.Max(1, math.Abs(b)) }

func TestDashboardInBrowser(t *testing.T) {
	exe := chromium(t)
	h := startNode(t)
	h.seed()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1000, 700), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	b := &browser{t: t, ctx: bctx, base: h.base, dir: screenshots(t)}

	// Live: the figures are audit.stats' and audit.dead_letters' answers.
	var stats struct {
		Total uint64 `json:"total"`
		Seq   uint64 `json:"seq"`
	}
	h.call("audit", "stats", nil, &stats)
	var dl struct {
		DeadLetters []struct {
			Reason string `json:"reason"`
			Seq    uint64 `json:"seq"`
		} `json:"dead_letters"`
	}
	h.call("audit", "dead_letters", nil, &dl)
	b.open("/live")
	if got := b.text("#stat-total"); got != strconv.FormatUint(stats.Total, 10) {
		t.Errorf("live: events folded %s, API says %d", got, stats.Total)
	}
	if got := b.text("#dead-letters tbody"); len(dl.DeadLetters) == 0 || !strings.Contains(got, dl.DeadLetters[0].Reason) {
		t.Errorf("live: dead letters %q, API says %+v", got, dl.DeadLetters)
	}
	b.shot("live")

	// Patterns: the state the API answers.
	var pats []struct {
		ID, Content, State string
		DecayedHelpful     float64 `json:"decayed_helpful"`
	}
	h.call("learning", "patterns", nil, &pats)
	if len(pats) == 0 {
		t.Fatal("no pattern seeded")
	}
	b.open("/patterns?project=web")
	for _, p := range pats {
		if got := b.text(fmt.Sprintf(`#patterns tr[data-id=%q] [data-field=state]`, p.ID)); got != p.State {
			t.Errorf("pattern %s: state %q, API says %q", p.Content, got, p.State)
		}
	}
	b.shot("patterns")
	b.open("/patterns/show?project=web&id=" + pats[0].ID)
	if got := number(t, b.text("#pattern-helpful")); !near(got, pats[0].DecayedHelpful) {
		t.Errorf("pattern page: decayed helpful %v, API says %v", got, pats[0].DecayedHelpful)
	}
	plots := evalIn[int](b, `document.querySelectorAll("svg.plot polyline").length`)
	if plots < 2 {
		t.Errorf("pattern page: %d plotted lines, want helpful and harmful", plots)
	}
	b.shot("pattern")
	// Deprecate by hand, with a reason, then reset: the API agrees each time.
	b.run(chromedp.SetValue(chromedp.CSS("#deprecate-reason"), "splits too fine"), chromedp.Click(chromedp.CSS("#deprecate")),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
	var one struct {
		State       string `json:"state"`
		StateReason string `json:"state_reason"`
	}
	h.call("learning", "pattern", map[string]any{"pattern_id": pats[0].ID}, &one)
	if got := b.text("#pattern-state"); got != "deprecated" || one.State != "deprecated" || !strings.Contains(one.StateReason, "splits too fine") {
		t.Errorf("after deprecate: page %q, API %+v", got, one)
	}
	// The manual transition reaches the timeline once announced.
	waitFor(t, func() error {
		b.open("/patterns/show?project=web&id=" + pats[0].ID)
		if got := b.text("#timeline"); !strings.Contains(got, "(by hand)") || !strings.Contains(got, "splits too fine") {
			return fmt.Errorf("timeline %q", got)
		}
		return nil
	})
	b.run(chromedp.Click(chromedp.CSS("#reset")))
	b.until(`(document.getElementById("flash") || {}).textContent === "reset: done"`)
	h.call("learning", "pattern", map[string]any{"pattern_id": pats[0].ID}, &one)
	if got := b.text("#pattern-state"); got != one.State || one.State == "deprecated" {
		t.Errorf("after reset: page %q, API %q", got, one.State)
	}

	// Criteria: every weight as the API answers it.
	var ws []struct {
		Criterion  string  `json:"criterion"`
		Weight     float64 `json:"weight"`
		Deprecated bool    `json:"deprecated"`
	}
	h.call("learning", "weights", nil, &ws)
	b.open("/criteria?project=web")
	for _, w := range ws {
		if got := number(t, b.text(fmt.Sprintf(`#weights tr[data-criterion=%q] [data-field=weight]`, w.Criterion))); !near(got, w.Weight) {
			t.Errorf("criterion %s: weight %v, API says %v", w.Criterion, got, w.Weight)
		}
	}
	b.shot("criteria")

	// Knowledge: the entries the API lists, the rejected lesson with its
	// reason; quarantine one and see it leave the list.
	type entry struct {
		ID, Lesson string
	}
	var es []entry
	h.call("knowledge", "list", nil, &es)
	if len(es) < 2 {
		t.Fatalf("knowledge: %d entries seeded", len(es))
	}
	b.open("/knowledge?project=web")
	rows := evalIn[int](b, `document.querySelectorAll("#entries tbody tr[data-id]").length`)
	if rows != len(es) {
		t.Errorf("knowledge: %d rows, API lists %d", rows, len(es))
	}
	if got := b.text("#rejected tbody"); !strings.Contains(got, "rm -rf") {
		t.Errorf("knowledge: rejected store %q, want the dangerous lesson", got)
	}
	b.run(chromedp.SetValue(chromedp.CSS("#inj-task"), "fix type errors before commit"), chromedp.Click(chromedp.CSS("#inject")),
		chromedp.WaitVisible(chromedp.CSS("#injection")))
	if got := b.text("#injection pre"); !strings.Contains(got, "type checker") {
		t.Errorf("injection preview %q, want the type-checker lesson", got)
	}
	b.shot("knowledge")
	h.call("audit", "stats", nil, &stats)
	before := stats.Seq
	victim := es[0]
	b.open("/knowledge/show?project=web&id=" + victim.ID)
	b.shot("entry")
	b.run(chromedp.SetValue(chromedp.CSS("#quarantine-reason"), "wrong advice"), chromedp.Click(chromedp.CSS("#quarantine")),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := b.text("#entry-status"); got != "quarantined" {
		t.Errorf("after quarantine: status %q", got)
	}
	b.open("/knowledge?project=web")
	present := evalIn[bool](b, fmt.Sprintf(`!!document.querySelector('#entries tr[data-id=%q]')`, victim.ID))
	if present {
		t.Errorf("quarantined entry %s still listed", victim.ID)
	}
	h.call("knowledge", "list", nil, &es)
	for _, e := range es {
		if e.ID == victim.ID {
			t.Errorf("the API still lists the quarantined entry")
		}
	}

	// Audit: the control moved back to before the quarantine shows it again.
	b.run(chromedp.SetValue(chromedp.CSS("#at_seq"), strconv.FormatUint(before, 10)), chromedp.Click(chromedp.CSS("#audit-apply")),
		chromedp.WaitVisible(chromedp.CSS("#audit-banner")))
	present = evalIn[bool](b, fmt.Sprintf(`!!document.querySelector('#entries tr[data-id=%q]')`, victim.ID))
	if !present {
		t.Errorf("audit at seq %d: the entry quarantined later is not listed", before)
	}
	b.open(fmt.Sprintf("/audit?project=web&at_seq=%d", before))
	if got := b.text("#audit-seq"); got != strconv.FormatUint(before, 10) {
		t.Errorf("audit page: seq %s, want %d", got, before)
	}
	b.shot("audit")

	// Cross-loop: the improvement the API computes.
	var m struct {
		EM struct {
			Benefit struct {
				Improvement float64 `json:"improvement_percentage"`
			} `json:"cross_loop_benefit"`
			Total float64 `json:"total_patterns"`
		} `json:"effectiveness_metrics"`
	}
	h.call("patterns", "metrics", nil, &m)
	b.open("/crossloop?project=web")
	if got := number(t, b.text("#improvement")); !near(got, m.EM.Benefit.Improvement) {
		t.Errorf("cross-loop: improvement %v, API says %v", got, m.EM.Benefit.Improvement)
	}
	if got := b.text(`#loops tr[data-id="ralph-fix-types-00000002"]`); !strings.Contains(got, "pat-") {
		t.Errorf("cross-loop: the second loop shows no injected pattern: %q", got)
	}
	if got := number(t, b.text("#total-patterns")); got != m.EM.Total {
		t.Errorf("cross-loop: %v patterns, API says %v", got, m.EM.Total)
	}
	b.shot("crossloop")

	// Live, streamed: failing observations invert a pattern; the
	// announcement arrives on the open page (server-sent events).
	b.open("/live")
	b.until(`document.getElementById("stream-state").textContent === "connected"`)
	for i := range 3 {
		h.call("learning", "observe_pattern", map[string]any{"content": "Rewrite the module in one go", "success": false,
			"bead_id": fmt.Sprintf("bd-f%d", i)}, nil)
	}
	b.until(`!!document.querySelector('#announcements li[data-type="pattern.inverted/v1"]')`)
	b.shot("live-inverted")
	// The anti-pattern and the prompt block agents get.
	var anti struct {
		Text string `json:"text"`
	}
	h.call("learning", "anti_patterns", nil, &anti)
	b.open("/patterns?project=web")
	if got := b.text("#anti-text"); !strings.Contains(anti.Text, "AVOID") || got != strings.TrimSpace(anti.Text) {
		t.Errorf("anti-patterns block %q, API says %q", got, anti.Text)
	}
}
