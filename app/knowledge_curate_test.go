package app_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/knowledge"
)

// fakeCurator is an OpenAI-compatible chat-completions endpoint on
// 127.0.0.1 answering what answer returns for the request it got.
type fakeCurator struct {
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
	answer   func(req map[string]any) (status int, body string)
}

// set changes the answer of the next requests.
func (f *fakeCurator) set(answer func(req map[string]any) (int, string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

func (f *fakeCurator) start(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "no route "+r.URL.Path, http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		answer := f.answer
		f.mu.Unlock()
		status, body := answer(req)
		if status == 0 { // hang until the client gives up
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chatAnswer wraps content as a chat completion.
func chatAnswer(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0,
		"message": map[string]any{"role": "assistant", "content": content}}}})
	return string(b)
}

func recs(rs ...map[string]string) string {
	b, _ := json.Marshal(map[string]any{"recommendations": rs})
	return string(b)
}

// TestKnowledgeCurateLLM drives the LLM curator against a fake endpoint:
// the candidates are sent with the model and key configured; each
// recommendation the state accepts is recorded as its event and read back
// (promoted to the hive, quarantined, merged); one the state refuses is
// reported and records nothing.
func TestKnowledgeCurateLLM(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	lessons := []string{
		"Pin the docker base image digest so CI builds stay reproducible",
		"Run the api schema tests before every release build",
		"Use fixtures files for the parser golden tests in CI",
		"Keep parser golden files as fixtures checked into the repo",
		"Record each architecture decision with its context and date",
	}
	var ids []string
	for i, l := range lessons {
		res, err := v.call(t, "add", map[string]any{"lesson": l, "category": "process", "phase": i + 1}, now)
		if err != nil || res.(app.KnowledgeAddResult).Outcome != knowledge.OutcomeAdded {
			t.Fatalf("add %q: %+v %v", l, res, err)
		}
		ids = append(ids, res.(app.KnowledgeAddResult).ID)
	}
	// The last lesson is in the hive already (by hand): promoting it is refused.
	if _, err := v.call(t, "promote", map[string]any{"lesson": lessons[4] + " always"}, now); err != nil {
		t.Fatal(err)
	}
	fc := &fakeCurator{answer: func(map[string]any) (int, string) {
		return 200, chatAnswer("```json\n" + recs(
			map[string]string{"action": "promote", "id": ids[0], "reason": "general CI advice"},
			map[string]string{"action": "quarantine", "id": ids[1], "reason": "contradicted by the release process"},
			map[string]string{"action": "merge", "id": ids[2], "into": ids[3], "reason": "same lesson"},
			map[string]string{"action": "promote", "id": ids[4], "reason": "useful everywhere"}) + "\n```")
	}}
	srv := fc.start(t)
	t.Setenv("LORE_CURATOR_URL", srv.URL)
	t.Setenv("LORE_CURATOR_MODEL", "test-model")
	t.Setenv("LORE_CURATOR_API_KEY", "k-test")
	t.Setenv("LORE_CURATOR_TIMEOUT", "")

	out, err := v.call(t, "curate", map[string]any{"llm": true}, now)
	if err != nil {
		t.Fatal(err)
	}
	var res app.KnowledgeCurateResult
	b, _ := json.Marshal(out)
	if err := json.Unmarshal(b, &res); err != nil || res.LLM == nil {
		t.Fatalf("curate reply %s: %v", b, err)
	}
	if len(fc.requests) != 1 || fc.requests[0]["model"] != "test-model" || fc.auth[0] != "Bearer k-test" {
		t.Fatalf("requests %v auth %v", fc.requests, fc.auth)
	}
	sent, _ := json.Marshal(fc.requests[0]["messages"])
	for _, id := range ids {
		if !strings.Contains(string(sent), id) {
			t.Errorf("entry %s not sent to the curator", id)
		}
	}
	l := res.LLM
	if l.Candidates != 5 || l.Accepted != 3 || l.Refused != 1 || len(l.Recommendations) != 4 {
		t.Fatalf("llm report %+v", l)
	}
	if r := l.Recommendations[3]; r.Accepted || !strings.Contains(r.Refused, "already exists in hive") {
		t.Errorf("refused recommendation %+v", r)
	}
	want := []string{"promoted to hive " + knowledge.HiveIDFor(ids[0]), "quarantined", "merged into " + ids[3]}
	for i, w := range want {
		if r := l.Recommendations[i]; !r.Accepted || r.EventID == "" || r.Result != w {
			t.Errorf("recommendation %d: %+v, want result %q", i, r, w)
		}
	}
	r := v.Model(knowledge.ModelName)
	q, _, _ := knowledge.GetEntry(r, ids[1])
	if q.Status != knowledge.StatusQuarantined || q.QuarantineReason != "curator: contradicted by the release process" || q.ReportedBy != "curator-llm:test-model" {
		t.Errorf("quarantined entry %+v", q)
	}
	from, _, _ := knowledge.GetEntry(r, ids[2])
	into, _, _ := knowledge.GetEntry(r, ids[3])
	if from.Status != knowledge.StatusArchived || from.ArchiveReason != knowledge.ArchiveMerged || from.MergedInto != ids[3] ||
		into.DistinctPhases() != 2 || !into.Active() {
		t.Errorf("merge: from %+v into %+v", from, into)
	}
	hive, _ := knowledge.HiveEntries(r)
	if len(hive) != 2 {
		t.Errorf("hive: %d entries, want the manual one and the promoted one", len(hive))
	}
}

