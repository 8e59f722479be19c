package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/test/natstest"
)

// The scripted agent is a test fixture standing in for an LLM: the test
// binary re-run with agentEnv set. It reads the prompt on stdin; when the
// injected context names the fix (a "- Fix:" line naming one of the
// candidate files), it edits that file; otherwise it tries the candidate
// files in an order drawn from agentSeedEnv, one per iteration, skipping
// those it already tried (its marks persist in the working tree).
const (
	agentEnv     = "LORE_RALPH_TEST_AGENT"
	agentSeedEnv = "LORE_RALPH_TEST_AGENT_SEED"
	agentLogEnv  = "LORE_RALPH_TEST_AGENT_LOG"
)

// candidates are the files of the fixture repository; fixFile is the one
// whose edit makes verify pass.
var candidates = []string{"backoff.go", "client.go", "codec.go", "config.go", "dial.go", "pool.go", "retry.go", "timeout.go"}

const fixFile = "retry.go"

func init() {
	if os.Getenv(agentEnv) == "" {
		return
	}
	if err := scriptedAgent(); err != nil {
		fmt.Fprintln(os.Stderr, "scripted agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func scriptedAgent() error {
	prompt, err := readAll(os.Stdin)
	if err != nil {
		return err
	}
	if p := os.Getenv(agentLogEnv); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "%s\n\x00\n", prompt)
		f.Close()
	}
	pick := ""
	for _, ln := range strings.Split(prompt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(ln), "- Fix:") {
			continue
		}
		for _, c := range candidates {
			if strings.Contains(ln, c) {
				pick = c
			}
		}
	}
	mark := "// FIXED\n"
	if pick == "" {
		seed, _ := strconv.ParseUint(os.Getenv(agentSeedEnv), 10, 64)
		order := slices.Clone(candidates)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order {
			b, err := os.ReadFile(c)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), "// tried") && !strings.Contains(string(b), "// FIXED") {
				pick = c
				break
			}
		}
		if pick != fixFile {
			mark = "// tried\n"
		}
	}
	if pick == "" {
		return nil // nothing left to try
	}
	f, err := os.OpenFile(pick, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(mark)
	return err
}

func readAll(f *os.File) (string, error) {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), nil
		}
	}
}

// verifyScript fails like `go test` until the fix file carries the fix.
const verifyScript = `if grep -q FIXED retry.go; then
  echo '--- PASS: TestRetryBackoff (0.00s)'
  echo 'ok  	example.com/svc	0.004s'
  exit 0
fi
echo '--- FAIL: TestRetryBackoff (0.00s)'
echo '    retry_test.go:31: attempts = 2, want 3'
echo 'FAIL'
echo 'FAIL	example.com/svc	0.004s'
exit 1
`

