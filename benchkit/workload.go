// Package benchkit generates lore's reproducible benchmark workload and
// measures lore against raw JetStream on the same embedded server, in the
// same run (`lore bench`).
//
// INVARIANT: the workload is a pure function of (seed, sizes): the same
// flags produce the same events, ids and times, so two runs differ only by
// the machine.
package benchkit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
)

// Epoch is the time of the first generated event; event i is Epoch + i×10 ms.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Workload describes the simulated swarm: Loops agent loops run at the same
// time, each emitting loop.started, iterations, outcomes with decomposition
// texts, errors, pattern observations and lessons, then loop.completed; a
// finished loop is replaced by a new one.
type Workload struct {
	Seed int64
	// Loops running concurrently (default 64).
	Loops int
	// Projects the loops belong to (default 8).
	Projects int
	// Prefix makes ids unique between workloads of the same seed (e.g. the
	// paced phase of a bench uses another prefix).
	Prefix string
	// Clock, when set, times each event (a soak against a serving node
	// uses the wall clock); the events are then not reproducible.
	Clock func() time.Time
}

func (w Workload) withDefaults() Workload {
	if w.Loops <= 0 {
		w.Loops = 64
	}
	if w.Projects <= 0 {
		w.Projects = 8
	}
	if w.Prefix == "" {
		w.Prefix = "w"
	}
	return w
}

// loopState is one running loop of the simulation.
type loopState struct {
	id, project, task, category string
	iter, maxIter, bead         int
	writer                      int
}

// Generated is a workload: events in emission order and, for each event,
// the writer (loop slot) that emits it. Events of one loop share a writer,
// so appending each writer's events in order keeps every loop's order.
type Generated struct {
	Events []*events.Event
	Writer []int
}

// Generate returns n events of the workload.
func (w Workload) Generate(n int) (Generated, error) {
	s := w.Stream()
	g := Generated{Events: make([]*events.Event, 0, n), Writer: make([]int, 0, n)}
	for range n {
		ev, writer, err := s.Next()
		if err != nil {
			return g, err
		}
		g.Events = append(g.Events, ev)
		g.Writer = append(g.Writer, writer)
	}
	return g, nil
}

// Stream is a workload generated one event at a time (an endless run
// holds no more than its running loops). Not safe for concurrent use.
//
// INVARIANT: the first n events of a Stream are Generate(n)'s.
type Stream struct {
	w       Workload
	rng     *rand.Rand
	loops   []*loopState
	started []bool
	serial  int
	i       int // events emitted
}

// Stream starts the workload's stream of events.
func (w Workload) Stream() *Stream {
	w = w.withDefaults()
	s := &Stream{w: w, rng: rand.New(rand.NewPCG(uint64(w.Seed), 0x10e5)),
		loops: make([]*loopState, w.Loops), started: make([]bool, w.Loops)}
	for i := range s.loops {
		s.loops[i] = s.newLoop(i)
	}
	return s
}

func (s *Stream) newLoop(slot int) *loopState {
	s.serial++
	rng := s.rng
	cat := categories[rng.IntN(len(categories))]
	return &loopState{
		id:       fmt.Sprintf("ralph-%s-%s-%08x", s.w.Prefix, cat, uint32(rng.Uint64())),
		project:  fmt.Sprintf("p%d", rng.IntN(s.w.Projects)),
		task:     task(rng, cat),
		category: cat,
		maxIter:  2 + rng.IntN(8),
		writer:   slot,
	}
}

// Next returns the next event and the writer (loop slot) that emits it.
// Event i is at Epoch + i×10 ms, or at Clock() when the workload has one.
func (s *Stream) Next() (*events.Event, int, error) {
	i, rng := s.i, s.rng
	slot := rng.IntN(s.w.Loops)
	l := s.loops[slot]
	at := Epoch.Add(time.Duration(i) * 10 * time.Millisecond)
	if s.w.Clock != nil {
		at = s.w.Clock()
	}
	var typ string
	var p events.Payload
	switch {
	case !s.started[slot]:
		s.started[slot] = true
		typ, p = "loop.started/v1", &events.LoopStarted{LoopID: l.id, Task: l.task, Category: l.category, Agent: agent(rng)}
	case l.iter >= l.maxIter:
		outcomeKind := []string{"success", "success", "success", "partial", "failure"}[rng.IntN(5)]
		c := &events.LoopCompleted{LoopID: l.id, Outcome: outcomeKind, Iterations: l.iter, Approach: sentence(rng, 8)}
		if outcomeKind == "failure" {
			c.FailureMode = failureModes[rng.IntN(len(failureModes))]
		}
		typ, p = "loop.completed/v1", c
		s.loops[slot], s.started[slot] = s.newLoop(slot), false
	default:
		typ, p = l.step(rng)
	}
	ev, err := events.New(typ, l.project, l.id, at, p)
	if err != nil {
		return nil, 0, fmt.Errorf("generate event %d (%s): %w", i, typ, err)
	}
	ev.ID = fmt.Sprintf("%s-%d-%09d", s.w.Prefix, s.w.Seed, i)
	s.i++
	return ev, l.writer, nil
}