// TestKnowledgeCurateLLMFailures: unconfigured, failing, slow and
// malformed endpoints leave the state unchanged with a clear error.
func TestKnowledgeCurateLLMFailures(t *testing.T) {
	v := newKView(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	res, err := v.call(t, "add", map[string]any{"lesson": "Run the api schema tests before every release build", "category": "testing"}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := res.(app.KnowledgeAddResult).ID
	t.Setenv("LORE_CURATOR_URL", "")
	t.Setenv("LORE_CURATOR_TIMEOUT", "")
	before := len(v.b.log)
	if _, err := v.call(t, "curate", map[string]any{"llm": true}, now); !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "LORE_CURATOR_URL") {
		t.Errorf("unconfigured: %v", err)
	}
	fc := &fakeCurator{}
	srv := fc.start(t)
	t.Setenv("LORE_CURATOR_URL", srv.URL+"/v1")
	for _, c := range []struct {
		name    string
		timeout string
		status  int
		body    string
		want    string
	}{
		{"server error", "", 500, `{"error":{"message":"model not loaded"}}`, "status 500: model not loaded"},
		{"slow", "300ms", 0, "", "did not answer within 300ms"},
		{"not a completion", "", 200, "hello", "not a chat completion"},
		{"prose", "", 200, chatAnswer("I would promote it."), "not the JSON shape asked for"},
		{"unknown key", "", 200, chatAnswer(`{"recommendations":[{"action":"promote","id":"` + id + `","reason":"x","score":1}]}`), "not the JSON shape asked for"},
		{"unknown action", "", 200, chatAnswer(recs(map[string]string{"action": "delete", "id": id, "reason": "x"})), `"recommendations[0].action": "delete"`},
		{"unknown id", "", 200, chatAnswer(recs(map[string]string{"action": "promote", "id": "nope", "reason": "x"})), `"recommendations[0].id": "nope" is not one of the entries sent`},
		{"no reason", "", 200, chatAnswer(recs(map[string]string{"action": "quarantine", "id": id, "reason": " "})), `"recommendations[0].reason"`},
		{"into on a promote", "", 200, chatAnswer(recs(map[string]string{"action": "promote", "id": id, "into": id, "reason": "x"})), `"recommendations[0].into"`},
	} {
		t.Setenv("LORE_CURATOR_TIMEOUT", c.timeout)
		fc.set(func(map[string]any) (int, string) { return c.status, c.body })
		_, err := v.call(t, "curate", map[string]any{"llm": true}, now)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was recorded") {
			t.Errorf("%s: %v, want an error with %q saying nothing was recorded", c.name, err, c.want)
		}
	}
	// A password in the URL is never repeated in an error.
	t.Setenv("LORE_CURATOR_TIMEOUT", "")
	for _, u := range []string{strings.Replace(srv.URL, "http://", "http://u:s3cretpw@", 1), "http://u:s3cretpw@127.0.0.1:1"} {
		t.Setenv("LORE_CURATOR_URL", u)
		fc.set(func(map[string]any) (int, string) { return 500, "down" })
		if _, err := v.call(t, "curate", map[string]any{"llm": true}, now); err == nil || strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("endpoint %s: %v, want an error without the password", u, err)
		}
	}
	if len(v.b.log) != before {
		t.Fatalf("%d events appended by failed curations", len(v.b.log)-before)
	}
	if e, _, _ := knowledge.GetEntry(v.Model(knowledge.ModelName), id); !e.Active() || e.PromotedTo != "" {
		t.Fatalf("entry changed: %+v", e)
	}
	if _, err := v.call(t, "curate", map[string]any{"max_entries": 5}, now); !errors.Is(err, app.ErrBadRequest) {
		t.Errorf("max_entries without llm: %v", err)
	}
}

