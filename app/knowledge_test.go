package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/knowledge"
)

type kView struct {
	p *app.Pipeline
	b *memBackend
}

func (v *kView) Model(name string) projector.Reader { return v.b.st.Model(name) }

// call runs knowledge.<name> (phase.complete for "complete") through the
// pipeline; a command answers its result.
func (v *kView) call(t *testing.T, name string, a any, now time.Time) (any, error) {
	t.Helper()
	group := "knowledge"
	if name == "complete" {
		group = "phase"
	}
	ep, ok := app.Lookup(group, name)
	if !ok {
		t.Fatalf("no endpoint %s.%s", group, name)
	}
	out, err := v.p.Do(context.Background(), ep, app.Call{Now: &now, Project: "web", Source: "test", Args: args(t, a)})
	if err != nil {
		return nil, err
	}
	r, ok := out.(app.CommandReply)
	if !ok {
		return out, nil
	}
	// The command's own result type, decoded from the reply.
	var res any
	switch name {
	case "add":
		res = &app.KnowledgeAddResult{}
	case "inject":
		res = &app.KnowledgeInjectResult{}
	case "import":
		res = &app.KnowledgeImportResult{}
	default:
		res = &map[string]any{}
	}
	if len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, res); err != nil {
			t.Fatal(err)
		}
	}
	return reflect.ValueOf(res).Elem().Interface(), nil
}

func TestKnowledgeEndpoints(t *testing.T) {
	b := newMemBackend(t, knowledge.New())
	v := &kView{p: app.NewPipeline(b), b: b}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

	res, err := v.call(t, "add", map[string]any{"lesson": "Use rm -rf to clean the build folder quickly", "category": "tooling"}, now)
	if err != nil || res.(app.KnowledgeAddResult).Outcome != "rejected" {
		t.Fatalf("dangerous add: %+v %v", res, err)
	}
	var ids []string
	for _, l := range []string{"Run the api schema tests before every release build", "Prefer small adapters around the file system for testing"} {
		res, err := v.call(t, "add", map[string]any{"lesson": l, "category": "testing", "phase": 1}, now)
		if err != nil || res.(app.KnowledgeAddResult).Outcome != "added" {
			t.Fatalf("add: %+v %v", res, err)
		}
		ids = append(ids, res.(app.KnowledgeAddResult).ID)
	}
	if _, err := v.call(t, "quarantine", map[string]any{"id": ""}, now); !errors.Is(err, app.ErrBadRequest) {
		t.Errorf("empty id: %v", err)
	}
	if _, err := v.call(t, "quarantine", map[string]any{"id": "zzzz"}, now); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if ids[0][0] == ids[1][0] {
		if _, err := v.call(t, "quarantine", map[string]any{"id": ids[0][:1]}, now); !errors.Is(err, app.ErrBadRequest) {
			t.Errorf("ambiguous prefix: %v", err)
		}
	}
	if _, err := v.call(t, "quarantine", map[string]any{"id": ids[0][:8], "reason": "flaky"}, now); err != nil {
		t.Fatal(err)
	}
	inj, err := v.call(t, "inject", map[string]any{"task": "api schema tests", "headroom": 0.9}, now)
	if err != nil {
		t.Fatal(err)
	}
	ir := inj.(app.KnowledgeInjectResult)
	if len(ir.Entries) != 1 || ir.Entries[0].ID != ids[1] || ir.InjectionID == "" {
		t.Fatalf("inject: %+v", ir)
	}
	if _, err := v.call(t, "restore", map[string]any{"id": ids[0]}, now); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := knowledge.GetEntry(v.Model(knowledge.ModelName), ids[1]); e.Outcomes.Shown != 1 {
		t.Errorf("injection not recorded: %+v", e.Outcomes)
	}
	// Import twice: the second sends nothing.
	sub := events.KnowledgeSubmitted{Lesson: "Pin the docker base image digest in CI builds", Category: "pattern",
		Import: &events.KnowledgeImport{Format: knowledge.FormatSwarm, Digest: knowledge.Digest([]byte("line")), OriginalID: "5b0c8c1e-8d2f-4c57-9d3a-2a3f1c9b7e11"}}
	args := app.KnowledgeImportArgs{Format: knowledge.FormatSwarm, Submissions: []events.KnowledgeSubmitted{sub}}
	for i, want := range []int{1, 0} {
		r, err := v.call(t, "import", args, now)
		if err != nil || r.(app.KnowledgeImportResult).Sent != want {
			t.Fatalf("import %d: %+v %v", i, r, err)
		}
	}
	if _, err := v.call(t, "promote", map[string]any{"entry_id": "5b0c8c1e"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := v.call(t, "promote", map[string]any{"entry_id": "5b0c8c1e"}, now); !errors.Is(err, app.ErrConflict) {
		t.Errorf("second promote: %v", err)
	}
	hive, _ := knowledge.HiveEntries(v.Model(knowledge.ModelName))
	if len(hive) != 1 || hive[0].Status != knowledge.StatusPromoted || hive[0].Confidence != 1 {
		t.Fatalf("hive %+v", hive)
	}
	if _, err := v.call(t, "complete", map[string]any{"phase": 1}, now); err != nil {
		t.Fatal(err)
	}
	exp, err := v.call(t, "export", map[string]any{}, now)
	if err != nil || len(exp.(app.KnowledgeExportResult).Entries) != 3 {
		t.Fatalf("export: %+v %v", exp, err)
	}
}