// fixtureRepo makes a git repository holding the candidate files and the
// verify script.
func fixtureRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range candidates {
		if err := os.WriteFile(filepath.Join(dir, c), []byte("package svc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "verify.sh"), []byte(verifyScript), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "fixture"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// serveLore runs `lore serve` on a temp data folder until the test ends.
func serveLore(t *testing.T) []string {
	t.Helper()
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0"); code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
	return []string{"--data", data}
}

type loopRun struct {
	id         string
	iterations int
}

// runLoops runs one `lore ralph run` per task, each in a fresh fixture
// repository, with the scripted agent.
func runLoops(t *testing.T, d []string, tasks []string, inject bool) []loopRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prompt := filepath.Join(t.TempDir(), "PROMPT.md")
	if err := os.WriteFile(prompt, []byte("Make the retry tests pass.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var runs []loopRun
	for _, task := range tasks {
		repo := fixtureRepo(t)
		args := append(slices.Clone(d), "ralph", "run", "--json", "--task", task, "--category", "debugging",
			"--prompt", prompt, "--verify", "sh verify.sh", "--dir", repo, "--max-iterations", "10")
		if !inject {
			args = append(args, "--no-inject")
		}
		args = append(args, "--", exe)
		code, out, errs := cli(t, context.Background(), "", args...)
		if code != 0 {
			t.Fatalf("ralph run %q: exit %d\nout %s\nerr %s", task, code, out, errs)
		}
		var res struct {
			LoopID     string `json:"loop_id"`
			Outcome    string `json:"outcome"`
			Iterations int    `json:"iterations"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Outcome != "success" {
			t.Fatalf("ralph run %q: %q (%v)", task, out, err)
		}
		runs = append(runs, loopRun{res.LoopID, res.Iterations})
	}
	return runs
}

func metricsOf(t *testing.T, d []string) crossloop.CrossLoopBenefit {
	t.Helper()
	code, out, errs := cli(t, context.Background(), "", append(slices.Clone(d), "patterns", "metrics", "--json")...)
	var m struct {
		M crossloop.Metrics `json:"effectiveness_metrics"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("patterns metrics: exit %d, %q, %s", code, out, errs)
	}
	return m.M.Benefit
}

var relatedTasks = []string{
	"Fix the flaky retry in the payments client",
	"Fix the flaky retry in the orders client",
	"Fix the flaky retry in the billing client",
	"Fix the flaky retry in the shipping client",
}

// TestRalphLoopLearns: a sequence of `lore ralph run` loops on related
// tasks against a real lore. With injection, the first loop searches
// (several iterations) and every later one is fixed in one, from the
// patterns the first loop contributed; `lore patterns metrics` reports the
// improvement. The same loops with injection off all search as long as
// the first: no improvement.
func TestRalphLoopLearns(t *testing.T) {
	t.Setenv(agentEnv, "1")
	t.Setenv(agentSeedEnv, "7")
	log := filepath.Join(t.TempDir(), "prompts")
	t.Setenv(agentLogEnv, log)

	d := serveLore(t)
	runs := runLoops(t, d, relatedTasks, true)
	first := runs[0].iterations
	if first < 2 {
		t.Fatalf("the first loop took %d iteration(s): the fixture's seed must make the uninformed agent search", first)
	}
	for _, r := range runs[1:] {
		if r.iterations != 1 {
			t.Errorf("loop %s took %d iterations after learning, want 1 (first loop: %d)", r.id, r.iterations, first)
		}
	}
	// The patterns injected into the later loops are those the first loop contributed.
	code, out, errs := cli(t, context.Background(), "", append(slices.Clone(d), "patterns", "list", "--from-loop", runs[0].id, "--json")...)
	var fromFirst []*crossloop.Pattern
	if code != 0 || json.Unmarshal([]byte(out), &fromFirst) != nil || len(fromFirst) == 0 {
		t.Fatalf("patterns of the first loop: exit %d, %q, %s", code, out, errs)
	}
	firstIDs := map[string]bool{}
	var errorPattern string
	for _, p := range fromFirst {
		firstIDs[p.ID] = true
		if p.Type == crossloop.TypeError && strings.Contains(p.FixDescription, fixFile) {
			errorPattern = p.ID
		}
	}
	if errorPattern == "" {
		t.Fatalf("the first loop contributed no error pattern naming %s: %+v", fixFile, fromFirst)
	}
	code, out, errs = cli(t, context.Background(), "", append(slices.Clone(d), "ralph", "status", "--json")...)
	var loops []crossloop.LoopSummary
	if code != 0 || json.Unmarshal([]byte(out), &loops) != nil || len(loops) != len(runs) {
		t.Fatalf("ralph status: exit %d, %q, %s", code, out, errs)
	}
	byID := map[string]crossloop.LoopSummary{}
	for _, l := range loops {
		byID[l.ID] = l
	}
	for i, r := range runs {
		l := byID[r.id]
		if l.Outcome != "success" || l.Iterations != r.iterations {
			t.Errorf("status of %s: %+v, want success in %d iterations", r.id, l, r.iterations)
		}
		if i == 0 {
			if len(l.Injected) != 0 {
				t.Errorf("the first loop was injected %v from an empty registry", l.Injected)
			}
			continue
		}
		if !slices.Contains(l.Injected, errorPattern) {
			t.Errorf("loop %s was injected %v, not the first loop's error pattern %s", r.id, l.Injected, errorPattern)
		}
		if i == 1 {
			for _, id := range l.Injected {
				if !firstIDs[id] {
					t.Errorf("the second loop was injected %s, which the first loop did not contribute", id)
				}
			}
		}
	}
	prompts, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(prompts), "Cross-Loop Learning Context"); n != len(runs)-1 {
		t.Errorf("%d prompts carried lore's context, want %d (every iteration after the first loop)", n, len(runs)-1)
	}
	b := metricsOf(t, d)
	t.Logf("iterations with injection: %v; metrics %+v", runs, b)
	wantWith := float64(len(runs)-1) / float64(len(runs)-1)
	if b.Without != 1 || b.With != len(runs)-1 || b.AvgWith != wantWith || b.AvgWithout != float64(first) ||
		b.Improvement != crossloop.Round1(crossloop.Improvement(float64(first), wantWith)) || b.Improvement <= 0 {
		t.Errorf("metrics with injection: %+v (first loop %d iterations)", b, first)
	}

	// Injection off: same agent, same seed, a fresh lore.
	d = serveLore(t)
	off := runLoops(t, d, relatedTasks, false)
	for _, r := range off {
		if r.iterations != first {
			t.Errorf("loop %s took %d iterations without injection, want %d as the first (no learning)", r.id, r.iterations, first)
		}
	}
	if b := metricsOf(t, d); b.With != 0 || b.Without != len(off) || b.Improvement != 0 {
		t.Errorf("metrics without injection: %+v, want no loop with injection and no improvement", b)
	}
}

// TestRalphBadInput: each way a loop cannot run gets its message and exit
// code, and what did run is recorded.
func TestRalphBadInput(t *testing.T) {
	bg := context.Background()
	repo := fixtureRepo(t)
	prompt := filepath.Join(t.TempDir(), "PROMPT.md")
	if err := os.WriteFile(prompt, []byte("Fix it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func(d []string, extra ...string) []string {
		return append(append(slices.Clone(d), "ralph", "run", "--task", "Fix the flaky retry", "--prompt", prompt,
			"--verify", "sh verify.sh", "--dir", repo), extra...)
	}
	// Checked before lore is dialled: no server runs yet.
	none := []string{"--nats", "nats://127.0.0.1:1"}
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing prompt file", append(slices.Clone(none), "ralph", "run", "--task", "t", "--prompt", filepath.Join(repo, "nope.md"),
			"--verify", "true", "--", "true"), exitBadInput, "--prompt"},
		{"verify cannot start", append(slices.Clone(none), "ralph", "run", "--task", "t", "--prompt", prompt,
			"--verify", "no-such-verify-tool --all", "--", "true"), exitBadInput, `"no-such-verify-tool" cannot start`},
		{"agent cannot start", base(none, "--", "no-such-agent-cli"), exitBadInput, `agent command "no-such-agent-cli" cannot start`},
		{"no agent", base(none), exitBadInput, "give the agent command after --"},
		{"missing dir", append(base(none, "--dir", filepath.Join(repo, "nope")), "--", "true"), exitBadInput, "--dir"},
		{"bad policy", base(none, "--on-unreachable", "maybe", "--", "true"), exitBadInput, "--on-unreachable"},
		{"lore unreachable, fail", base(none, "--", "true"), exitUnreachable, "refusing to start"},
	} {
		code, _, errs := cli(t, bg, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %q", c.name, code, errs, c.code, c.msg)
		}
	}
	// continue: the loop runs, says lore is unreachable, and exits 4 because nothing was recorded.
	code, _, errs := cli(t, bg, "", base(none, "--on-unreachable", "continue", "--max-iterations", "1", "--", "true")...)
	if code != exitUnreachable || !strings.Contains(errs, "unreachable") || !strings.Contains(errs, "not sent") ||
		!strings.Contains(errs, "verify failed: TestFailure") {
		t.Errorf("lore unreachable, continue: exit %d, stderr %q", code, errs)
	}

	d := serveLore(t)
	// A hanging agent is killed at the iteration timeout; the tree is verified as it stands.
	code, _, errs = cli(t, bg, "", base(d, "--iteration-timeout", "1s", "--max-iterations", "1", "--", "sleep", "600")...)
	if code != exitNotPassed || !strings.Contains(errs, "did not finish within --iteration-timeout 1s") ||
		!strings.Contains(errs, "within 1 iteration(s)") {
		t.Errorf("hanging agent: exit %d, stderr %q", code, errs)
	}
	// Ctrl-C while the agent runs: exit 130, the loop recorded as partial.
	ctx, interrupt := context.WithCancel(bg)
	done := make(chan int, 1)
	go func() {
		code, _, _ := cli(t, ctx, "", base(d, "--task", "Interrupted retry fix", "--", "sleep", "600")...)
		done <- code
	}()
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, out, _ := cli(t, bg, "", append(slices.Clone(d), "ralph", "status", "--running")...)
		if !strings.Contains(out, "interrupted-retry-fix") || !strings.Contains(out, "running") {
			return fmt.Errorf("status: %q", out)
		}
		return nil
	})
	interrupt()
	if code := <-done; code != exitInterrupted {
		t.Errorf("Ctrl-C: exit %d, want %d", code, exitInterrupted)
	}
	// Ctrl-C before lore answers the start (here: before it is sent): the
	// run is interrupted, not refused; the start and the completion are
	// recorded all the same.
	stopped, stop := context.WithCancel(bg)
	stop()
	if code, _, errs := cli(t, stopped, "", base(d, "--task", "Interrupted at start", "--", "touch", "ran")...); code != exitInterrupted ||
		!strings.Contains(errs, "interrupted after 0 iteration(s)") {
		t.Errorf("Ctrl-C at start: exit %d, stderr %q; want %d", code, errs, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(repo, "ran")); err == nil {
		t.Error("the agent ran after Ctrl-C")
	}
	// The completion was accepted before the run exited; its fold may lag
	// on a busy machine (the reply does not wait for it indefinitely).
	natstest.WaitFor(t, 2*time.Minute, func() error {
		code, out, errs := cli(t, bg, "", append(slices.Clone(d), "ralph", "status", "--json")...)
		var loops []crossloop.LoopSummary
		if code != 0 || json.Unmarshal([]byte(out), &loops) != nil || len(loops) != 3 {
			return fmt.Errorf("status: exit %d, %q, %s", code, out, errs)
		}
		states := map[string]string{}
		for _, l := range loops {
			states[l.Task] = fmt.Sprintf("%s/%d", l.Outcome, l.Iterations)
		}
		if states["Interrupted retry fix"] != "partial/0" || states["Interrupted at start"] != "partial/0" ||
			states["Fix the flaky retry"] != "failure/1" {
			return fmt.Errorf("recorded loops: %v", states)
		}
		return nil
	})
}
