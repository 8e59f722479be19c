package safety

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatesAreExact: a gate never changes a regex's verdict, on the
// corpus of lessons and on random mixes of the rules' fragments.
func TestGatesAreExact(t *testing.T) {
	var texts []string
	files, _ := filepath.Glob("../projector/knowledge/testdata/*_lessons.jsonl")
	if len(files) == 0 {
		t.Fatal("no corpus found")
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var c struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, c.Text)
		}
		fh.Close()
	}
	frags := []string{"curl ", "| sh", "| bash", "<(curl ", "$(wget ", "iex (iwr ", "rm -rf ", "/dev/sda", "dd if=x of=", "mkfs ",
		"chmod ", "777", "a+rwx", "umask 000", "deltree", "rmdir /s", "rd /s", "find / -delete", "f(){ f|f& };f", "%0|%0",
		"fork while fork", "you are now a ", "from now on, you are", "your new task", "new instructions:", "act as a ",
		"pretend to be", "roleplay as", "developer mode", "i am your creator", "system:", "<|im_start|>", "[inst]", "<<sys>>",
		"### instruction:", "admin override:", "reveal your system prompt", "ignore ", "previous ", "instructions", ". ", "\n", " "}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 4000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		texts = append(texts, b.String())
	}
	for _, raw := range texts {
		n := foldConfusables(Normalize(raw))
		for _, s := range []string{n, deleetText(n)} {
			for _, g := range allGates() {
				if got, want := g.MatchString(s), g.matches(s); got != want {
					t.Fatalf("gate %v of %s on %q: gated %v, regex %v", g.lits, g.re, s, got, want)
				}
			}
		}
	}
}
