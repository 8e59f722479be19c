package app

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/loredev/lore/events"
)

// EncodeReply writes what json.Marshal writes, for command replies with
// and without results of every JSON kind (HTML characters, escapes,
// nesting) and for any other reply.
func TestEncodeReplyIsMarshal(t *testing.T) {
	results := []any{nil, "<b>&</b>", 1.5e-7, []any{}, map[string]any{"a\u2028b": []int{1, 2}, "z": nil},
		struct {
			Text  string  `json:"text"`
			Score float64 `json:"score"`
		}{"line\n\"quoted\" <|im_start|>", 0.1 + 0.2}}
	appended := [][]events.Result{{}, {{ID: "e1", Seq: 7, Subject: "lore.events.x", Duplicate: true}}}
	n := 0
	for _, res := range results {
		for _, ap := range appended {
			for _, pending := range []bool{false, true} {
				r := CommandReply{Appended: ap, Projected: !pending, Pending: pending}
				if err := r.setResult(res); err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				got, err := EncodeReply(r)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("EncodeReply(%+v) = %s, json.Marshal gives %s", r, got, want)
				}
				n += len(r.Result)
			}
		}
	}
	if n == 0 {
		t.Fatal("no reply had a result")
	}
	for _, v := range []any{map[string]int{"x": 1}, []string{"<"}, nil} {
		got, _ := EncodeReply(v)
		if want, _ := json.Marshal(v); !bytes.Equal(got, want) {
			t.Fatalf("EncodeReply(%v) = %s, want %s", v, got, want)
		}
	}
}
