package events

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	json "github.com/goccy/go-json"
)

// decodedTexts is what visitRaw's decoding walk meets: every string value
// of the decoded value with its field name.
func decodedTexts(field string, raw []byte) ([]rawText, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	var out []rawText
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			out = append(out, rawText{path, x})
		case []any:
			for i := range x {
				walk(fmt.Sprintf("%s.%d", path, i), x[i])
			}
		case map[string]any:
			for k := range x {
				walk(path+"."+k, x[k])
			}
		}
	}
	walk(field, v)
	return out, true
}

func sortTexts(ts []rawText) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].field != ts[j].field {
			return ts[i].field < ts[j].field
		}
		return ts[i].text < ts[j].text
	})
}

// TestRawTextsAsDecoded: the strings read from the bytes are those a
// decode into any holds, named alike; what cannot be read exactly so
// (invalid JSON, a repeated key) is refused.
func TestRawTextsAsDecoded(t *testing.T) {
	cases := []string{
		`{"a":"x","b":[1,"y",{"c":"z\n\"q\"\u00e9\ud83d\ude00"}],"d":null,"e":true,"f":-1.5e3,"g":{}}`,
		`["a",[],{},"b"]`, `"top"`, `12`, `{"k":"\u0000 \/ \\"}`, " { \"a\" : [ \"b\" , 0 ] } ",
		"{\"bad utf8\":\"\xff\xfe\"}",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(d int) any
	gen = func(d int) any {
		switch k := rng.IntN(6); {
		case k == 0 && d < 4:
			m := map[string]any{}
			for i := range rng.IntN(4) {
				m[fmt.Sprintf("k%d\"é%d", i, rng.IntN(9))] = gen(d + 1)
			}
			return m
		case k == 1 && d < 4:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = gen(d + 1)
			}
			return a
		case k == 2:
			return rng.Float64() * 1e6
		case k == 3:
			return nil
		default:
			rs := []rune("ab\"\\\n\t<>&é😀\u2028 ")
			b := make([]rune, rng.IntN(8))
			for i := range b {
				b[i] = rs[rng.IntN(len(rs))]
			}
			return string(b)
		}
	}
	for range 300 {
		raw, err := json.Marshal(gen(0))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(raw))
	}
	for _, c := range cases {
		got, ok := rawTexts("data.patterns.0", []byte(c), nil)
		want, wok := decodedTexts("data.patterns.0", []byte(c))
		if !ok || !wok {
			t.Fatalf("%q: read %v, decoded %v", c, ok, wok)
		}
		sortTexts(got)
		sortTexts(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q:\nread    %q\ndecoded %q", c, got, want)
		}
	}
	for _, c := range []string{`{"a":"x","a":"y"}`, `{"a":}`, `["a",]`, `{"a":"x"`, `"a" "b"`, `[01]`, `{"a":tru}`, "\"a\x01\"", `[1.]`, `{"a":"x",}`} {
		if _, ok := rawTexts("f", []byte(c), nil); ok {
			t.Errorf("%q: read, but a decoder does not read it alike", c)
		}
	}
}

// TestVisitRawRedactsAsBefore: a credential in a pattern's text is
// redacted (the pattern re-encoded) and found by the check.
func TestVisitRawRedactsAsBefore(t *testing.T) {
	secret := "AKIA" + "IOSFODNN7EXAMPLE"
	d := &RegistryImported{Patterns: []json.RawMessage{
		json.RawMessage(`{"id":"pat-error-a-001","fix":["use the key ` + secret + ` here"]}`),
		json.RawMessage(`{"id":"pat-error-a-002","fix":["nothing to hide"]}`)}}
	if err := checkSecrets(d); err == nil {
		t.Fatal("a credential in a pattern passes the check")
	}
	if !redactPayload(d) {
		t.Fatal("nothing redacted")
	}
	if err := checkSecrets(d); err != nil {
		t.Fatalf("redacted, still refused: %v", err)
	}
	if string(d.Patterns[1]) != `{"id":"pat-error-a-002","fix":["nothing to hide"]}` {
		t.Fatalf("a pattern without a credential changed: %s", d.Patterns[1])
	}
}
