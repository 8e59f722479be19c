package feedbacklog_test

import (
	"testing"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/projector/feedbacklog"
)

// TestIndexesInLogOrder: an outcome indexes one entry per distinct
// criterion (in the order named) under each criterion and its bead;
// explicit feedback keeps its type and value; projects are apart.
func TestIndexesInLogOrder(t *testing.T) {
	t.Parallel()
	st, err := projector.OpenStore(t.TempDir(), projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []*events.Event
	add := func(project string, p events.Payload, typ string) {
		ev, err := events.New(typ, project, "test", at.Add(time.Duration(len(evs))*time.Minute), p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = uint64(len(evs) + 1)
		evs = append(evs, ev)
	}
	add("", &events.OutcomeRecorded{BeadID: "bd-1", DurationMs: 1000, Success: true, Criteria: []string{"z_last", "a_first", "z_last"}}, "outcome.recorded/v1")
	add("", &events.FeedbackRecorded{Criterion: "a_first", Type: "harmful", RawValue: 0.25, BeadID: "bd-1", Context: "c"}, "feedback.recorded/v1")
	add("web", &events.OutcomeRecorded{BeadID: "bd-1", DurationMs: 1000, Success: true, Criteria: []string{"a_first"}}, "outcome.recorded/v1")
	if _, err := projector.FoldEvents(st, []projector.Model{feedbacklog.Model{}}, evs); err != nil {
		t.Fatal(err)
	}
	r := st.Model(feedbacklog.Name)
	bead, err := feedbacklog.ByBead(r, events.DefaultProject, "bd-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(bead) != 3 || bead[0].Criterion != "z_last" || bead[1].Criterion != "a_first" || bead[2].From != feedbacklog.FromFeedback ||
		bead[2].RawValue == nil || *bead[2].RawValue != 0.25 || bead[2].Type != "harmful" || bead[0].EventID != evs[0].ID {
		t.Errorf("by bead: %+v", bead)
	}
	crit, err := feedbacklog.ByCriterion(r, events.DefaultProject, "a_first")
	if err != nil {
		t.Fatal(err)
	}
	if len(crit) != 2 || crit[0].Seq != 1 || crit[1].Seq != 2 {
		t.Errorf("by criterion: %+v", crit)
	}
	if web, _ := feedbacklog.ByCriterion(r, "web", "a_first"); len(web) != 1 || web[0].Seq != 3 {
		t.Errorf("project web: %+v", web)
	}
	if none, _ := feedbacklog.ByCriterion(r, events.DefaultProject, "a_firs"); len(none) != 0 {
		t.Errorf("a prefix of a criterion matched: %+v", none)
	}
}
