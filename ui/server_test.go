package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/benchkit"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
	"github.com/loredev/lore/ui"
)

func get(t *testing.T, u string, set func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDashboardRequiresTheAPICredential(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth ui.Auth
		set  func(*http.Request)
		want int
	}{
		{"no credential is refused", ui.Auth{User: "ops", Password: "s3cret"}, nil, http.StatusUnauthorized},
		{"a wrong password is refused", ui.Auth{User: "ops", Password: "s3cret"}, func(r *http.Request) { r.SetBasicAuth("ops", "nope") }, http.StatusUnauthorized},
		{"the user and password pass", ui.Auth{User: "ops", Password: "s3cret"}, func(r *http.Request) { r.SetBasicAuth("ops", "s3cret") }, http.StatusOK},
		{"the token as bearer passes", ui.Auth{Token: "tok-1"}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-1") }, http.StatusOK},
		{"the token as password passes", ui.Auth{Token: "tok-1"}, func(r *http.Request) { r.SetBasicAuth("anyone", "tok-1") }, http.StatusOK},
		{"a wrong token is refused", ui.Auth{Token: "tok-1"}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-2") }, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startNodeWith(t, tc.auth)
			if code, body := get(t, h.base+"/audit", tc.set); code != tc.want {
				t.Fatalf("GET /audit = %d, want %d: %s", code, tc.want, body)
			}
		})
	}
}

func TestDashboardServeRefusesBeyondLoopbackWithoutAuth(t *testing.T) {
	h := startNode(t)
	s, err := ui.New(ui.Config{Backend: h.n, JS: h.n.JS})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Serve(context.Background(), "0.0.0.0:0"); !errors.Is(err, node.ErrInvalidConfig) || !strings.Contains(err.Error(), "--ui") {
		t.Fatalf("Serve on every interface without auth: %v, want ErrInvalidConfig naming --ui", err)
	}
}

func TestDashboardAuditControlNamesBadInput(t *testing.T) {
	h := startNode(t)
	for _, q := range []string{"at_seq=abc", "at_seq=0", "as_of=yesterday"} {
		code, body := get(t, h.base+"/patterns?"+q, nil)
		field := strings.SplitN(q, "=", 2)[0]
		if code != http.StatusBadRequest || !strings.Contains(body, field) {
			t.Errorf("%s: %d, want 400 naming %s", q, code, field)
		}
	}
}

