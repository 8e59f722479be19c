package knowledge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/loredev/lore/projector"
)

// archSmallVocab makes lessons that often meet earlier ones again: exact
// repeats and one-word variants of archived lessons are near-duplicates
// of entries the cap has archived.
var archSmallVocab = strings.Fields(`cache retry timeout lock query index parser worker queue schema token deploy`)

func archSmallLesson(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString("always")
	for range 4 + rng.IntN(6) {
		b.WriteString(" " + archSmallVocab[rng.IntN(len(archSmallVocab))])
	}
	return b.String()
}

// storedSummaries are the active then the inactive summaries of a pool.
func storedSummaries(r projector.Reader, scope string) ([]*summary, error) {
	active, err := scanSummaries(r, poolVersionKey(scope)+"/")
	if err != nil {
		return nil, err
	}
	inactive, err := scanSummaries(r, pfxSum+scope+"i/")
	return append(active, inactive...), err
}

// TestArchivedEntriesHeldCompactly: the fold's state of a pool holds its
// archived entries in their compact form (no decoded summary), accounted
// well below their full summaries, and a submission still meets them as
// near-duplicates: lessons repeating archived ones reinforce the archived
// entries (which come back as candidates), and the state's comparisons equal the store's (CheckPools) at
// every step.
func TestArchivedEntriesHeldCompactly(t *testing.T) {
	const active = 10
	p := newArchPool(t, active, 150, archSmallLesson)
	r := p.st.Model(ModelName)
	scope := sumScope(TierSwarm, archProject)
	stored, err := storedSummaries(r, scope)
	if err != nil {
		t.Fatal(err)
	}
	var archivedLessons []string
	for _, s := range stored {
		if !s.active() {
			archivedLessons = append(archivedLessons, s.Lesson)
		}
	}
	if len(archivedLessons) < 50 {
		t.Fatalf("%d archived entries after the seed, want at least 50", len(archivedLessons))
	}
	rng := rand.New(rand.NewPCG(3, 5))
	reinforcedArchived := 0
	for step := range 60 {
		lesson := archivedLessons[rng.IntN(len(archivedLessons))]
		switch step % 3 {
		case 1:
			lesson += " " + archSmallVocab[rng.IntN(len(archSmallVocab))]
		case 2:
			lesson = archSmallLesson(rng)
		}
		inactive, err := scanSummaries(r, pfxSum+scope+"i/")
		if err != nil {
			t.Fatal(err)
		}
		ev := p.submission(t, lesson)
		p.fold(t, ev)
		d, ok, err := DecisionOf(r, ev.ID)
		if err != nil || !ok {
			t.Fatalf("decision of %s: %v %v", ev.ID, ok, err)
		}
		if d.Outcome == OutcomeReinforced && slices.ContainsFunc(inactive, func(s *summary) bool { return s.ID == d.DuplicateOf }) {
			reinforcedArchived++ // an archived lesson learned again
		}
		if step%10 == 9 {
			probe := append([]string{lesson}, archivedLessons[:20]...)
			if err := CheckPools(p.m, r, []string{archProject}, probe, DefaultDedupThreshold); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if reinforcedArchived == 0 {
		t.Fatal("no submission reinforced an archived entry: the workload does not exercise the comparison")
	}

	state := p.m.folds.latest(scope)
	if state == nil {
		t.Fatal("the fold keeps no state of the pool")
	}
	stored, err = storedSummaries(r, scope)
	if err != nil {
		t.Fatal(err)
	}
	full, compact, nArchived := 0, 0, 0
	for _, s := range stored {
		key := summaryKey(&Entry{ID: s.ID, Tier: s.Tier, Project: s.Project, Status: s.Status, CreatedSeq: s.CreatedSeq})
		slot, ok := state.byKey[key]
		if !ok {
			t.Fatalf("%s is not in the fold's state", key)
		}
		if s.active() {
			continue
		}
		nArchived++
		if state.slots[slot] != nil {
			t.Fatalf("archived entry %s is held as a decoded summary", s.ID)
		}
		if state.slotID[slot] != s.ID || !slices.Equal(state.slotHash[slot], s.bghash) || state.slotRemoved[slot] != s.removed() {
			t.Fatalf("archived entry %s held as %q %x %v", s.ID, state.slotID[slot], state.slotHash[slot], state.slotRemoved[slot])
		}
		full += slotCost(key, s)
		compact += state.cost(slot)
	}
	// The compact form leaves out the lesson, its normalised texts, the
	// bigram strings and the metadata: under half the full summary.
	if 2*compact >= full {
		t.Fatalf("archived entries accounted at %d bytes each, their full summaries at %d", compact/nArchived, full/nArchived)
	}
	t.Logf("%d archived entries: %d bytes each in the state, %d as full summaries", nArchived, compact/nArchived, full/nArchived)
}

// TestArchivedNearDuplicateConfirmedFromStore: an archived entry whose
// bigram hashes all equal a lesson's but whose bigrams differ (a hash
// collision) is not a near-duplicate of it: the state confirms from the
// stored summary what the hashes suggest, as the store's scan does, and
// the lesson meets the genuine near-duplicate after it.
func TestArchivedNearDuplicateConfirmedFromStore(t *testing.T) {
	p := newArchPool(t, 5, 0, archSmallLesson)
	lesson := "always retry the query with a fresh token when the lock times out"
	lf := featuresOf(lesson, nil, "debugging")
	colliding := &Entry{ID: "collides", Tier: TierSwarm, Project: archProject, Lesson: "unrelated words",
		Category: "debugging", Status: StatusArchived, ArchiveReason: ArchiveCap, CreatedSeq: 1}
	forged := summaryOf(colliding)
	// Bigrams other than the lesson's, under the lesson's hashes.
	forged.bigrams, forged.bghash = make([]string, len(lf.bigrams)), lf.bghash
	for i := range forged.bigrams {
		forged.bigrams[i] = fmt.Sprintf("other%02d bigram", i)
	}
	genuine := &Entry{ID: "genuine", Tier: TierSwarm, Project: archProject, Lesson: lesson,
		Category: "debugging", Status: StatusArchived, ArchiveReason: ArchiveCap, CreatedSeq: 2}
	scope := sumScope(TierSwarm, archProject)
	b := p.st.DB().NewBatch()
	for k, v := range map[string][]byte{
		summaryKey(colliding): forged.encode(),
		summaryKey(genuine):   summaryOf(genuine).encode(),
	} {
		// The store's key of a model's key (projector.Store.Model).
		if err := b.Set([]byte("m/"+ModelName+"/"+k), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	r := p.st.Model(ModelName)
	state, err := loadPoolState(r, scope)
	if err != nil {
		t.Fatal(err)
	}
	if slot := state.byKey[summaryKey(colliding)]; state.slots[slot] != nil || !slices.Equal(state.slotHash[slot], lf.bghash) {
		t.Fatal("the colliding entry is not held compactly under the lesson's hashes")
	}
	got, err := state.scan(r, lf, DefaultDedupThreshold, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := scanPool(r, TierSwarm, archProject, lf, DefaultDedupThreshold, true)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := dumpScan(got), dumpScan(want); a != b {
		t.Fatalf("state scan\n%s\nstore scan\n%s", a, b)
	}
	if got.nearInactive != "genuine" {
		t.Fatalf("nearest archived entry %q, want genuine (the colliding one is not near)", got.nearInactive)
	}
}
