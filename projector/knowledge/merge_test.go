package knowledge_test

import (
	"testing"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// TestFoldMerged: knowledge.merged/v1 archives the merged entry (reason
// merged, merged_into set) and gives the kept one its confirmations once
// per project and phase; between stores, from an inactive entry or of an
// unknown id it changes nothing; a replay gives the same store.
func TestFoldMerged(t *testing.T) {
	h := newHarness(t)
	a := idOf(h.submit("web", t0, sub{lesson: "Pin the docker base image digest in CI builds", phase: 1}))
	b := idOf(h.submit("web", t0, sub{lesson: "Keep fixtures of the parser golden tests in the repo", phase: 2}))
	c := idOf(h.submit("api", t0, sub{lesson: "Record each architecture decision with its context", phase: 2}))
	merge := func(project, from, into string) {
		h.fold(h.event("knowledge.merged/v1", project, t0, &events.KnowledgeMerged{EntryID: from, Into: into, Reason: "same", By: "test"}))
	}
	merge("web", a, c)         // different projects: nothing
	merge("web", a, "missing") // unknown: nothing
	if e := h.entry(a); !e.Active() || e.MergedInto != "" {
		t.Fatalf("merge across stores changed %+v", e)
	}
	merge("web", a, b)
	ea, eb := h.entry(a), h.entry(b)
	if ea.Status != knowledge.StatusArchived || ea.ArchiveReason != knowledge.ArchiveMerged || ea.MergedInto != b {
		t.Fatalf("merged entry %+v", ea)
	}
	if eb.DistinctPhases() != 2 || !eb.Active() {
		t.Fatalf("kept entry %+v, want the phases of both", eb)
	}
	merge("web", a, b) // a is archived now: nothing more
	if got := h.entry(b); len(got.ConfirmedBy) != len(eb.ConfirmedBy) {
		t.Fatalf("second merge changed the kept entry: %+v", got)
	}
	if why := knowledge.MergeRefusal(ea, eb); why == "" {
		t.Error("MergeRefusal accepts an archived entry")
	}
	assertReplaySame(t, h)
}
