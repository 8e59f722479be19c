package ralph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeLore records the calls it accepts; the first `down` calls fail as an
// unreachable lore would, and it remembers every key it saw.
type fakeLore struct {
	mu       sync.Mutex
	down     int
	accepted []string // "group.name key args"
	records  map[string]int
}

func (f *fakeLore) Call(_ context.Context, group, name string, args any, key string, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down > 0 {
		f.down--
		return fmt.Errorf("%w: no responders", ErrUnreachable)
	}
	if f.records == nil {
		f.records = map[string]int{}
	}
	b, _ := json.Marshal(args)
	if group == "loop" {
		f.records[key]++
		f.accepted = append(f.accepted, name+" "+key+" "+string(b))
	}
	if out != nil {
		return json.Unmarshal([]byte(`{"text":""}`), out)
	}
	return nil
}

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestRunRecordsInOrderOnceAndRedacted: with lore unreachable for the first
// calls (continue policy), every record still reaches lore, in order, each
// key once; secrets in the verify output never reach lore.
func TestRunRecordsInOrderOnceAndRedacted(t *testing.T) {
	dir := t.TempDir()
	// verify fails twice, printing a secret, then passes.
	writeScript(t, dir, "verify.sh", `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
if [ $n -ge 3 ]; then echo '--- PASS: TestA (0.00s)'; echo 'ok  	x	0.1s'; exit 0; fi
echo '--- FAIL: TestA (0.00s)'
echo '    a_test.go:9: login with api_key=sk-live-0123456789abcdef refused'
echo 'FAIL	x	0.1s'
exit 1
`)
	lore := &fakeLore{down: 4} // the start call fails all its retries: it waits in the queue
	redact := func(s string) string { return strings.ReplaceAll(s, "sk-live-0123456789abcdef", "[REDACTED]") }
	res, err := Run(context.Background(), Config{Task: "Fix login", Verify: "sh verify.sh", Agent: []string{"true"},
		MaxIterations: 5, OnUnreachable: UnreachableContinue, Dir: dir, Redact: redact, Inject: true}, lore)
	if err != nil || res.Outcome != "success" || res.Iterations != 3 || res.Unsent != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var names []string
	for _, a := range lore.accepted {
		names = append(names, strings.SplitN(a, " ", 2)[0])
		if strings.Contains(a, "sk-live") {
			t.Errorf("a secret reached lore: %s", a)
		}
	}
	if got := strings.Join(names, ","); got != "start,iterate,iterate,iterate,complete" {
		t.Errorf("records in order %s", got)
	}
	for k, n := range lore.records {
		if n != 1 {
			t.Errorf("key %s recorded %d times", k, n)
		}
	}
	if !strings.Contains(lore.accepted[1], `"error_message":"TestA: login with api_key=[REDACTED] refused"`) ||
		!strings.Contains(lore.accepted[1], `"location":"a_test.go:9"`) {
		t.Errorf("first iteration recorded as %s", lore.accepted[1])
	}
	if !strings.Contains(lore.accepted[3], `"tests_passed":1`) || !strings.Contains(lore.accepted[3], `"tests_failed":0`) {
		t.Errorf("green iteration recorded as %s", lore.accepted[3])
	}
	for _, i := range []int{1, 3} {
		if !strings.Contains(lore.accepted[i], `"duration_ms":`) {
			t.Errorf("iteration recorded without its duration: %s", lore.accepted[i])
		}
	}
}

// TestRunFailPolicyRefusesToStart: with the fail policy, an unreachable lore
// starts nothing (the agent never runs).
func TestRunFailPolicyRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	lore := &fakeLore{down: 1 << 30}
	_, err := Run(context.Background(), Config{Task: "t", Verify: "true", Agent: []string{"touch", "ran"},
		OnUnreachable: UnreachableFail, Dir: dir}, lore)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the agent ran though lore was unreachable")
	}
}