func TestDashboardFormsNeedTheirTokenAndOrigin(t *testing.T) {
	h := startNode(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(form url.Values, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, h.base+"/knowledge/action", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(url.Values{"id": {"x"}, "action": {"quarantine"}}, ""); code != http.StatusForbidden {
		t.Errorf("form without its token: %d, want 403", code)
	}
	if code := post(url.Values{"id": {"x"}, "action": {"quarantine"}, "csrf": {"guess"}}, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin form: %d, want 403", code)
	}
}

// TestDeadLettersAnswerLiveOnly: audit.dead_letters lists a poison event
// with its reason and the projector's lag, through the NATS API; an audit
// point is bad input (dead letters are not folded).
func TestDeadLettersAnswerLiveOnly(t *testing.T) {
	h := startNode(t)
	js, err := h.n.NC.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("lore.ev.web.bead.bd-1", []byte("{not json"), nats.MsgId("poison-x")); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Log   uint64 `json:"log_last_seq"`
		Lag   uint64 `json:"lag_events"`
		Total uint64 `json:"dead_letter_total"`
		Dead  []struct {
			Seq     uint64 `json:"seq"`
			Subject string `json:"subject"`
			Reason  string `json:"reason"`
		} `json:"dead_letters"`
	}
	waitFor(t, func() error {
		h.call("audit", "dead_letters", nil, &st)
		if st.Total != 1 || st.Lag != 0 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	if len(st.Dead) != 1 || st.Dead[0].Seq != st.Log || st.Dead[0].Subject != "lore.ev.web.bead.bd-1" || st.Dead[0].Reason == "" {
		t.Fatalf("dead letters: %+v", st)
	}
	req, _ := api.NewRequest(nil)
	req.AtSeq = 1
	err = h.c.Call(context.Background(), "audit", "dead_letters", req, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "400" {
		t.Fatalf("dead letters at an audit point: %v, want code 400", err)
	}
}

// TestInjectionPreviewNamesBadInput: the preview's bad headroom, and the
// command's own refusal, are bad input on the page (400), named.
func TestInjectionPreviewNamesBadInput(t *testing.T) {
	h := startNode(t)
	code, body := get(t, h.base+"/knowledge", nil)
	if code != http.StatusOK {
		t.Fatalf("knowledge page: %d", code)
	}
	i := strings.Index(body, `name="csrf" value="`)
	if i < 0 {
		t.Fatal("no form token on the knowledge page")
	}
	csrf := body[i+len(`name="csrf" value="`):]
	csrf = csrf[:strings.Index(csrf, `"`)]
	for _, tc := range []struct{ headroom, want string }{{"lots", "headroom"}, {"7", "headroom"}} {
		resp, err := http.PostForm(h.base+"/knowledge/inject", url.Values{"csrf": {csrf}, "task": {"fix the build"}, "headroom": {tc.headroom}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("headroom %q: %d, want 400 naming %s", tc.headroom, resp.StatusCode, tc.want)
		}
	}
}

// TestDashboardListsPageByPage: the registry (cross-loop page) and the
// decomposition patterns (patterns page) are shown a page at a time, the
// pages joined are the whole listing in the API's order, and a bad offset
// is refused naming it.
func TestDashboardListsPageByPage(t *testing.T) {
	h := startNode(t)
	ctx := context.Background()
	evs, err := benchkit.SeedPatterns(5, 120)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour)
	for i := range 130 {
		ev, err := events.New("pattern.observed/v1", "web", "test", at.Add(time.Duration(i)*time.Second),
			&events.PatternObserved{Content: fmt.Sprintf("Split the work by module %03d", i), Success: true})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike")
	conf := 0.7
	for i := range 150 {
		ev, err := events.New("knowledge.submitted/v1", "web", "test", at.Add(time.Duration(i)*time.Second),
			&events.KnowledgeSubmitted{Lesson: fmt.Sprintf("Pin the %s %s %s toolchain in CI, lesson %03d", words[i%13], words[(i/13)%13], words[(i/3)%13], i),
				Category: "tooling", Confidence: &conf, Source: "agent", Tier: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	rs, err := h.n.Appender.AppendBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.n.WaitFor(ctx, rs[len(rs)-1].Seq); err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`<tr data-id="([^"]+)"`)
	next := regexp.MustCompile(`<a rel="next" href="([^"]+)"`)
	for _, c := range []struct {
		path, table, group, name string
		args                     map[string]any
		pages                    int
	}{
		{"/crossloop?", `id="registry"`, "patterns", "list", nil, 3},
		{"/patterns?", `id="patterns"`, "learning", "patterns", nil, 2},
		// The filters are kept from page to page; the text search is the
		// query's.
		{"/knowledge?archived=1", `id="entries"`, "knowledge", "list", map[string]any{"archived": true}, 2},
		{"/knowledge?archived=1&q=ALPHA", `id="entries"`, "knowledge", "list", map[string]any{"archived": true, "text": "ALPHA"}, 1},
	} {
		var shown []string
		u, pages := h.base+c.path, 0
		for u != "" {
			code, body := get(t, u, nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d: %s", u, code, body)
			}
			pages++
			table := body[strings.Index(body, c.table):]
			table = table[:strings.Index(table, "</table>")]
			for _, m := range ids.FindAllStringSubmatch(table, -1) {
				shown = append(shown, m[1])
			}
			u = ""
			if m := next.FindStringSubmatch(body); m != nil {
				u = h.base + html.UnescapeString(m[1])
			}
		}
		var listed []struct {
			ID        string `json:"id"`
			PatternID string `json:"pattern_id"`
		}
		req, err := api.NewRequest(c.args)
		if err != nil {
			t.Fatal(err)
		}
		req.Project = "web"
		raw, err := h.c.CallRaw(ctx, c.group, c.name, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &listed); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range listed {
			want = append(want, p.ID+p.PatternID)
		}
		if pages != c.pages || (c.pages > 1 && len(want) <= 100) || len(want) == 0 || strings.Join(shown, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %d pages showing %d items, want %d pages showing the %d of %s.%s in its order", c.path, pages, len(shown), c.pages, len(want), c.group, c.name)
		}
		if code, body := get(t, h.base+c.path+"&offset=-3", nil); code != http.StatusBadRequest || !strings.Contains(body, "offset") {
			t.Errorf("%s?offset=-3: %d, want 400 naming the offset", c.path, code)
		}
	}
}
