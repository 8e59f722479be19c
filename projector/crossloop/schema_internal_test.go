package crossloop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDecodeInstanceAsJSONSchema: the instance a document is validated as
// is the one jsonschema's own decoder reads (numbers as written), and a
// document it does not read is refused alike.
func TestDecodeInstanceAsJSONSchema(t *testing.T) {
	docs := [][]byte{SharedPatternsSchema(), []byte(`{"a":1e400,"b":-0.10,"c":12345678901234567890,"d":"\u00e9\ud83d\ude00\n"}`),
		[]byte(`[1, 2.50, "x", null, true, {"k": {}}]`), []byte(`{"a":"x","a":"y"}`), []byte(`"\ud800"`)}
	files, _ := filepath.Glob("../../cmd/lore/testdata/aiwg/shared/patterns/*.json")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, raw)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var gen func(d int) string
	gen = func(d int) string {
		switch k := rng.IntN(7); {
		case k == 0 && d < 4:
			var b bytes.Buffer
			b.WriteString("{")
			for i := range rng.IntN(4) {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"k%d": %s`, rng.IntN(5), gen(d+1))
			}
			return b.String() + "}"
		case k == 1 && d < 4:
			var b bytes.Buffer
			b.WriteString("[")
			for i := range rng.IntN(4) {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(gen(d + 1))
			}
			return b.String() + "]"
		case k == 2:
			return []string{"0", "-1", "1.5e3", "0.1000", "1E-7", "123456789012345678901234567890"}[rng.IntN(6)]
		case k == 3:
			return []string{"true", "false", "null"}[rng.IntN(3)]
		default:
			return []string{`"x"`, `"\u00e9 \"q\" \\ \/"`, `"<>&"`, `"😀"`, `""`}[rng.IntN(5)]
		}
	}
	for range 300 {
		docs = append(docs, []byte(gen(0)))
	}
	docs = append(docs, []byte(`{"a":}`), []byte(`{} {}`), []byte("{\"a\":\"\xff\"}"), []byte(`[1,]`))
	for _, d := range docs {
		got, gerr := decodeInstance(d)
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(d))
		if (gerr == nil) != (werr == nil) || (werr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%s: error %v, jsonschema's %v", d, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n%#v\njsonschema's\n%#v", d, got, want)
		}
	}
}