// step is one event inside a running loop, drawn by weight: iterations
// 30 %, outcomes 25 %, errors 20 %, pattern observations 20 %, lessons 5 %.
func (l *loopState) step(rng *rand.Rand) (string, events.Payload) {
	bead := fmt.Sprintf("bd-%s.%d", l.id[len(l.id)-8:], l.bead)
	switch r := rng.IntN(100); {
	case r < 30:
		l.iter++
		passed, failed := rng.IntN(200), rng.IntN(5)
		it := &events.LoopIteration{LoopID: l.id, Iteration: l.iter, TestsPassed: &passed, TestsFailed: &failed,
			ToolsUsed: []string{"edit", "bash"}, FilesChanged: []string{file(rng)}}
		if failed > 0 {
			it.ErrorType = errorNames[rng.IntN(len(errorNames))]
			it.ErrorMessage = it.ErrorType + ": " + sentence(rng, 6)
			it.Location = file(rng) + fmt.Sprintf(":%d", 1+rng.IntN(400))
			it.FixDescription = "fix: " + sentence(rng, 7)
		}
		return "loop.iteration/v1", it
	case r < 55:
		l.bead++
		ok := rng.IntN(4) != 0
		o := &events.OutcomeRecorded{BeadID: bead, DurationMs: int64(rng.IntN(3_600_000)), RetryCount: rng.IntN(3),
			Success: ok, FilesTouched: []string{file(rng), file(rng)}, Strategy: strategies[rng.IntN(len(strategies))],
			Criteria: []string{"type_safe", "small_diff", "tests_pass"}[:1+rng.IntN(3)], Decomposition: decomposition(rng)}
		if !ok {
			o.FailureMode, o.FailureDetails = "test_failure", sentence(rng, 10)
		}
		return "outcome.recorded/v1", o
	case r < 75:
		return "error.recorded/v1", &events.ErrorRecorded{BeadID: bead, ErrorType: errorTypes[rng.IntN(len(errorTypes))],
			Message: sentence(rng, 9), ToolName: "bash", Context: file(rng)}
	case r < 95:
		return "pattern.observed/v1", &events.PatternObserved{Content: patternTexts[rng.IntN(len(patternTexts))],
			Success: rng.IntN(10) < 7, BeadID: bead, Tags: []string{l.category}}
	default:
		conf := float64(3+rng.IntN(7)) / 10
		return "knowledge.submitted/v1", &events.KnowledgeSubmitted{Lesson: Lesson(rng), Category: "debugging",
			Confidence: &conf, Source: "agent"}
	}
}

var (
	categories   = []string{"debugging", "refactor", "feature", "testing", "perf"}
	errorTypes   = []string{"validation", "timeout", "conflict", "tool_failure", "unknown"}
	errorNames   = []string{"TypeError", "ReferenceError", "AssertionError", "SyntaxError"}
	strategies   = []string{"file-based", "feature-based", "risk-based", "research-based"}
	failureModes = []string{"infinite_loop", "scope_creep", "repeated_same_error", "incorrect_fix"}
	patternTexts = func() []string {
		var out []string
		for _, a := range []string{"split by file", "split by feature", "write the failing test first", "isolate the parser",
			"refactor before extending", "mock the network layer", "migrate the schema in two steps", "pin the toolchain"} {
			for _, b := range []string{"then review", "in small commits", "with a spike", "behind a flag"} {
				out = append(out, a+" "+b)
			}
		}
		return out
	}()
	vocab = strings.Fields(`parser handler cache index schema query router worker queue retry timeout lock
		mutex channel buffer stream cursor batch commit snapshot replay decoder encoder config flag
		migration fixture mock client server socket token session tenant module package interface struct
		pointer slice map goroutine context deadline backoff jitter checksum digest ledger journal
		pipeline stage shard replica leader follower quorum election lease heartbeat probe metric gauge`)
)

func word(rng *rand.Rand) string { return vocab[rng.IntN(len(vocab))] }

func sentence(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = word(rng)
	}
	return strings.Join(ws, " ")
}

func file(rng *rand.Rand) string { return "internal/" + word(rng) + "/" + word(rng) + ".go" }

func agent(rng *rand.Rand) string { return fmt.Sprintf("agent-%d", rng.IntN(16)) }

func task(rng *rand.Rand, cat string) string {
	return fmt.Sprintf("%s: make the %s %s handle %s %s", cat, word(rng), word(rng), word(rng), word(rng))
}

// decomposition is a realistic decomposition text (numbered subtasks that
// name files and strategies), 300–800 bytes.
func decomposition(rng *rand.Rand) string {
	var b strings.Builder
	steps := 3 + rng.IntN(5)
	for i := range steps {
		fmt.Fprintf(&b, "%d. %s the %s in %s, %s\n", i+1,
			[]string{"Refactor", "Test", "Split", "Document", "Migrate"}[rng.IntN(5)], word(rng), file(rng), sentence(rng, 6))
	}
	return b.String()
}

// Lesson returns a distinct, valid lesson (an action verb, 60–200 chars):
// random word pairs keep word-bigram similarity between two lessons low, so
// they are separate entries rather than reinforcements.
func Lesson(rng *rand.Rand) string {
	return fmt.Sprintf("use %s %s with %s %s when %s %s fails in %s tests",
		word(rng), word(rng), word(rng), word(rng), word(rng), word(rng), word(rng))
}

// marshal is json.Marshal for values that cannot fail.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