// TestParseCuratorAnswer: the answer's shape is checked strictly; the
// first fault refuses the whole answer, naming the field.
func TestParseCuratorAnswer(t *testing.T) {
	known := map[string]bool{"a": true, "b": true}
	for _, c := range []struct {
		name, content, err string
		n                  int
	}{
		{"empty list", `{"recommendations":[]}`, "", 0},
		{"all three", `{"recommendations":[{"action":"promote","id":"a","reason":"r"},{"action":"merge","id":"b","into":"a","reason":"same"}]}`, "", 2},
		{"fenced", "```json\n{\"recommendations\":[{\"action\":\"quarantine\",\"id\":\"a\",\"reason\":\"wrong\"}]}\n```", "", 1},
		{"missing list", `{}`, `"recommendations": is required`, 0},
		{"null list", `{"recommendations":null}`, `"recommendations": is required`, 0},
		{"trailing data", `{"recommendations":[]} {"recommendations":[]}`, "data after the object", 0},
		{"prose around", `Here: {"recommendations":[]}`, "not the JSON shape", 0},
		{"unknown top key", `{"recommendations":[],"note":"x"}`, "not the JSON shape", 0},
		{"twice the same id", `{"recommendations":[{"action":"promote","id":"a","reason":"r"},{"action":"quarantine","id":"a","reason":"r"}]}`, `"recommendations[1].id": entry a has a recommendation already`, 0},
		{"merge into itself", `{"recommendations":[{"action":"merge","id":"a","into":"a","reason":"r"}]}`, `"recommendations[0].into": an entry cannot be merged into itself`, 0},
		{"merge into an entry not sent", `{"recommendations":[{"action":"merge","id":"a","into":"z","reason":"r"}]}`, `"recommendations[0].into": "z" is not one of the entries sent`, 0},
		{"merge without into", `{"recommendations":[{"action":"merge","id":"a","reason":"r"}]}`, `"recommendations[0].into": "" is not one of the entries sent`, 0},
		{"reason too long", `{"recommendations":[{"action":"promote","id":"a","reason":"` + strings.Repeat("x", 501) + `"}]}`, `"recommendations[0].reason"`, 0},
		{"wrong type", `{"recommendations":[{"action":"promote","id":1,"reason":"r"}]}`, "not the JSON shape", 0},
	} {
		got, err := app.ParseCuratorAnswer(c.content, known)
		switch {
		case c.err == "" && (err != nil || len(got) != c.n):
			t.Errorf("%s: %v %+v, want %d recommendations", c.name, err, got, c.n)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		}
	}
}