// TestRunRecordsTheIterationDiff: in a git repository, each iteration's
// fix is the change made during it, not the tree's whole change.
func TestRunRecordsTheIterationDiff(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}} {
		if _, err := git(context.Background(), dir, args...); err != nil {
			t.Skip("git unavailable")
		}
	}
	for _, f := range []string{"a.go", "b.go"} {
		writeScript(t, dir, f, "package x\n")
	}
	if _, err := git(context.Background(), dir, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(context.Background(), dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"); err != nil {
		t.Fatal(err)
	}
	// The agent edits a.go first, then b.go; verify passes once b.go is edited.
	writeScript(t, dir, "agent.sh", `if grep -q edit a.go; then echo '// edit' >> b.go; else echo '// edit' >> a.go; fi`)
	lore := &fakeLore{}
	res, err := Run(context.Background(), Config{Task: "t", Verify: "grep -q edit b.go", Agent: []string{"sh", "agent.sh"},
		Dir: dir}, lore)
	if err != nil || res.Iterations != 2 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(lore.accepted[1], `"fix_description":"edit a.go (+1)"`) ||
		!strings.Contains(lore.accepted[2], `"fix_description":"edit b.go (+1)"`) ||
		!strings.Contains(lore.accepted[2], `"files_changed":["b.go"]`) {
		t.Errorf("iterations recorded as\n%s\n%s", lore.accepted[1], lore.accepted[2])
	}
}

// interruptingLore is lore whose reply to one record is lost to a Ctrl-C:
// it accepts the first record named at, then the run is interrupted while
// the call still waits for its reply, and the call fails as the CLI's
// client reports a call cut short. On a busy machine lore can have
// recorded (and folded) a record before its reply reaches the driver; this
// fixes that ordering.
type interruptingLore struct {
	fakeLore
	at     string
	cancel context.CancelFunc
	once   sync.Once
}

func (l *interruptingLore) Call(ctx context.Context, group, name string, args any, key string, out any) error {
	if err := l.fakeLore.Call(ctx, group, name, args, key, out); err != nil {
		return err
	}
	hit := false
	if group == "loop" && name == l.at {
		l.once.Do(func() { hit = true })
	}
	if !hit {
		return nil
	}
	l.cancel()
	<-ctx.Done()
	return fmt.Errorf("%w: %v", ErrUnreachable, ctx.Err())
}

// TestRunInterruptedWhileRecording: a Ctrl-C that lands while a record is
// being sent (the start, or an iteration after verify's verdict) ends the
// run as interrupted under either unreachable policy: the loop is recorded
// as partial, the interrupted record is sent again under its key, and the
// completion is recorded once, last.
func TestRunInterruptedWhileRecording(t *testing.T) {
	for _, c := range []struct {
		at, policy, verify string
		iterations         int
	}{
		{"start", UnreachableFail, "false", 0},
		{"start", UnreachableContinue, "false", 0},
		{"iterate", UnreachableFail, "false", 1},
		{"iterate", UnreachableContinue, "false", 1},
		{"iterate", UnreachableContinue, "true", 1},
	} {
		name := c.at + "/" + c.policy + "/verify-" + c.verify
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lore := &interruptingLore{at: c.at, cancel: cancel}
			res, err := Run(ctx, Config{Task: "t", Verify: c.verify, Agent: []string{"touch", "ran"}, MaxIterations: 1,
				OnUnreachable: c.policy, Dir: dir}, lore)
			if !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNotPassed) {
				t.Errorf("err = %v, want ErrInterrupted alone", err)
			}
			if res.Outcome != "partial" || res.Iterations != c.iterations || res.Unsent != 0 {
				t.Errorf("Run = %+v, want partial after %d iteration(s), nothing unsent", res, c.iterations)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); (err == nil) != (c.iterations > 0) {
				t.Errorf("the agent ran: %v, want %v", err == nil, c.iterations > 0)
			}
			var names []string
			for _, a := range lore.accepted {
				names = append(names, strings.SplitN(a, " ", 2)[0])
			}
			want := "start,start,complete"
			if c.at == "iterate" {
				want = "start,iterate,iterate,complete"
			}
			if got := strings.Join(names, ","); got != want {
				t.Fatalf("records in order %s, want %s", got, want)
			}
			last := lore.accepted[len(lore.accepted)-1]
			if lore.records[res.LoopID+"-complete"] != 1 || !strings.Contains(last, `"outcome":"partial"`) ||
				!strings.Contains(last, fmt.Sprintf(`"iterations":%d`, c.iterations)) {
				t.Errorf("completion recorded as %s (%d time(s))", last, lore.records[res.LoopID+"-complete"])
			}
		})
	}
}
