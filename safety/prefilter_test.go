package safety_test

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/loredev/lore/safety"
)

// exactnessTexts are texts near every rule's shape: each rule keyword in
// lower, upper and title case, glued to separators and values of the
// shapes the rules look for (keys, hex, base64, URLs, placeholders), in
// prose, plus the bench's workload texts and the lesson corpora.
func exactnessTexts(t *testing.T) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	rnd := func(alpha string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alpha[rng.IntN(len(alpha))])
		}
		return b.String()
	}
	values := func() []string {
		return []string{
			rnd(b64, 40), rnd("0123456789abcdef", 32), rnd("0123456789ABCDEF", 32), rnd(b64[:62], 20), rnd(b64[:62], 64),
			rnd("abcdefghijklmnopqrstuvwxyz", 12), "changeme", "<your-key>", "hunter2!", rnd(b64[:62]+"_-", 36),
			"-" + rnd(b64[:62], 24), "_" + rnd(b64[:62], 30), "v1_" + rnd("0123456789abcdef", 64),
		}
	}
	seps := []string{"", "=", " = ", ": ", ":=", " => ", " is ", " set to ", " \"", "'", " ", "\t", "-", "_", "://u:", "://", "@", "."}
	var out []string
	for _, k := range safety.RuleKeywords() {
		for _, kw := range []string{k, strings.ToUpper(k), strings.ToUpper(k[:1]) + k[1:]} {
			for _, sep := range seps {
				vs := values()
				for range 2 { // two values, each in one of three contexts
					v := vs[rng.IntN(len(vs))]
					out = append(out, []string{kw + sep + v, "the " + kw + sep + v + " here", "x" + kw + sep + v + "@host.io/p"}[rng.IntN(3)])
				}
			}
		}
	}
	// Non-ASCII texts take the unfiltered path; they must agree too.
	out = append(out, "ſecret="+rnd(b64, 40), "\u212Aey: "+rnd(b64, 40), "pa\u017F\u017Fword=Sup3rS3cret!", "tökén = "+rnd(b64, 40))
	out = append(out, workloadTexts(t, 2000)...)
	for _, f := range []string{"harmful_lessons.jsonl", "benign_lessons.jsonl"} {
		out = append(out, corpusLessons(t, "../projector/knowledge/testdata/"+f)...)
	}
	return out
}

func corpusLessons(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open corpus: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, c.Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrefilterIsExact: the rules' derived prefilters change no answer:
// Secrets equals the unfiltered scan on every text, credentials or not.
func TestPrefilterIsExact(t *testing.T) {
	texts := exactnessTexts(t)
	kinds := map[string]bool{}
	for _, s := range texts {
		got, want := safety.Secrets(s), safety.SecretsUnfiltered(s)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Secrets(%q) = %v, unfiltered %v", s, got, want)
		}
		for _, f := range want {
			kinds[f.Kind] = true
		}
	}
	// The texts exercise the rules: credentials of many kinds are found.
	if len(kinds) < 30 {
		t.Fatalf("only %d kinds of credential found in %d texts: the texts do not exercise the rules", len(kinds), len(texts))
	}
}

// FuzzPrefilterIsExact: as TestPrefilterIsExact, on any text.
func FuzzPrefilterIsExact(f *testing.F) {
	for _, s := range []string{
		"token: " + strings.Repeat("aB3", 14), "SK" + strings.Repeat("0f", 16), "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"postgres://app:S3cr3t@db:5432/x", "password is hunter22", "ſecret=" + strings.Repeat("Zz9", 14), "auth\t" + strings.Repeat("q1W", 7),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := safety.Secrets(s), safety.SecretsUnfiltered(s); !reflect.DeepEqual(got, want) {
			t.Errorf("Secrets(%q) = %v, unfiltered %v", s, got, want)
		}
	})
}
